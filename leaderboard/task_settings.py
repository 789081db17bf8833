"""A task's settings, described once: where each is set (the new-task page, a section of the
organize pages, the API, the admin), its group, the kinds of task it applies to, its widget, and
whether it freezes once runs exist. The page forms' field lists, the API's task fields and the
admin's fieldsets are derived from :data:`TASK_SETTINGS`; what a value may be is the model's and
the validator's (``leaderboard.services.task_validation``).

Adding a setting: a field on ``Task`` (with its help text and validators; a migration), a row
here, and a check in the validator if the model's validators do not say everything.
"""

from __future__ import annotations

from dataclasses import dataclass

from .models import Task

ALL_KINDS = (Task.Kind.OPEN.value, Task.Kind.CLOSED_POOL.value)


@dataclass(frozen=True)
class TaskSetting:
    """One setting of a task (a field of ``Task``).

    ``section``: the organize page section that edits it (``settings``, ``phases``,
    ``page_text``; empty: none); ``on_create_page``: also set on the new-task page; ``api``:
    ``public`` (anyone who sees the task reads it, its organizers write it), ``organizers``
    (only they read and write it) or empty (not in the API); the admin's task form has every
    setting. ``frozen_once_runs``: cannot change once the task has runs (what earlier estimates
    meant would change); ``rows``: a text area's height on the pages; ``help``: the pages' help
    text where the model's is not enough."""

    name: str
    group: str
    kinds: tuple[str, ...] = ALL_KINDS
    section: str = ""
    on_create_page: bool = False
    api: str = "public"
    frozen_once_runs: bool = False
    rows: int | None = None
    help: str = ""


S = TaskSetting
ANNOTATORS_SEE, PRECISION = "What annotators see", "Precision and labels"
TASK_SETTINGS: tuple[TaskSetting, ...] = (
    S("slug", "Task", on_create_page=True),
    S("title", ANNOTATORS_SEE, section="settings", on_create_page=True),
    S("kind", "Task", on_create_page=True, frozen_once_runs=True),
    S("measures", "Task", on_create_page=True),
    S("description", "Task page", section="page_text", on_create_page=True, rows=7),
    S("rules", "Task page", section="page_text", rows=7),
    S("terms", "Task page", section="page_text", rows=7),
    S("data_access", "Task page", section="page_text"),
    S("question", ANNOTATORS_SEE, section="settings", on_create_page=True, rows=3),
    S("display_template", ANNOTATORS_SEE, section="settings", on_create_page=True, rows=3),
    S("state", "State", section="settings"),
    S("target_half_width", PRECISION, section="settings", on_create_page=True),
    S("confidence", PRECISION, section="settings", on_create_page=True),
    S("label_budget", PRECISION, section="settings", on_create_page=True),
    S("judgments_per_item", PRECISION, section="settings", on_create_page=True),
    S(
        "design",
        PRECISION,
        section="settings",
        frozen_once_runs=True,
        help="How items are drawn for verification and runs estimated (docs/STATISTICS.md): an "
        "open task's default design; a closed pool's adaptive one (default names it too).",
    ),
    S(
        "design_options",
        PRECISION,
        section="settings",
        api="organizers",
        frozen_once_runs=True,
        rows=2,
        help='The design\'s own options as a JSON object, e.g. {"min_batch": 32} (an open task) '
        'or {"round_size": 50} (a closed pool); {}: its defaults (docs/STATISTICS.md lists them).',
    ),
    S(
        "f_beta",
        PRECISION,
        kinds=(Task.Kind.CLOSED_POOL.value,),
        section="settings",
        frozen_once_runs=True,
    ),
    S("annotator_daily_cap", "Annotators", section="settings", api="organizers"),
    S("gold_rate", "Annotators", section="settings", api="organizers"),
    S("gold_min_accuracy", "Annotators", section="settings", api="organizers"),
    S("gold_min_answers", "Annotators", section="settings", api="organizers"),
    S("max_runs_per_team", "Runs", section="settings", on_create_page=True),
    S("max_runs_per_team_per_day", "Runs", section="settings", on_create_page=True),
    S("max_upload_bytes", "Runs", section="settings"),
    S("max_predictions_per_run", "Runs", section="settings"),
    S("submissions_open_at", "Phases", section="phases"),
    S("submissions_close_at", "Phases", section="phases"),
    S("accept_late_runs", "Phases", section="phases"),
    S("reveal_at", "Phases", section="phases"),
    S("team_approval", "Teams", section="settings"),
    S("annotators_may_compete", "Teams", section="settings"),
    S("allowed_email_domains", "Teams", section="settings", rows=2),
    S("blocked_email_domains", "Teams", section="settings", rows=2),
    # Held and published by the board's buttons on the organize page; in the API by its own
    # endpoints.
    S("board_held", "Publication", api=""),
)
BY_NAME = {setting.name: setting for setting in TASK_SETTINGS}


def names(*sections: str, create: bool = False, api: str = "") -> tuple[str, ...]:
    """The settings' names, in the table's order (all of them: the admin's form), or those of
    the organize page ``sections``, of the new-task page (``create``) or of the API (``api``:
    ``public`` or ``organizers``)."""
    return tuple(
        s.name
        for s in TASK_SETTINGS
        if (not sections or s.section in sections)
        and (not create or s.on_create_page)
        and (not api or s.api == api)
    )


def groups(setting_names: tuple[str, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``setting_names`` in their groups, each group where its first setting is in the table."""
    chosen = [BY_NAME[name] for name in setting_names]
    order = [s.group for s in TASK_SETTINGS if s in chosen]
    legends = list(dict.fromkeys(order))
    return tuple(
        (legend, tuple(s.name for s in TASK_SETTINGS if s in chosen and s.group == legend))
        for legend in legends
    )


FROZEN_ONCE_RUNS = frozenset(s.name for s in TASK_SETTINGS if s.frozen_once_runs)
