"""The task list of the home page, and a task's dates as every task page shows them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, QuerySet

from .. import phases, selectors
from ..models import Task


def task_list(user) -> QuerySet[Task]:
    """Tasks the user may see, with their number of runs (``n_runs``), newest first."""
    return (
        selectors.visible_tasks(user)
        .annotate(n_runs=Count("runs", distinct=True))
        .order_by("-created_at")
    )


@dataclass(frozen=True)
class TaskPhases:
    """A task's submission window and reveal time, and where now falls in them."""

    opens: datetime | None
    closes: datetime | None
    reveal: datetime | None
    accept_late_runs: bool
    phase: str  # "not_open", "open" or "after_deadline" (leaderboard.phases)

    @property
    def dated(self) -> bool:
        return any(moment is not None for moment in (self.opens, self.closes, self.reveal))

    @property
    def phase_label(self) -> str:
        return phases.PHASE_LABELS[self.phase]


def task_phases(task: Task) -> TaskPhases:
    return TaskPhases(
        opens=task.submissions_open_at,
        closes=task.submissions_close_at,
        reveal=task.reveal_at,
        accept_late_runs=task.accept_late_runs,
        phase=phases.submission_phase(task),
    )
