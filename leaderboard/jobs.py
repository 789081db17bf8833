"""Enqueue pipeline work by task name, on transaction commit.

The pipeline's Celery tasks live in ``evaluation.tasks``, a higher layer: lower layers signal it by
name (``send_task``) and never import it. Every message is sent only once the transaction that made
the work necessary has committed, so a worker never looks for a row that does not exist yet, and a
rolled-back upload enqueues nothing.

The database, not the broker, is the source of truth: a message that cannot be sent (the broker is
down) is logged and dropped, never raised into the request that made the work necessary (its
rows are committed by then). The run's state or the task's ``estimate_pending`` flag records the
work, and the watchdog (``evaluation.services.watchdog``) sends it again once it is overdue.
"""

from __future__ import annotations

import logging

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.utils import timezone

INGEST_RUN = "evaluation.ingest_run"
LOAD_UPLOAD = "evaluation.load_upload"
PLAN_RUN = "evaluation.plan_run"
ESTIMATE_TASK = "evaluation.estimate_task"
SEND_NOTIFICATIONS = "evaluation.send_notifications"
SEND_INVITATION_MAIL = "evaluation.send_invitation_mail"

log = logging.getLogger(__name__)


def _send(name: str, args: list, countdown: float | None = None) -> None:
    current_app.send_task(name, args=args, countdown=countdown)


def _send_or_log(
    name: str, args: list, countdown: float | None = None, *, logged: list | None = None
) -> None:
    """Send after commit; if the broker is unreachable, log it (``logged`` in place of
    ``args``: a secret is never logged) and leave the work to the watchdog (the committed rows
    say what is owed)."""
    try:
        _send(name, args, countdown=countdown)
    except Exception:  # any broker failure: kombu, redis-py and socket errors alike
        shown = args if logged is None else logged
        log.exception("could not send %s%s; the watchdog will send it again", name, shown)


def enqueue_ingest(run_id: int) -> None:
    """Ask a worker to validate received run ``run_id`` once the current transaction commits."""
    transaction.on_commit(lambda: _send_or_log(INGEST_RUN, [run_id]))


def enqueue_load_upload(upload_id: int) -> None:
    """Ask a worker to load organizer upload ``upload_id`` once the current transaction commits."""
    transaction.on_commit(lambda: _send_or_log(LOAD_UPLOAD, [upload_id]))


def enqueue_plan(run_id: int) -> None:
    """Ask a worker to plan the next round of ``run_id`` once the current transaction commits."""
    transaction.on_commit(lambda: _send_or_log(PLAN_RUN, [run_id]))


def enqueue_notifications(notification_ids: list[int]) -> None:
    """Ask a worker to send the notifications ``notification_ids`` once the current transaction
    commits (the rows say what is owed: the watchdog sends a lost message again)."""
    ids = list(notification_ids)
    transaction.on_commit(lambda: _send_or_log(SEND_NOTIFICATIONS, [ids]))


def enqueue_invitation_mail(kind: str, invitation_id: int, key: str) -> None:
    """Ask a worker to mail the invitation ``invitation_id`` (``kind``: ``team`` or ``task``)
    with its ``key`` once the current transaction commits. The key is never stored: it travels
    in this message only, so a lost message is not sent again (the inviter was shown the link)."""
    transaction.on_commit(
        lambda: _send_or_log(
            SEND_INVITATION_MAIL, [kind, invitation_id, key], logged=[kind, invitation_id]
        )
    )


def enqueue_estimate(task_id: int, *, force: bool = False) -> bool:
    """Ask for one re-estimation of ``task_id``, debounced; returns whether a message was sent.

    A flag on the task (set by compare-and-set) means one is already pending: answers arriving
    in a burst cause one estimation, not one each. The worker clears the flag when it starts, so
    answers that arrive during an estimation schedule exactly one more. ``force`` sends a
    message even if one is pending (the watchdog's recovery path).
    """
    from .models import Task

    now = timezone.now()
    updated = Task.objects.filter(pk=task_id, estimate_pending=False).update(
        estimate_pending=True, estimate_requested_at=now
    )
    if not updated and not force:
        return False
    if force:
        Task.objects.filter(pk=task_id).update(estimate_pending=True, estimate_requested_at=now)
    delay = settings.ESTIMATE_DEBOUNCE_SECONDS
    transaction.on_commit(lambda: _send_or_log(ESTIMATE_TASK, [task_id], countdown=delay or None))
    return True
