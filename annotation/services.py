"""Writes of the verification queue: open requests, record judgments, resolve items.

Minimal by design in this layer of the product: one pending request per drawn item, judgments
made idempotent by a client-generated id and unique per (item, annotator), resolution by majority
once enough counted answers are in. Resolving an item records its label on the item and asks for
a (debounced) re-estimation of the task.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from leaderboard.jobs import enqueue_estimate
from leaderboard.models import Item, Task

from .models import Judgment, VerificationRequest

COUNTED_ANSWERS = (Judgment.Answer.CORRECT, Judgment.Answer.INCORRECT)


class JudgmentError(ValueError):
    """An answer that cannot be accepted (the message says why; shown to the annotator)."""


def request_verification(*, task: Task, item_ids: Iterable[int], priority: int = 0) -> int:
    """Open one pending request per item (items that already have one are skipped).

    Returns the number of requests created. Must run inside the caller's transaction.
    """
    item_ids = list(item_ids)
    existing = set(VerificationRequest.objects.filter(item_id__in=item_ids)
                   .values_list("item_id", flat=True))
    new = [VerificationRequest(task=task, item_id=i, priority=priority,
                               judgments_required=task.judgments_per_item)
           for i in item_ids if i not in existing]
    VerificationRequest.objects.bulk_create(new, batch_size=2000)
    return len(new)


@dataclass(frozen=True)
class JudgmentOutcome:
    judgment: Judgment
    created: bool  # False: a retry of an answer already stored (same client id)
    resolved: bool  # the item got its label with this answer


def submit_judgment(*, request_id: int, annotator, answer: str, client_id: uuid.UUID | str | None
                    = None, justification: str = "", seconds_spent: float | None = None
                    ) -> JudgmentOutcome:
    """Record an annotator's answer; idempotent by ``client_id``.

    A second answer by the same annotator on the same item is refused; an answer arriving after
    the item resolved is kept but not counted.
    """
    if answer not in Judgment.Answer.values:
        raise JudgmentError(f"unknown answer {answer!r}; use one of {Judgment.Answer.values}")
    try:
        client_uuid = uuid.UUID(str(client_id)) if client_id is not None else uuid.uuid4()
    except ValueError:
        raise JudgmentError("client_id must be a UUID") from None
    previous = Judgment.objects.filter(client_id=client_uuid).first()
    if previous is not None:
        if previous.request_id != request_id or previous.annotator_id != annotator.pk:
            raise JudgmentError("this client_id was already used for another answer")
        return JudgmentOutcome(previous, created=False, resolved=False)
    try:
        with transaction.atomic():
            return _record(request_id, annotator, answer, client_uuid, justification,
                           seconds_spent)
    except IntegrityError:
        again = Judgment.objects.filter(client_id=client_uuid).first()
        if again is not None:
            return JudgmentOutcome(again, created=False, resolved=False)
        raise JudgmentError("you have already answered this item") from None


def _record(request_id, annotator, answer, client_uuid, justification, seconds_spent):
    request = (VerificationRequest.objects.select_for_update()
               .select_related("task").filter(pk=request_id).first())
    if request is None:
        raise JudgmentError(f"no verification request {request_id}")
    if not request.task.annotators.filter(pk=annotator.pk).exists():
        raise JudgmentError("you are not an annotator of this task")
    counted = request.state == VerificationRequest.State.PENDING and answer in COUNTED_ANSWERS
    judgment = Judgment.objects.create(
        request=request, annotator=annotator, client_id=client_uuid, answer=answer,
        justification=justification[:500], seconds_spent=seconds_spent, counted=counted)
    resolved = False
    if counted:
        VerificationRequest.objects.filter(pk=request.pk).update(
            judgments_counted=F("judgments_counted") + 1)
        request.refresh_from_db(fields=["judgments_counted"])
        resolved = _resolve_if_decided(request)
    return JudgmentOutcome(judgment, created=True, resolved=resolved)


def _resolve_if_decided(request: VerificationRequest) -> bool:
    """Resolve by majority once the required counted answers agree on more than half of them.

    With one judgment per item the first counted answer decides; with ``k`` required, a tie
    asks for one more answer (so two annotators who disagree get a third).
    """
    votes = list(request.judgments.filter(counted=True).values_list("answer", flat=True))
    if len(votes) < request.judgments_required:
        return False
    yes = votes.count(Judgment.Answer.CORRECT)
    no = len(votes) - yes
    if yes == no:
        VerificationRequest.objects.filter(pk=request.pk).update(
            judgments_required=F("judgments_required") + 1)
        return False
    now = timezone.now()
    label = yes > no
    updated = VerificationRequest.objects.filter(
        pk=request.pk, state=VerificationRequest.State.PENDING
    ).update(state=VerificationRequest.State.RESOLVED, resolved_at=now)
    if not updated:
        return False
    # Bumping the version locks the task row until commit, so label sequence numbers are
    # handed out in commit order: a reader that sees version v sees every label up to v.
    Task.objects.filter(pk=request.task_id).update(labels_version=F("labels_version") + 1)
    seq = Task.objects.filter(pk=request.task_id).values_list("labels_version", flat=True)[0]
    Item.objects.filter(pk=request.item_id).update(label=label, verified_at=now, label_seq=seq)
    enqueue_estimate(request.task_id)
    return True
