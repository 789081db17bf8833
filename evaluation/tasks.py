"""Celery tasks of the pipeline: each takes ids, re-fetches, and calls one idempotent service.

Acknowledged late (settings), so a killed worker's message is redelivered; transient database and
lock contention errors are retried with backoff. Lower layers enqueue these by name
(``leaderboard.jobs``).
"""

from __future__ import annotations

from typing import TypedDict

from celery import shared_task
from django.db import InterfaceError, OperationalError

from leaderboard.services.board import apply_due_phases
from leaderboard.services.ingest import ingest_run as ingest_received_run

from . import services
from .locks import EngineBusy

TRANSIENT = (EngineBusy, OperationalError, InterfaceError)


class _RetryOptions(TypedDict):
    autoretry_for: tuple[type[BaseException], ...]
    retry_backoff: int
    retry_backoff_max: int
    retry_jitter: bool
    max_retries: int


RETRY: _RetryOptions = {
    "autoretry_for": TRANSIENT,
    "retry_backoff": 1,
    "retry_backoff_max": 30,
    "retry_jitter": True,
    "max_retries": 50,
}


@shared_task(name="evaluation.ingest_run", **RETRY)
def ingest_run(run_id: int) -> str:
    return ingest_received_run(run_id)


@shared_task(name="evaluation.plan_run", **RETRY)
def plan_run(run_id: int) -> str:
    return services.plan_run(run_id)


@shared_task(name="evaluation.estimate_task", **RETRY)
def estimate_task(task_id: int) -> int | None:
    snapshot = services.estimate_task(task_id)
    return snapshot.version if snapshot else None


@shared_task(name="evaluation.watchdog", **RETRY)
def watchdog() -> dict[str, int]:
    return services.watchdog()


@shared_task(name="evaluation.apply_task_phases", **RETRY)
def apply_task_phases() -> dict[str, int]:
    return apply_due_phases()
