"""``estimate_task``: estimate every run of a task at once, store a snapshot, move runs on.

The frame every kind of task shares: the task's engine lease and its estimate flag. What is
estimated and stored is the kind's (:func:`evaluation.kinds.registry.engine_for`:
:mod:`evaluation.kinds.open_world.estimation`, :mod:`evaluation.kinds.closed_pool.estimation`).
"""

from __future__ import annotations

from django.conf import settings

from leaderboard.models import LeaderboardSnapshot, Task

from ..kinds.registry import engine_for
from ..locks import engine_lock


def estimate_task(task_id: int) -> LeaderboardSnapshot | None:
    """Re-estimate ``task_id`` and publish a snapshot; idempotent.

    One job per task at a time (the engine lock). The task's ``estimate_pending`` flag is cleared
    first, so answers that arrive while this runs schedule one more estimation. A snapshot is
    written only when something it rests on changed (labels, reference sample, runs or their
    states); either way, runs whose answers are all in move on: those short of the target are
    planned again, those in final estimation end ``scored`` or ``partial`` with the reason.
    Returns the snapshot written, or ``None``.
    """
    if not Task.objects.filter(pk=task_id).exists():
        return None
    with engine_lock(task_id, wait=settings.ENGINE_LOCK_WAIT_SECONDS) as token:
        Task.objects.filter(pk=task_id).update(estimate_pending=False)
        task = Task.objects.get(pk=task_id)
        return engine_for(task).estimate(task, token)
