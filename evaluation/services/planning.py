"""``plan_run``: ask the engine for a run's next round and queue exactly those judgments.

The frame every kind of task shares: which runs may be planned, the task's engine lease, and what
a failure does to the run. The round itself is the kind's (:func:`evaluation.kinds.registry.
engine_for`: :mod:`evaluation.kinds.open_world.planning`, :mod:`evaluation.kinds.closed_pool.
planning`).
"""

from __future__ import annotations

import logging

from leaderboard.models import Run
from leaderboard.services.lifecycle import RunWithdrawn, fail_run

from ..kinds.registry import engine_for
from ..locks import engine_lock

log = logging.getLogger(__name__)

PLANNABLE = (Run.State.QUEUED, Run.State.PLANNING, Run.State.AWAITING_LABELS)


def plan_run(run_id: int) -> str:
    """Plan the next round of ``run_id``; idempotent, safe to call twice or after a crash.

    Returns what happened (for logs and tests): ``"missing"``, ``"skipped"`` (the run is in no
    state to plan), ``"waiting"`` (answers of its last round are still out), ``"sample"``,
    ``"estimating"`` (no more labels needed or possible: the run goes to final estimation) or
    ``"failed"``. Raises :class:`~evaluation.locks.EngineBusy` when another job holds the task.
    """
    run = Run.objects.filter(pk=run_id).select_related("task").first()
    if run is None:
        return "missing"
    if run.state not in PLANNABLE:
        return "skipped"
    with engine_lock(run.task_id) as token:
        run.refresh_from_db()
        if run.state not in PLANNABLE:
            return "skipped"
        try:
            return engine_for(run.task).plan(run, token)
        except RunWithdrawn:
            # Withdrawn while this job planned: the round it would have stored is rolled back.
            return "skipped"
        except (ValueError, FloatingPointError) as exc:
            # The engine refused the state: a platform problem, not the participant's.
            log.exception("planning run %s failed", run.pk)
            fail_run(run, f"platform error while planning: {exc}. Your quota was refunded.")
            return "failed"
