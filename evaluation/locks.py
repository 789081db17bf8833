"""One engine job at a time per task, on any database, across any number of workers.

Planning and estimation read the whole sampling record and append to it, so two of them on one
task must not interleave. The lock is a lease on the task row taken by compare-and-set (an
``UPDATE ... WHERE`` that only one writer can win), not a held transaction: a long estimation never
blocks annotators' writes, and a worker killed mid-job frees the task when its lease expires. Every
write of a job re-checks, in its own transaction with the task row locked, that the lease is still
its own (:func:`assert_lock_held`), so a job that outlived its lease writes nothing.

A job that finds the lease taken waits for it a little (``wait`` seconds, polling 10-100 ms
apart) before giving up with :class:`EngineBusy`: a plan job holds the lease for well under a
second, and Celery's retry back-off counts in whole seconds, so a second worker on one task lost
more to sleeping than it gained (docs/BENCHMARKS.md, "2 workers on one task").
"""

from __future__ import annotations

import secrets
import time
from contextlib import contextmanager
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from leaderboard.models import Task


class EngineBusy(Exception):
    """Another job holds the task's engine lock; retry later."""


class LockLost(EngineBusy):
    """This job's lease expired and another job took the task; its results must not be written."""


# Polling interval while waiting for a lease: first, and at most.
_POLL_SECONDS = (0.01, 0.1)


def _take(task_id: int, token: str, seconds: float) -> bool:
    now = timezone.now()
    return bool(
        Task.objects.filter(pk=task_id)
        .filter(Q(engine_lock_until__isnull=True) | Q(engine_lock_until__lt=now))
        .update(engine_lock_token=token, engine_lock_until=now + timedelta(seconds=seconds))
    )


@contextmanager
def engine_lock(task_id: int, *, seconds: float | None = None, wait: float = 0.0):
    """Hold ``task_id``'s engine lease for the block; yields the lease token.

    Waits up to ``wait`` seconds for a lease another job holds, then raises
    :class:`EngineBusy`."""
    seconds = settings.ENGINE_LOCK_SECONDS if seconds is None else seconds
    token = secrets.token_hex(16)
    deadline = time.monotonic() + wait
    pause = _POLL_SECONDS[0]
    while not _take(task_id, token, seconds):
        if time.monotonic() + pause > deadline:
            raise EngineBusy(f"task {task_id} is being planned or estimated by another worker")
        time.sleep(pause)
        pause = min(2 * pause, _POLL_SECONDS[1])
    try:
        yield token
    finally:
        Task.objects.filter(pk=task_id, engine_lock_token=token).update(
            engine_lock_token="", engine_lock_until=None
        )


def assert_lock_held(task_id: int, token: str) -> Task:
    """Lock the task row (inside the caller's transaction) and check the lease is ``token``'s.

    The task row is locked before any request row the job then writes, the order every answer
    follows too (``annotation.services.judgment_locks.lock_judgment_set``); ``no_key`` leaves
    rows that reference the task (leases, runs) free to be inserted meanwhile."""
    task = Task.objects.select_for_update(no_key=True).get(pk=task_id)
    if task.engine_lock_token != token:
        raise LockLost(f"task {task_id}: the engine lease expired before the results were written")
    return task
