"""Requests no run or reference sample needs any more: cancelled, and pending again when asked.

A run withdrawn by its team or an organizer (``leaderboard.services.withdrawal``) leaves the
planner; the estimation then cancels the requests its rounds opened that no other run in the union
and no reference candidate still needs (``evaluation.kinds.open_world.withdrawals``). A cancelled
request is never handed out; its live leases end (an answer sent on one is kept, late, and not
counted, as after any lost lease); answers already given stay in the judgment set. It keeps its
``judgments_required``: the sampling record asked them, and the record never changes.

Asked for again, it is pending once more: by a reference draw
(:func:`~annotation.services.judgments.request_verification`), a further look
(:func:`~annotation.services.judgments.ask_again`), or a new run that predicts its item, at its
first planning round (:func:`reopen_requests`): the item is then in a listed run's sample, which
the estimators treat as complete once the answers asked are in.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import F
from django.utils import timezone

from leaderboard.models import Task

from ..models import Assignment, VerificationRequest
from .judgment_locks import lock_judgment_set


def cancel_requests(*, task: Task, item_ids: Iterable[int]) -> int:
    """Cancel the pending requests of ``item_ids`` (``Item`` pks) and end their live leases;
    returns how many were cancelled. Idempotent. Must run inside the caller's transaction."""
    item_ids = list(item_ids)
    if not item_ids:
        return 0
    lock_judgment_set(task.pk)
    pks = list(
        VerificationRequest.objects.select_for_update(of=("self",))
        .filter(task=task, item_id__in=item_ids, state=VerificationRequest.State.PENDING)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    if not pks:
        return 0
    VerificationRequest.objects.filter(pk__in=pks).update(
        state=VerificationRequest.State.CANCELLED, lease_seq=F("lease_seq") + 1
    )
    Assignment.objects.filter(request_id__in=pks, state=Assignment.State.ACTIVE).update(
        state=Assignment.State.RELEASED
    )
    return len(pks)


def reopen_requests(*, task: Task, item_ids: Iterable[int]) -> int:
    """Make the cancelled requests of ``item_ids`` (``Item`` pks) pending again; returns how
    many. Their teams in conflict were recorded while they were cancelled too
    (:func:`~annotation.services.conflicts.register_run_conflicts`). Must run inside the
    caller's transaction (the task row is locked first, as every write of requests does)."""
    item_ids = list(item_ids)
    if not item_ids:
        return 0
    cancelled = VerificationRequest.objects.filter(
        task=task, item_id__in=item_ids, state=VerificationRequest.State.CANCELLED
    )
    if not cancelled.exists():
        return 0
    lock_judgment_set(task.pk)
    pks = list(
        cancelled.select_for_update(of=("self",)).order_by("pk").values_list("pk", flat=True)
    )
    VerificationRequest.objects.filter(pk__in=pks).update(
        state=VerificationRequest.State.PENDING, lease_seq=F("lease_seq") + 1
    )
    # Gold answers on its item count while it is cancelled: one may have every answer it asks.
    VerificationRequest.objects.filter(
        pk__in=pks, judgments_counted__gte=F("judgments_required")
    ).update(state=VerificationRequest.State.RESOLVED, resolved_at=timezone.now())
    return len(pks)


def cancelled_items(*, task: Task) -> dict[int, int]:
    """The task's items whose request is cancelled: engine index -> ``Item`` pk."""
    return dict(
        VerificationRequest.objects.filter(
            task=task, state=VerificationRequest.State.CANCELLED
        ).values_list("item__index", "item_id")
    )
