"""The one validator of task settings: the service, the organizer pages, the API, the
``create_task`` command and the admin all refuse and accept the same settings through it.

:func:`task_settings_problems` checks a task as it would be saved (its fields, and the design its
settings configure, built by ``evaluation.core.task_design``); :func:`check_task_settings` raises
them as one :class:`TaskSettingsError`."""

from __future__ import annotations

from datetime import datetime

from django.core.exceptions import ValidationError
from django.utils import timezone

from evaluation.core.task_design import design_problem
from site_platform.errors import InvalidFields

from .. import page_text
from ..display_templates import validate_display_template
from ..email_domains import invalid_domains
from ..kinds import kind_for
from ..models import Task

# The task page's Markdown (leaderboard.page_text).
PAGE_TEXT_FIELDS = ("description", "rules", "terms")
# Slugs that name pages, not tasks (/tasks/new/ creates one).
RESERVED_SLUGS = frozenset({"new"})
PHASE_DATE_FIELDS = ("submissions_open_at", "submissions_close_at", "reveal_at")


class TaskSettingsError(InvalidFields):
    """Task settings that cannot be accepted; ``field_errors`` maps a field to its messages."""


def check_task_settings(task: Task, *, validate_unique: bool = True) -> None:
    """Raise :class:`TaskSettingsError` with every problem of ``task``'s settings, if any."""
    errors = task_settings_problems(task, validate_unique=validate_unique)
    if errors:
        summary = "; ".join(f"{name}: {' '.join(messages)}" for name, messages in errors.items())
        raise TaskSettingsError(f"invalid task settings ({summary})", errors)


def task_settings_problems(task: Task, *, validate_unique: bool = True) -> dict[str, list[str]]:
    """What is wrong with ``task``'s settings, by field (empty: nothing).

    The model's own checks (ranges, choices, lookalike slugs; uniqueness unless
    ``validate_unique`` is false), then the reserved slugs, email domains, measures for the
    task's kind, page text lengths, display template and phase dates, and last the design the
    settings configure (checked only once everything else is right, its one exception being an
    open task's design name, always checked)."""
    errors: dict[str, list[str]] = {}
    try:
        task.full_clean(validate_unique=validate_unique)
    except ValidationError as exc:
        errors.update(exc.message_dict)
    for name, messages in _value_problems(task):
        errors.setdefault(name, []).extend(messages)
    for name, messages in phase_date_problems(task).items():
        if name not in errors:  # unparseable: full_clean has said so
            errors[name] = messages
    settings = task.design_settings()
    # An open task's design name is checked whatever else is wrong; the design as a whole only
    # once the settings it is built from are right.
    name_only = kind_for(task).design_name_checked_alone(task)
    if not errors or name_only:
        problem = design_problem(settings)
        if problem is not None:
            where, message = problem
            errors.setdefault(where, []).append(message)
    return errors


def _value_problems(task: Task) -> list[tuple[str, list[str]]]:
    """The checks the model's fields do not make, in order, as ``(field, messages)``."""
    found = []
    if task.slug in RESERVED_SLUGS:
        found.append(("slug", [f"{task.slug!r} is reserved: choose another slug"]))
    if not isinstance(task.design_options, dict):
        found.append(("design_options", ["must be a JSON object"]))
    for name in ("allowed_email_domains", "blocked_email_domains"):
        bad = invalid_domains(getattr(task, name) or "")
        if bad:
            found.append((name, [f"not a domain name: {', '.join(bad[:5])}"]))
    found.append(("measures", _measure_problems(task)))
    for name in PAGE_TEXT_FIELDS:
        if len(getattr(task, name) or "") > page_text.MAX_CHARS:
            found.append(
                (name, [f"at most {page_text.MAX_CHARS:,} characters (link to longer documents)"])
            )
    found.append(("display_template", validate_display_template(task.display_template)))
    return [(name, messages) for name, messages in found if messages]


def _measure_problems(task: Task) -> list[str]:
    measures = task.measures
    if not isinstance(measures, list) or not all(isinstance(m, str) for m in measures):
        return ["must be a list of measure names"]
    kind = kind_for(task)
    unknown = [m for m in measures if m not in kind.measures]
    if unknown:
        allowed = ", ".join(kind.measures)
        return [f"{', '.join(map(repr, unknown))}: {kind.called} shows only {allowed}"]
    if not measures:
        return ["pick at least one measure"]
    if len(set(measures)) != len(measures):
        return ["names a measure twice"]
    return []


def phase_date_problems(task: Task) -> dict[str, list[str]]:
    """What is wrong with the task's dates, by field: each must say its time zone, the window
    must close after it opens, and the reveal may not come before the close."""
    problems: dict[str, list[str]] = {}
    dates = {name: getattr(task, name) for name in PHASE_DATE_FIELDS}
    for name, value in dates.items():
        if value is not None and not isinstance(value, datetime):
            problems[name] = ["must be a date and time"]
        elif value is not None and timezone.is_naive(value):
            problems[name] = ["must say its time zone (e.g. 2026-12-01T12:00:00Z)"]
    if problems:
        return problems
    opens, closes, reveal = (dates[name] for name in PHASE_DATE_FIELDS)
    if opens is not None and closes is not None and closes <= opens:
        problems["submissions_close_at"] = ["must be after submissions_open_at"]
    if reveal is not None and closes is not None and reveal < closes:
        problems["reveal_at"] = ["may not be before submissions_close_at"]
    return problems
