"""Celery tasks of the pipeline, and the site's mail: each takes ids, re-fetches, and calls one
idempotent service.

Acknowledged late (settings), so a killed worker's message is redelivered; transient database and
lock contention errors are retried with backoff. Lower layers enqueue these by name
(``leaderboard.jobs``).
"""

from __future__ import annotations

from typing import TypedDict

from celery import shared_task
from django.db import InterfaceError, OperationalError

from annotation.services import load_organizer_upload
from leaderboard.services.board import apply_due_phases
from leaderboard.services.ingest import ingest_run as ingest_received_run
from leaderboard.services.invitation_mail import send_invitation_mail as mail_invitation
from leaderboard.services.notifications import send_notifications as send_owed_notifications

from . import services
from .locks import EngineBusy

TRANSIENT = (EngineBusy, OperationalError, InterfaceError)
# A mail server that refuses or cannot be reached (smtplib's errors are OSErrors).
MAIL_TRANSIENT = (OperationalError, InterfaceError, OSError)


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
# Mail: a few retries a minute apart; the watchdog sends what is still pending later.
MAIL_RETRY: _RetryOptions = {
    "autoretry_for": MAIL_TRANSIENT,
    "retry_backoff": 10,
    "retry_backoff_max": 120,
    "retry_jitter": True,
    "max_retries": 3,
}


@shared_task(name="evaluation.ingest_run", **RETRY)
def ingest_run(run_id: int) -> str:
    return ingest_received_run(run_id)


@shared_task(name="evaluation.load_upload", **RETRY)
def load_upload(upload_id: int) -> str:
    return load_organizer_upload(upload_id)


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


@shared_task(name="evaluation.send_notifications", **MAIL_RETRY)
def send_notifications(notification_ids: list[int]) -> dict[str, int]:
    return send_owed_notifications(notification_ids)


@shared_task(name="evaluation.send_invitation_mail", **MAIL_RETRY)
def send_invitation_mail(kind: str, invitation_id: int, key: str) -> str:
    return mail_invitation(kind=kind, invitation_id=invitation_id, key=key)
