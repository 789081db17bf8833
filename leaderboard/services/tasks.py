"""Writes of tasks: create and configure tasks, open and close them, add organizers.

A task starts as a draft; it opens (from draft, or again once closed) only when its readiness
checklist (its kind's, ``leaderboard.kinds.TaskKind.readiness``) has nothing missing."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from django.db import IntegrityError, transaction

from evaluation.core.task_design import MAX_JUDGMENTS_PER_ITEM

from .. import page_text, task_settings
from ..kinds import kind_for
from ..models import Run, Task
from ..selectors import Readiness
from .task_validation import PAGE_TEXT_FIELDS, TaskSettingsError, check_task_settings

__all__ = [
    "FROZEN_ONCE_RUNS",
    "MAX_JUDGMENTS_PER_ITEM",
    "TaskNotReady",
    "TaskSettingsError",
    "add_organizer",
    "create_task",
    "mark_late_runs",
    "set_task_state",
    "update_task",
]

if TYPE_CHECKING:
    from django.contrib.auth.models import User

# Settings an organizer may set (the settings table's); the engine's bookkeeping is not one.
TASK_FIELDS = frozenset(task_settings.names())
# Changing these once runs exist would change what earlier estimates meant (f_beta: what the
# stored "fbeta" estimates are): the settings table marks them.
FROZEN_ONCE_RUNS = task_settings.FROZEN_ONCE_RUNS


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
    check_task_settings(task)
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
        check_task_settings(task)
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
    readiness = kind_for(task).readiness(task)
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
