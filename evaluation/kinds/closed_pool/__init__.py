"""The closed pool's engine wing: every run scores one fixed pool, and one adaptive round over
the pool serves every run.

:mod:`.state` rebuilds the task's pool state and its design's sampling record; :mod:`.planning`
plans the pool's rounds (and the looks before them); :mod:`.estimation` estimates every run's
measures, stores the snapshot and each run's precision-recall curve.
"""

from __future__ import annotations

from evaluation.core.task_design import CLOSED_POOL
from leaderboard.models import LeaderboardSnapshot, Run, Task

from .estimation import estimate_locked
from .planning import plan_locked

__all__ = ["ClosedPoolEngine"]


class ClosedPoolEngine:
    """:class:`~evaluation.kinds.base.KindEngine` of closed-pool tasks."""

    kind = CLOSED_POOL

    def prepare(self, run: Run) -> None:  # noqa: ARG002 - the protocol's signature
        # One round serves the whole pool: nothing of it is worth reading before the lease.
        return None

    def plan(self, run: Run, token: str, prepared: object | None = None) -> str:  # noqa: ARG002
        return plan_locked(run, token)

    def estimate(self, task: Task, token: str) -> LeaderboardSnapshot | None:
        return estimate_locked(task, token)
