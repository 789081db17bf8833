"""Answers given through leases (the API), and taking one's last answer back (undo).

Answers are idempotent by the client's ``client_id``: the same id with the same body returns
the stored answer; with another body it is refused (``client_id_reused``). An answer on a lease
its annotator no longer holds (expired, released, revoked by a pause) is kept as a late answer
and never counted. What an answer or an undo tells the annotator depends only on what they did
(their answer, their lease, their pause): never on others' answers, nor on whether the item is
gold.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, cast

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import IntegerField, UUIDField
from django.utils import timezone

from leaderboard.jobs import enqueue_estimate
from leaderboard.models import Task
from leaderboard.selectors import check_verified_email
from site_platform.prepared import PreparedQuery, Slot

from ..models import Answer, Assignment, GoldAnswer, Judgment
from .errors import JudgmentError
from .gold import evaluate_pause, open_pause
from .judgments import (
    SubmittedAnswer,
    client_id_in_use,
    close_lease,
    lock_annotator,
    lock_request,
    lock_request_of_item,
    next_judgments_version,
    parse_client_id,
    record_judgment,
    recount,
    submitted_answer,
)
from .queue import draft_work, lease_expiry, parse_tokens

if TYPE_CHECKING:
    from django.contrib.auth.models import User


@dataclass(frozen=True)
class AnswerResult:
    """A stored answer (a :class:`Judgment` or a :class:`GoldAnswer`, which look alike)."""

    record: Judgment | GoldAnswer
    created: bool  # False: a replay of an answer already stored
    resolved: bool = False

    @property
    def counted(self) -> bool:
        """What the annotator is told: a skip or a late answer does not count, any other answer
        does. Whether the item still needed it (others' answers: a judgment may be kept
        uncounted because the request got every answer it asked meanwhile) and whether it is
        gold are not theirs to learn; ``record.counted`` says what the engine counts."""
        return self.record.answer != Answer.CANNOT_TELL and not self.record.late

    @property
    def message(self) -> str:
        if not self.record.late:
            return ""
        return (
            "Your answer was kept but not counted: you no longer held this item (it was "
            "held too long, given back, or your work on the task was paused)."
        )

    @property
    def task(self) -> Task:
        return record_task(self.record)

    @property
    def undo_until(self) -> datetime:
        return self.record.created_at + timedelta(seconds=settings.ANNOTATION_UNDO_SECONDS)


def answer_assignment(
    *,
    annotator: User,
    token: object,
    client_id: object,
    answer: str,
    justification: str = "",
    seconds_spent: float | None = None,
) -> AnswerResult:
    """Record ``annotator``'s answer on the item of lease ``token``; safe to retry."""
    check_verified_email(annotator)
    submitted = submitted_answer(
        annotator=annotator,
        client_id=parse_client_id(client_id),
        answer=answer,
        justification=justification,
        seconds_spent=seconds_spent,
    )
    (token,) = parse_tokens([token])
    found = _LEASE_OF.instances(token=token, annotator=annotator.pk)
    if not found:
        raise JudgmentError("no such assignment of yours", code="unknown_assignment")
    lease = cast(Assignment, found[0])
    for attempt in range(2):
        previous = client_id_in_use(submitted.client_id, lease_is_gold=lease.gold_id is not None)
        if previous is not None:
            if previous.withdrawn_at is not None or not submitted.repeats(previous, lease.pk):
                raise JudgmentError(
                    "this client_id was already used for another answer", code="client_id_reused"
                )
            return AnswerResult(previous, created=False)
        if attempt:
            break
        try:
            with transaction.atomic():
                return _answer(lease, submitted)
        except IntegrityError:
            continue  # a concurrent retry stored it first (or the pair is taken): look again
    raise JudgmentError("you have already answered this item", code="already_answered")


# An answer's reads of its lease, compiled once per process (site_platform.prepared).
_LEASE_OF = PreparedQuery(
    lambda: (
        Assignment.objects.select_related("task", "gold", "request")
        .filter(token=Slot("token", UUIDField()), annotator_id=Slot("annotator", IntegerField()))
        .order_by("pk")[:1]
    )
)
_LEASE_STATE = PreparedQuery(
    lambda: Assignment.objects.filter(pk=Slot("lease", IntegerField())).values_list(
        "state", "expires_at"
    )
)


def _answer(lease: Assignment, submitted: SubmittedAnswer) -> AnswerResult:
    task = lease.task
    annotator = submitted.annotator
    if task.state == Task.State.DRAFT and not _draft_work(lease):
        raise JudgmentError(
            "this task is not open for annotation yet: while it is a draft, only its reference "
            "sample's candidates and gold items are answered",
            code="task_closed",
        )
    if not lock_annotator(task.pk, annotator.pk):
        raise JudgmentError("you are not an annotator of this task", code="not_annotator")
    # Read again with the annotator locked: a pause (which revokes) is either before or after.
    ((lease.state, lease.expires_at),) = _LEASE_STATE.rows(lease=lease.pk)
    late = (
        lease.state != Assignment.State.ACTIVE
        or lease.expires_at <= timezone.now()
        or open_pause(task=task, annotator=annotator) is not None
    )
    if lease.gold_id is not None:
        return _answer_gold(lease, submitted, late)
    # A second answer on the item by the same annotator hits the partial unique index.
    request = lease.request
    assert request is not None  # a lease is on a request or on a gold item
    request.task = task
    outcome = record_judgment(request, submitted, lease, late=late)
    return AnswerResult(outcome.judgment, created=True, resolved=outcome.resolved)


def _draft_work(lease: Assignment) -> bool:
    """Whether the lease is on work a draft task takes: a gold item or a reference candidate."""
    return lease.gold_id is not None or (
        draft_work(lease.task).filter(item__verification_request=lease.request_id).exists()
    )


def _answer_gold(lease: Assignment, submitted: SubmittedAnswer, late: bool) -> AnswerResult:
    gold = lease.gold
    assert gold is not None  # a gold lease
    answer = submitted.answer
    correct = None if answer == Answer.CANNOT_TELL else (answer == Answer.CORRECT) == gold.answer
    measures = correct is not None and not late
    # The version taken first (its UPDATE locks the task row), then the item's request locked
    # if the planner drew it: the one lock order.
    seq = next_judgments_version(lease.task_id) if measures else None
    drawn = lock_request_of_item(gold.item_id, task_locked=True) if measures else None
    record = GoldAnswer.objects.create(
        gold=gold,
        correct=correct,
        seq=seq,
        **submitted.row_fields(lease=lease, late=late),
    )
    close_lease(lease, late=late)
    if drawn is not None:
        recount(drawn)
    if measures:
        evaluate_pause(task=lease.task, annotator=submitted.annotator)
        # A gold answer measures the annotator: the engine's error rates move with it.
        enqueue_estimate(lease.task_id)
    return AnswerResult(record, created=True)


@dataclass(frozen=True)
class Undo:
    record: Judgment | GoldAnswer
    # A fresh lease on the same item, item loaded; None when the answer taken back was late or
    # the annotator is paused (nothing to answer again).
    assignment: Assignment | None

    @property
    def task(self) -> Task:
        return record_task(self.record)


def undo_answer(*, annotator: User, client_id: object) -> Undo:
    """Take back ``annotator``'s last answer within ``ANNOTATION_UNDO_SECONDS``.

    The answer is marked withdrawn (kept as the audit trail, with the judgment-set version its
    withdrawal made), counts are restored, a request it completed is pending again, and a fresh
    lease on the same item is returned unless the answer was late or the annotator is paused.
    The same for gold and real items, whatever others answered: the engine simply sees one
    answer fewer. Replaying an undo returns the same fresh lease while it is live.
    """
    client_uuid = parse_client_id(client_id)
    record = client_id_in_use(client_uuid)
    if record is None or record.annotator_id != annotator.pk:
        raise JudgmentError("no such answer of yours", code="not_found")
    now = timezone.now()
    if record.withdrawn_at is not None:
        again = _lease_after_undo(record, annotator, now)
        if again is None:
            raise JudgmentError("this answer was already taken back", code="undo_expired")
        return Undo(record, again)
    if now > record.created_at + timedelta(seconds=settings.ANNOTATION_UNDO_SECONDS):
        raise JudgmentError("too late to take this answer back", code="undo_expired")
    task_id = record.request.task_id if isinstance(record, Judgment) else record.gold.task_id
    if _last_answer(task_id, annotator) != (type(record), record.pk):
        raise JudgmentError("only your last answer can be taken back", code="not_last_answer")
    with transaction.atomic():
        if not lock_annotator(task_id, annotator.pk):
            # Removed from the task: their answers stay as they were, and no lease is made.
            raise JudgmentError("you are not an annotator of this task", code="not_annotator")
        updated, withdrawn_seq = _withdraw(record, task_id, now)
        if not updated:
            raise JudgmentError("this answer was already taken back", code="undo_expired")
        if withdrawn_seq is not None:
            enqueue_estimate(task_id)
        if record.late or open_pause(task=record_task(record), annotator=annotator):
            lease = None
        else:
            lease = _lease_on_same_item(record, annotator, task_id, now)
    record.refresh_from_db()
    return Undo(record, _loaded(lease) if lease is not None else None)


def _withdraw(record: Judgment | GoldAnswer, task_id: int, now: datetime) -> tuple[int, int | None]:
    """Mark ``record`` withdrawn (under its request's lock) and restore the counts it made:
    how many rows changed (0: another undo came first) and the version its withdrawal took."""
    if isinstance(record, GoldAnswer):
        drawn = lock_request_of_item(record.gold.item_id)
        withdrawn_seq = next_judgments_version(task_id) if record.seq is not None else None
        updated = GoldAnswer.objects.filter(pk=record.pk, withdrawn_at=None).update(
            withdrawn_at=now, withdrawn_seq=withdrawn_seq
        )
        if updated and drawn is not None and record.seq is not None:
            recount(drawn)
        return updated, withdrawn_seq
    request = lock_request(record.request_id)
    assert request is not None  # the judgment's own request
    record.refresh_from_db()
    withdrawn_seq = next_judgments_version(task_id) if record.counted else None
    updated = Judgment.objects.filter(pk=record.pk, withdrawn_at=None).update(
        withdrawn_at=now, withdrawn_seq=withdrawn_seq, counted=False
    )
    if updated and record.counted:
        recount(request)
    return updated, withdrawn_seq


def _lease_on_same_item(
    record: Judgment | GoldAnswer, annotator: User, task_id: int, now: datetime
) -> Assignment:
    target: dict[str, int] = (
        {"gold_id": record.gold_id}
        if isinstance(record, GoldAnswer)
        else {"request_id": record.request_id}
    )
    Assignment.objects.filter(
        annotator=annotator, state=Assignment.State.ACTIVE, expires_at__lte=now, **target
    ).update(state=Assignment.State.EXPIRED)
    return Assignment.objects.create(
        task_id=task_id,
        annotator=annotator,
        expires_at=lease_expiry(now, now),
        created_at=now,
        beat_at=now,  # the undoing page holds it: never adopted by another tab
        **target,
    )


def record_task(record: Judgment | GoldAnswer) -> Task:
    return record.gold.task if isinstance(record, GoldAnswer) else record.request.task


def _loaded(lease: Assignment) -> Assignment:
    return Assignment.objects.select_related("request__item", "gold__item", "task").get(pk=lease.pk)


def _lease_after_undo(
    record: Judgment | GoldAnswer, annotator: User, now: datetime
) -> Assignment | None:
    target = (
        {"gold_id": record.gold_id}
        if isinstance(record, GoldAnswer)
        else {"request_id": record.request_id}
    )
    lease = Assignment.objects.filter(
        annotator=annotator,
        state=Assignment.State.ACTIVE,
        expires_at__gt=now,
        created_at__gte=record.withdrawn_at,
        **target,
    ).first()
    return _loaded(lease) if lease is not None else None


def _last_answer(task_id: int, annotator: User) -> tuple[type, int] | None:
    judgment = (
        Judgment.objects.filter(request__task_id=task_id, annotator=annotator, withdrawn_at=None)
        .order_by("-created_at", "-pk")
        .values_list("pk", "created_at")
        .first()
    )
    gold = (
        GoldAnswer.objects.filter(gold__task_id=task_id, annotator=annotator, withdrawn_at=None)
        .order_by("-created_at", "-pk")
        .values_list("pk", "created_at")
        .first()
    )
    if judgment is None and gold is None:
        return None
    if gold is None or (judgment is not None and judgment[1] >= gold[1]):
        assert judgment is not None  # not both None (above)
        return (Judgment, judgment[0])
    return (GoldAnswer, gold[0])
