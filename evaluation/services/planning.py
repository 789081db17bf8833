"""``plan_run``: ask the engine for a run's next round and queue exactly those judgments.

The frame every kind of task shares: which runs may be planned, the task's engine lease (waited
for a little, with what can be read before it already read), and what a failure does to the
run. The round itself is the kind's (:func:`evaluation.kinds.registry.engine_for`:
:mod:`evaluation.kinds.open_world.planning`, :mod:`evaluation.kinds.closed_pool.planning`).
"""

from __future__ import annotations

import logging
import time

from django.conf import settings

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
    started = time.perf_counter()
    prepared = _prepare(run)
    prepared_at = time.perf_counter()
    with engine_lock(run.task_id, wait=settings.ENGINE_LOCK_WAIT_SECONDS) as token:
        log.info(
            "plan lease run %s: prepare %.3f s, wait %.3f s",
            run.pk,
            prepared_at - started,
            time.perf_counter() - prepared_at,
        )
        run.refresh_from_db()
        if run.state not in PLANNABLE:
            return "skipped"
        try:
            return engine_for(run.task).plan(run, token, prepared)
        except RunWithdrawn:
            # Withdrawn while this job planned: the round it would have stored is rolled back.
            return "skipped"
        except (ValueError, FloatingPointError) as exc:
            # The engine refused the state: a platform problem, not the participant's.
            log.exception("planning run %s failed", run.pk)
            fail_run(run, f"platform error while planning: {exc}. Your quota was refunded.")
            return "failed"


def _prepare(run: Run) -> object | None:
    """What the kind reads before the lease (another job may hold it meanwhile: two workers on
    one task load in parallel and only plan one after the other). ``None`` when the engine
    refuses the state: planning under the lease loads it again, and fails the run there."""
    try:
        return engine_for(run.task).prepare(run)
    except (ValueError, FloatingPointError):
        return None
