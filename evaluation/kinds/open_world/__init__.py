"""The open world's engine wing: a run is a set of predicted items, each run samples its own.

:mod:`.state` rebuilds the task's state (runs, judgment set, reference sample, the replayed
record) and caches what never changes; :mod:`.planning` plans a run's rounds; :mod:`.estimation`
estimates every run and stores the snapshot; :mod:`.reference_sample` and :mod:`.withdrawals`
are what an estimation checks last (a reference sample being verified, requests only withdrawn
runs needed).
"""

from __future__ import annotations

from evaluation.core.task_design import OPEN_WORLD
from leaderboard.models import LeaderboardSnapshot, Run, Task

from .estimation import estimate_locked
from .planning import plan_locked, prepare_plan
from .state import LoadedTask

__all__ = ["OpenWorldEngine"]


class OpenWorldEngine:
    """:class:`~evaluation.kinds.base.KindEngine` of open-world tasks."""

    kind = OPEN_WORLD

    def prepare(self, run: Run) -> LoadedTask:
        return prepare_plan(run)

    def plan(self, run: Run, token: str, prepared: object | None = None) -> str:
        assert prepared is None or isinstance(prepared, LoadedTask)
        return plan_locked(run, token, prepared)

    def estimate(self, task: Task, token: str) -> LeaderboardSnapshot | None:
        return estimate_locked(task, token)
