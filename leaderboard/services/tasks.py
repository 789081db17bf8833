"""Writes of tasks: create and configure tasks, open and close them, add organizers.

A task starts as a draft; it opens (from draft, or again once closed) only when its readiness
checklist (``leaderboard.selectors.task_readiness``) has nothing missing."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from evaluation.core.closed_pool import CLOSED_POOL_MEASURES, PoolDesign, make_pool_design
from evaluation.core.designs import SERVICE_DESIGNS, ServiceDesign, make_service_design
from evaluation.core.measures import OPEN_MEASURES

from .. import page_text
from ..display_templates import validate_display_template
from ..email_domains import invalid_domains
from ..errors import InvalidFields
from ..models import Run, Task
from ..selectors import Readiness, task_readiness

if TYPE_CHECKING:
    from django.contrib.auth.models import User

# Settings an organizer may set; the engine's bookkeeping fields are not editable.
TASK_FIELDS = frozenset(
    field.name
    for field in Task._meta.concrete_fields
    if field.editable and not field.primary_key and field.name not in ("state", "created_at")
) | {"state"}
# Changing these once runs exist would change what earlier estimates meant (f_beta: what the
# stored "fbeta" estimates are).
FROZEN_ONCE_RUNS = frozenset({"design", "design_options", "kind", "f_beta"})
# The closed-pool design a task's ``design`` names ("default": the adaptive one, the only one
# whose sampling record the pipeline stores).
POOL_DESIGN_NAMES = {"default": "adaptive", "adaptive": "adaptive"}


class TaskSettingsError(InvalidFields):
    """Task settings that cannot be accepted; ``field_errors`` maps a field to its messages."""


class TaskNotReady(TaskSettingsError):
    """Opening a task whose checklist has something missing (409): ``problems`` are the missing
    checks, ``readiness`` the whole checklist (also in the error body)."""

    code = "task_not_ready"
    http_status = 409

    def __init__(self, task: Task, readiness: Readiness, *, creating: bool = False):
        missing = [f"{check.label}: {check.state}" for check in readiness.missing]
        outcome = (
            "nothing was created: create it as a draft, and open it once its checklist is complete"
            if creating
            else "nothing was changed"
        )
        super().__init__(
            f"task {task.slug!r} is not ready to open ({'; '.join(missing)}); {outcome}",
            {"state": [f"not ready to open: {'; '.join(missing)}"]},
        )
        self.problems = [{"line": None, "message": line} for line in missing]
        self.total = len(missing)
        self.extra["readiness"] = readiness.as_dict()
        self.readiness = readiness


def _check_names(fields: dict[str, Any]) -> None:
    unknown = sorted(set(fields) - TASK_FIELDS)
    if unknown:
        raise TaskSettingsError(
            f"unknown or read-only task setting{'s' if len(unknown) > 1 else ''}: "
            f"{', '.join(unknown)}",
            {name: ["not a task setting that can be set"] for name in unknown},
        )


# The task page's Markdown (leaderboard.page_text).
PAGE_TEXT_FIELDS = ("description", "rules", "terms")
# Slugs that name pages, not tasks (/tasks/new/ creates one).
RESERVED_SLUGS = frozenset({"new"})


# Most judgments the planner may ask of one item (each by a different annotator).
MAX_JUDGMENTS_PER_ITEM = 5


def task_design(task: Task, *, annotators: int = MAX_JUDGMENTS_PER_ITEM) -> ServiceDesign:
    """The engine design ``task`` configures, for ``annotators`` annotators at work on it.

    The ``default`` design asks ``task.judgments_per_item`` judgments of each new item and may
    ask further looks up to one judgment per annotator (at most ``MAX_JUDGMENTS_PER_ITEM``);
    ``design_options`` override both. Raises ``ValueError`` or ``TypeError`` for settings the
    engine refuses.
    """
    options = dict(task.design_options or {})
    if task.design == "default":
        first = options.setdefault("judgments_per_item", task.judgments_per_item)
        options.setdefault(
            "max_judgments_per_item", max(first, min(MAX_JUDGMENTS_PER_ITEM, annotators))
        )
    return make_service_design(
        task.design,
        target_half_width=task.target_half_width,
        confidence=task.confidence,
        budget=task.label_budget,
        **options,
    )


def pool_design(task: Task) -> PoolDesign:
    """The closed-pool design ``task`` configures: its targets are the task's measures.

    Raises ``ValueError`` or ``TypeError`` for settings the engine refuses.
    """
    try:
        name = POOL_DESIGN_NAMES[task.design]
    except KeyError:
        raise ValueError(
            f"closed pools offer the designs {', '.join(sorted(POOL_DESIGN_NAMES))}, "
            f"not {task.design!r}"
        ) from None
    options = {
        "targets": tuple(task.measures),
        "beta": float(task.f_beta),
        **(task.design_options or {}),
    }
    return make_pool_design(
        name, confidence=task.confidence, target_half_width=task.target_half_width, **options
    )


def _measure_problems(task: Task) -> list[str]:
    measures = task.measures
    if not isinstance(measures, list) or not all(isinstance(m, str) for m in measures):
        return ["must be a list of measure names"]
    allowed = CLOSED_POOL_MEASURES if task.kind == Task.Kind.CLOSED_POOL else OPEN_MEASURES
    unknown = [m for m in measures if m not in allowed]
    if unknown:
        what = "a closed pool" if task.kind == Task.Kind.CLOSED_POOL else "an open task"
        return [f"{', '.join(map(repr, unknown))}: {what} shows only {', '.join(allowed)}"]
    if not measures:
        return ["pick at least one measure"]
    if len(set(measures)) != len(measures):
        return ["names a measure twice"]
    return []


def _validate_pool_design(task: Task, errors: dict[str, list[str]]) -> None:
    if errors:
        return
    try:
        pool_design(task)
    except (TypeError, ValueError) as exc:
        where = "design_options" if task.design_options else "design"
        errors.setdefault(where, []).append(str(exc))


def _validate(task: Task, *, exclude_unique: bool = False) -> None:
    errors: dict[str, list[str]] = {}
    try:
        task.full_clean(validate_unique=not exclude_unique)
    except ValidationError as exc:
        errors.update(exc.message_dict)
    if task.slug in RESERVED_SLUGS:
        errors.setdefault("slug", []).append(f"{task.slug!r} is reserved: choose another slug")
    if not isinstance(task.design_options, dict):
        errors.setdefault("design_options", []).append("must be a JSON object")
    for field in ("allowed_email_domains", "blocked_email_domains"):
        bad = invalid_domains(getattr(task, field) or "")
        if bad:
            errors.setdefault(field, []).append(f"not a domain name: {', '.join(bad[:5])}")
    measure_problems = _measure_problems(task)
    if measure_problems:
        errors.setdefault("measures", []).extend(measure_problems)
    for field in PAGE_TEXT_FIELDS:
        if len(getattr(task, field) or "") > page_text.MAX_CHARS:
            errors.setdefault(field, []).append(
                f"at most {page_text.MAX_CHARS:,} characters (link to longer documents)"
            )
    display_problems = validate_display_template(task.display_template)
    if display_problems:
        errors.setdefault("display_template", []).extend(display_problems)
    for name, messages in phase_date_problems(task).items():
        if name not in errors:  # unparseable: full_clean has said so
            errors[name] = messages
    if task.kind == Task.Kind.CLOSED_POOL:
        _validate_pool_design(task, errors)
    elif task.design not in SERVICE_DESIGNS:
        try:
            make_service_design(task.design)
        except ValueError as exc:
            errors.setdefault("design", []).append(str(exc))
    elif "design_options" not in errors and not errors:
        try:
            task_design(task)
        except (TypeError, ValueError) as exc:
            where = "design_options" if task.design_options else "design"
            errors.setdefault(where, []).append(str(exc))
    if errors:
        summary = "; ".join(f"{name}: {' '.join(messages)}" for name, messages in errors.items())
        raise TaskSettingsError(f"invalid task settings ({summary})", errors)


PHASE_DATE_FIELDS = ("submissions_open_at", "submissions_close_at", "reveal_at")


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


def create_task(*, slug: str, title: str, organizers: Iterable[User] = (), **fields: Any) -> Task:
    """Create a task (validated like a form); ``organizers`` (users) may manage it.

    It starts as a draft unless ``state`` says otherwise; created open, it must be ready
    (:class:`TaskNotReady` otherwise: a new task has no data yet, so in practice it opens later,
    through :func:`set_task_state`)."""
    _check_names(fields)
    fields.setdefault("state", Task.State.DRAFT)
    if not isinstance(fields.get("design_options", {}), dict):
        raise TaskSettingsError(
            "design_options must be an object", {"design_options": ["must be a JSON object"]}
        )
    task = Task(slug=slug, title=title, **fields)
    _validate(task)
    try:
        with transaction.atomic():
            task.save()
            task.organizers.set(list(organizers))
            if task.state == Task.State.OPEN:
                _check_ready(task, creating=True)
    except IntegrityError:
        raise TaskSettingsError(
            f"a task called {slug!r} already exists",
            {"slug": ["a task with this slug already exists"]},
        ) from None
    page_text.warm(*(getattr(task, name) for name in PAGE_TEXT_FIELDS))
    return task


def update_task(*, task: Task, **fields: Any) -> Task:
    """Change some settings of ``task`` (validated as a whole before anything is saved)."""
    _check_names(fields)
    if "state" in fields:
        state = fields.pop("state")
        set_task_state(task=task, state=state, _fields=fields)
        return task
    return _save(task, fields)


def _save(task: Task, fields: dict[str, Any]) -> Task:
    if not fields:
        return task
    frozen = sorted(
        name for name in FROZEN_ONCE_RUNS & set(fields) if getattr(task, name) != fields[name]
    )
    if frozen and task.runs.exists():
        raise TaskSettingsError(
            f"{', '.join(frozen)} cannot change once runs have been submitted",
            {name: ["cannot change once runs have been submitted"] for name in frozen},
        )
    if "kind" in fields and fields["kind"] != task.kind and task.n_items:
        raise TaskSettingsError(
            "kind cannot change once the task has items",
            {"kind": ["cannot change once the task has items"]},
        )
    original = {name: getattr(task, name) for name in fields}
    for name, value in fields.items():
        setattr(task, name, value)
    try:
        _validate(task)
        if fields.get("state") == Task.State.OPEN and original["state"] != Task.State.OPEN:
            _check_ready(task)  # with the settings sent alongside (a gold rate of 0, say)
    except TaskSettingsError:
        for name, value in original.items():
            setattr(task, name, value)
        raise
    with transaction.atomic():
        task.save(update_fields=list(fields))
        if "submissions_close_at" in fields:
            mark_late_runs(task)
    page_text.warm(*(getattr(task, name) for name in PAGE_TEXT_FIELDS if name in fields))
    return task


def mark_late_runs(task: Task) -> None:
    """Keep every run's ``after_deadline`` in step with the task's (possibly moved) deadline."""
    close = task.submissions_close_at
    runs = Run.objects.filter(task=task)
    if close is None:
        runs.filter(after_deadline=True).update(after_deadline=False)
        return
    runs.filter(created_at__gte=close, after_deadline=False).update(after_deadline=True)
    runs.filter(created_at__lt=close, after_deadline=True).update(after_deadline=False)


def _check_ready(task: Task, *, creating: bool = False) -> None:
    readiness = task_readiness(task)
    if not readiness.ready:
        raise TaskNotReady(task, readiness, creating=creating)


def set_task_state(*, task: Task, state: str, _fields: dict[str, Any] | None = None) -> Task:
    """Open, close or re-open a task; back to draft only while it has no runs.

    Opening (a draft, or a closed task again) is refused with :class:`TaskNotReady` unless the
    task's checklist is complete; an open task stays open whatever its checklist says."""
    if state not in Task.State.values:
        raise TaskSettingsError(
            f"unknown state {state!r}; choose one of {', '.join(Task.State.values)}",
            {"state": [f"not one of {', '.join(Task.State.values)}"]},
        )
    if state == Task.State.DRAFT and task.state != Task.State.DRAFT and task.runs.exists():
        raise TaskSettingsError(
            "a task with runs cannot go back to draft",
            {"state": ["the task has runs; close it instead"]},
        )
    return _save(task, {**(_fields or {}), "state": state})


def add_organizer(*, task: Task, user: User) -> None:
    task.organizers.add(user)
