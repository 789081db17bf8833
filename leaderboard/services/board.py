"""Writes of the public board: hold it, publish snapshots (by hand, or at a task's dates through
the phase job), and edit a run's public details.

Snapshots are immutable once written; the only change a snapshot ever sees is going from held
(``published=False``) to published. The public board shows the latest published snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from site_platform.errors import InvalidFields

from .. import phases
from ..models import LeaderboardSnapshot, Run, Task
from .notifications import release_held_notifications

if TYPE_CHECKING:
    from django.db.models import Field

RUN_DETAIL_FIELDS = ("name", "description", "link")


class RunDetailsError(InvalidFields):
    """Run details that cannot be accepted; ``field_errors`` maps a field to its messages."""


def hold_board(*, task: Task) -> Task:
    """Hold the public board: snapshots written from now on wait until :func:`publish_board`.

    Dated changes already due are applied first, so a reveal the phase job has not applied yet
    cannot release this hold later.
    """
    now = timezone.now()
    with transaction.atomic():
        locked = Task.objects.select_for_update().get(pk=task.pk)
        _apply_due(locked, now)
        Task.objects.filter(pk=task.pk).update(board_held=True)
    _copy_phase_fields(locked, task)
    task.board_held = True
    return task


def publish_board(*, task: Task, release_hold: bool = True) -> LeaderboardSnapshot | None:
    """Publish every held snapshot of ``task`` (the latest becomes the public board).

    With ``release_hold`` (the default) later snapshots are published as they are written;
    without it the board stays held and this is a one-off publication. Dated changes already
    due are applied first: publishing after the deadline, before the phase job has held the
    board, records the deadline's hold as applied, so the job does not hold the board again.
    Idempotent. Returns the latest snapshot, or ``None`` when the task has none yet.
    """
    now = timezone.now()
    with transaction.atomic():
        locked = Task.objects.select_for_update().get(pk=task.pk)
        _apply_due(locked, now)
        if release_hold and locked.board_held:
            Task.objects.filter(pk=task.pk).update(board_held=False)
            locked.board_held = False
        _publish_held(task, now)
    _copy_phase_fields(locked, task)
    return task.snapshots.order_by("-version").first()


def snapshot_publication(task: Task) -> dict[str, Any]:
    """How a snapshot written now for ``task`` is stored: published unless the board is held
    (:func:`leaderboard.phases.board_held`: by hand, or past a deadline)."""
    current = Task.objects.filter(pk=task.pk).only(*_PHASE_FIELDS).first()
    now = timezone.now()
    if current is None or phases.board_held(current, now):
        return {"published": False, "published_at": None}
    return {"published": True, "published_at": now}


# -- dated changes: the phase job ------------------------------------------------------------------
_PHASE_FIELDS = (
    "board_held",
    "submissions_close_at",
    "reveal_at",
    "hold_applied_for",
    "reveal_applied_for",
)


@dataclass(frozen=True)
class AppliedPhases:
    """What :func:`apply_phases` did to one task: held its board at the deadline, published it
    at the reveal time (both, when the job catches up on a task it missed)."""

    held: bool = False
    revealed: bool = False


def apply_phases(*, task: Task, now: datetime | None = None) -> AppliedPhases:
    """Apply the task's dated board changes that are due at ``now``: hold at the deadline,
    publish (and release the hold) at the reveal time. Each happens once per date: what was
    applied is recorded, so running this again, or after an organizer published by hand,
    changes nothing. ``task`` is updated in place."""
    now = now or timezone.now()
    with transaction.atomic():
        locked = Task.objects.select_for_update().get(pk=task.pk)
        applied = _apply_due(locked, now)
    _copy_phase_fields(locked, task)
    return applied


def apply_due_phases(*, now: datetime | None = None) -> dict[str, int]:
    """:func:`apply_phases` for every task with a change due (the beat job's service).

    Finds the tasks by their dates, so a job that missed a deadline (the worker was down)
    catches up at its next run; until then :func:`leaderboard.phases.board_held` already treats
    the board as held. Returns how many boards were held and published.
    """
    now = now or timezone.now()
    candidates = Task.objects.filter(
        Q(submissions_close_at__lte=now)
        & (Q(hold_applied_for__isnull=True) | ~Q(hold_applied_for=F("submissions_close_at")))
        | Q(reveal_at__lte=now)
        & (Q(reveal_applied_for__isnull=True) | ~Q(reveal_applied_for=F("reveal_at")))
    ).order_by("pk")
    counts = {"held": 0, "published": 0}
    for task in candidates:
        applied = apply_phases(task=task, now=now)
        counts["held"] += applied.held
        counts["published"] += applied.revealed
    return counts


def _apply_due(locked: Task, now: datetime) -> AppliedPhases:
    """Apply what is due on ``locked`` (its row locked by the caller) and record it."""
    hold, reveal = phases.hold_due(locked, now), phases.reveal_due(locked, now)
    if not (hold or reveal):
        return AppliedPhases()
    if hold:
        locked.board_held = True
        locked.hold_applied_for = locked.submissions_close_at
    if reveal:
        _publish_held(locked, now)
        locked.board_held = False
        locked.reveal_applied_for = locked.reveal_at
    locked.save(update_fields=["board_held", "hold_applied_for", "reveal_applied_for"])
    return AppliedPhases(held=hold, revealed=reveal)


def _publish_held(task: Task, now: datetime) -> None:
    LeaderboardSnapshot.objects.filter(task=task, published=False).update(
        published=True, published_at=now
    )
    # The runs' states the board now shows may be told: their held mail is owed again.
    release_held_notifications(task)


def _copy_phase_fields(source: Task, target: Task) -> None:
    for name in _PHASE_FIELDS:
        setattr(target, name, getattr(source, name))


def update_run_details(*, run: Run, **fields: Any) -> Run:
    """Change a run's public name, description or link (validated; nothing else is editable)."""
    unknown = sorted(set(fields) - set(RUN_DETAIL_FIELDS))
    if unknown:
        raise RunDetailsError(
            f"not editable: {', '.join(unknown)}", {name: ["cannot be changed"] for name in unknown}
        )
    errors: dict[str, list[str]] = {}
    cleaned = {}
    for name, value in fields.items():
        value = "" if value is None else str(value).strip()
        max_length = cast("Field[Any, Any]", Run._meta.get_field(name)).max_length
        if name == "name" and not value:
            errors.setdefault(name, []).append("a run needs a name")
        if max_length and len(value) > max_length:
            errors.setdefault(name, []).append(f"at most {max_length} characters")
        if name == "description" and len(value) > 5000:
            errors.setdefault(name, []).append("at most 5000 characters")
        if name == "link" and value:
            try:
                URLValidator(schemes=["http", "https"])(value)
            except ValidationError:
                errors.setdefault(name, []).append("must be an http or https URL")
        cleaned[name] = value
    if errors:
        summary = "; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items())
        raise RunDetailsError(f"invalid run details ({summary})", errors)
    for name, value in cleaned.items():
        setattr(run, name, value)
    if cleaned:
        run.save(update_fields=list(cleaned))
    return run
