"""``watchdog``: recover or fail pipeline work stuck past its deadline."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotation.models import Judgment, VerificationRequest
from leaderboard.jobs import enqueue_estimate, enqueue_ingest, enqueue_plan
from leaderboard.models import Run, Task
from leaderboard.services.lifecycle import fail_run
from leaderboard.services.notifications import resend_stuck_notifications
from leaderboard.services.organizer_uploads import resend_stuck_uploads

log = logging.getLogger(__name__)


def watchdog(*, now: datetime | None = None) -> dict[str, int]:
    """Re-queue work untouched for ``PIPELINE_STUCK_SECONDS``; fail it after too many attempts.

    A run in ``received``, ``validating``, ``queued``, ``planning`` or ``estimating`` that has not
    moved is re-sent to a worker (its message may have been lost with a broker, or its worker
    killed); after ``PIPELINE_MAX_ATTEMPTS`` it fails with the reason and its quota is
    refunded. A run awaiting labels is waiting for people, not for the platform, unless none of
    its items is still pending: then it is planned again. A task whose requested estimation never
    ran gets one, and so does a task with counted answers no engine job has read since; mail
    still pending (its message lost, or refused by the mail server) is sent again, and so is an
    organizer's upload still waiting to be loaded. Returns counts of what it did.
    """
    now = now or timezone.now()
    deadline = now - timedelta(seconds=settings.PIPELINE_STUCK_SECONDS)
    done = {
        "requeued": 0,
        "failed": 0,
        "replanned": 0,
        "estimates": 0,
        "mail": 0,
        "uploads": 0,
        "uploads_failed": 0,
    }
    stuck = Run.objects.filter(
        state__in=(
            Run.State.RECEIVED,
            Run.State.VALIDATING,
            Run.State.QUEUED,
            Run.State.PLANNING,
            Run.State.ESTIMATING,
        ),
        state_changed_at__lt=deadline,
    )
    for run in stuck:
        if run.attempts >= settings.PIPELINE_MAX_ATTEMPTS:
            reason = (
                f"the pipeline did not finish {run.state} after {run.attempts + 1} "
                "attempts; your quota was refunded"
            )
            done["failed"] += _fail_if_unmoved(run, reason)
            continue
        moved = Run.objects.filter(
            pk=run.pk, state=run.state, state_changed_at=run.state_changed_at
        ).update(attempts=F("attempts") + 1, state_changed_at=now)
        if not moved:
            continue
        if run.state == Run.State.ESTIMATING:
            enqueue_estimate(run.task_id, force=True)
        elif run.state in (Run.State.RECEIVED, Run.State.VALIDATING):
            enqueue_ingest(run.pk)
        else:
            enqueue_plan(run.pk)
        done["requeued"] += 1
    idle = Run.objects.filter(state=Run.State.AWAITING_LABELS, state_changed_at__lt=deadline)
    for run in idle:
        pending = VerificationRequest.objects.filter(
            item__draws__plan_round__run=run, state=VerificationRequest.State.PENDING
        )
        if not pending.exists():
            Run.objects.filter(pk=run.pk).update(state_changed_at=now)
            enqueue_plan(run.pk)
            done["replanned"] += 1
    for task_id in Task.objects.filter(
        estimate_pending=True, estimate_requested_at__lt=deadline
    ).values_list("pk", flat=True):
        enqueue_estimate(task_id, force=True)
        done["estimates"] += 1
    # A resolution asks for its estimation after its commit: a web worker that died in between
    # left counted judgments that no engine job has read (numbered) since.
    unread = Judgment.objects.filter(counted=True, seq=None, created_at__lt=deadline)
    for task_id in set(unread.values_list("request__task_id", flat=True)):
        done["estimates"] += enqueue_estimate(task_id)
    done["mail"] = resend_stuck_notifications(now=now)
    done["uploads"], done["uploads_failed"] = resend_stuck_uploads(now=now)
    if any(done.values()):
        log.warning("watchdog: %s", done)
    return done


def _fail_if_unmoved(run: Run, reason: str) -> int:
    """Fail ``run`` unless a worker moved it since the watchdog looked (returns 1 if failed).

    The check and the write share one transaction with the run's row locked, so a run a worker
    has just advanced is never overwritten with the stale copy read above.
    """
    with transaction.atomic():
        current = (
            Run.objects.select_for_update()
            .filter(pk=run.pk, state=run.state, state_changed_at=run.state_changed_at)
            .first()
        )
        if current is None:
            return 0
        fail_run(current, reason)
        return 1
