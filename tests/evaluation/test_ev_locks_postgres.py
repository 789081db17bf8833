"""On PostgreSQL a job waiting for a task's engine lease wakes when the holder releases it
(``NOTIFY``), not at its next poll: a plan holds the lease about 0.1 s, and the polls' back-off
(up to 100 ms) left the lease idle for a tenth of two workers' time (docs/BENCHMARKS.md)."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connections

from evaluation import locks
from evaluation.locks import EngineBusy, engine_lock

from pipeline_support import make_task

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _hold(task_id: int, holding: threading.Event, release: threading.Event) -> None:
    try:
        with engine_lock(task_id):
            holding.set()
            release.wait(10)
    finally:
        connections.close_all()


def _waiter(task_id: int, took: list[float], errors: list[str]) -> None:
    try:
        with engine_lock(task_id, wait=20):
            took.append(time.monotonic())
    except Exception as exc:  # reported by the test thread
        errors.append(repr(exc))
    finally:
        connections.close_all()


def test_a_waiting_job_takes_the_lease_when_it_is_released_not_at_its_next_poll(monkeypatch):
    # Polls 8 s apart: only the release notice can wake the waiter within the test's time.
    monkeypatch.setattr(locks, "_POLL_SECONDS", (8.0, 8.0))
    task = make_task()
    holding, release, took, errors = threading.Event(), threading.Event(), [], []
    holder = threading.Thread(target=_hold, args=(task.pk, holding, release))
    holder.start()
    assert holding.wait(10)
    waiter = threading.Thread(target=_waiter, args=(task.pk, took, errors))
    waiter.start()
    time.sleep(0.3)  # the waiter found the lease taken and listens
    released_at = time.monotonic()
    release.set()
    holder.join()
    waiter.join(30)
    assert errors == [] and len(took) == 1
    assert took[0] - released_at < 4.0


def test_a_notice_left_from_an_earlier_wait_does_not_take_a_held_lease(monkeypatch):
    monkeypatch.setattr(locks, "_POLL_SECONDS", (0.05, 0.05))
    task = make_task()
    with engine_lock(task.pk):
        pass  # a release notice nobody listened to
    with engine_lock(task.pk), pytest.raises(EngineBusy), engine_lock(task.pk, wait=0.3):
        pass
