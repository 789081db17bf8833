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
more to sleeping than it gained (docs/BENCHMARKS.md, "2 workers on one task"). On PostgreSQL a
job announces the release (``NOTIFY``) and a waiting job wakes on it at once: a plan holds the
lease for about 0.1 s, and the polls' back-off left it idle for a tenth of two workers' time.
The notice is only a hint to poll now; the lease itself stays the row's compare-and-set.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta

from django.conf import settings
from django.db import connection
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
    if not _take(task_id, token, seconds):
        with _release_notices(task_id) as sleep:
            pause = _POLL_SECONDS[0]
            while not _take(task_id, token, seconds):
                if time.monotonic() + pause > deadline:
                    raise EngineBusy(
                        f"task {task_id} is being planned or estimated by another worker"
                    )
                sleep(pause)
                pause = min(2 * pause, _POLL_SECONDS[1])
    try:
        yield token
    finally:
        released = Task.objects.filter(pk=task_id, engine_lock_token=token).update(
            engine_lock_token="", engine_lock_until=None
        )
        if released and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_notify(%s, '')", [_channel(task_id)])


def _channel(task_id: int) -> str:
    return f"engine_lease_{task_id}"


@contextmanager
def _release_notices(task_id: int) -> Iterator[Callable[[float], None]]:
    """Yields ``sleep(seconds)``, which returns early when a job releases ``task_id``'s lease
    (PostgreSQL, outside a transaction: a ``LISTEN`` inside one starts only at its commit);
    elsewhere a plain sleep."""
    if connection.vendor != "postgresql" or connection.in_atomic_block:
        yield time.sleep
        return
    connection.ensure_connection()
    raw = connection.connection
    channel = _channel(task_id)
    with connection.cursor() as cursor:
        cursor.execute(f'LISTEN "{channel}"')

    def sleep(seconds: float) -> None:
        for _ in raw.notifies(timeout=seconds, stop_after=1):
            pass

    try:
        yield sleep
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f'UNLISTEN "{channel}"')
        for _ in raw.notifies(timeout=0):  # a notice that came before the UNLISTEN
            pass


def assert_lock_held(task_id: int, token: str) -> Task:
    """Lock the task row (inside the caller's transaction) and check the lease is ``token``'s.

    The task row is locked before any request row the job then writes, the order every answer
    follows too (``annotation.services.judgment_locks.lock_judgment_set``); ``no_key`` leaves
    rows that reference the task (leases, runs) free to be inserted meanwhile."""
    task = Task.objects.select_for_update(no_key=True).get(pk=task_id)
    if task.engine_lock_token != token:
        raise LockLost(f"task {task_id}: the engine lease expired before the results were written")
    return task
