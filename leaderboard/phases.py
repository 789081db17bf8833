"""A task's calendar: where a moment falls in its submission window, and which of its dated
board changes are due.

Pure functions of a task's date fields and a moment: no queries. The visibility rule that reads
them is :func:`board_held` (used by ``leaderboard.selectors`` and by the snapshot writer), so a
deadline holds the board the moment it passes, whether or not the phase job
(:func:`leaderboard.services.board.apply_due_phases`) has run yet; the job records what it
applied (``hold_applied_for``, ``reveal_applied_for``) so each change happens once.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Literal

from django.utils import timezone

if TYPE_CHECKING:
    from .models import Task

SubmissionPhase = Literal["not_open", "open", "after_deadline"]

PHASE_LABELS: dict[str, str] = {
    "not_open": "not open yet",
    "open": "open",
    "after_deadline": "after the deadline",
}


def submission_phase(task: Task, now: datetime | None = None) -> SubmissionPhase:
    """Where ``now`` falls in the task's window: before it, in it, or after its deadline.

    A task without dates is ``open`` (its ``state`` alone says whether it takes runs).
    """
    now = now or timezone.now()
    if task.submissions_open_at is not None and now < task.submissions_open_at:
        return "not_open"
    if is_after_deadline(task, now):
        return "after_deadline"
    return "open"


def is_after_deadline(task: Task, at: datetime) -> bool:
    """Whether a run received at ``at`` comes after the task's official deadline."""
    close = task.submissions_close_at
    return close is not None and at >= close


def reveal_due(task: Task, now: datetime | None = None) -> bool:
    """Whether the reveal time has passed and its publication is not recorded yet."""
    now = now or timezone.now()
    reveal = task.reveal_at
    return reveal is not None and reveal <= now and task.reveal_applied_for != reveal


def _revealed(task: Task, now: datetime) -> bool:
    reveal = task.reveal_at
    return reveal is not None and reveal <= now and task.reveal_applied_for == reveal


def hold_due(task: Task, now: datetime | None = None) -> bool:
    """Whether the deadline has passed and its automatic hold is not recorded yet.

    Never once the reveal (which comes after the deadline) has been applied: moving a deadline
    of a revealed task does not hold its board again.
    """
    now = now or timezone.now()
    close = task.submissions_close_at
    if close is None or close > now or task.hold_applied_for == close:
        return False
    return not _revealed(task, now)


def board_held(task: Task, now: datetime | None = None) -> bool:
    """Whether the task's public board is held at ``now``: held by hand or by the phase job, or
    past a deadline whose hold the job has not recorded yet (its next run records it).

    A reveal that is due but not applied yet does not release the hold here: the job publishes
    at its next run, and publishing a minute late is harmless where showing scores early is not.
    """
    return task.board_held or hold_due(task, now)
