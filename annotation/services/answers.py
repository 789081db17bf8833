"""Answers given through leases (the API), and taking one's last answer back (undo).

Answers are idempotent by the client's ``client_id``: the same id with the same body returns
the stored answer; with another body it is refused (``client_id_reused``). An answer on an
expired or released lease is kept (a late answer): counted only if the request still needs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from leaderboard.jobs import enqueue_estimate
from leaderboard.models import Task

from ..models import Answer, Assignment, GoldAnswer, Judgment, VerificationRequest
from .errors import JudgmentError
from .gold import evaluate_pause
from .judgments import (
    clean_answer_fields,
    client_id_in_use,
    lock_request,
    lock_request_of_item,
    next_judgments_version,
    parse_client_id,
    record_judgment,
    recount,
)
from .queue import lease_length, parse_tokens


@dataclass(frozen=True)
class AnswerResult:
    """A stored answer (a :class:`Judgment` or a :class:`GoldAnswer`, which look alike)."""

    record: Judgment | GoldAnswer
    created: bool  # False: a replay of an answer already stored
    resolved: bool = False

    @property
    def counted(self) -> bool:
        # A gold answer other than "can't tell" measures its annotator: to them it counts.
        if isinstance(self.record, GoldAnswer):
            return self.record.answer != Answer.CANNOT_TELL
        return self.record.counted

    @property
    def task(self) -> Task:
        if isinstance(self.record, GoldAnswer):
            return self.record.gold.task
        return self.record.request.task

    @property
    def undo_until(self) -> datetime:
        return self.record.created_at + timedelta(seconds=settings.ANNOTATION_UNDO_SECONDS)


def _same_answer(record, lease_id, answer, justification, seconds) -> bool:
    return (record.assignment_id == lease_id and record.answer == answer
            and record.justification == justification and record.seconds_spent == seconds)


def answer_assignment(*, annotator, token, client_id, answer: str, justification: str = "",
                      seconds_spent: float | None = None) -> AnswerResult:
    """Record ``annotator``'s answer on the item of lease ``token``; safe to retry."""
    answer, justification, seconds_spent = clean_answer_fields(answer, justification,
                                                               seconds_spent)
    client_uuid = parse_client_id(client_id)
    (token,) = parse_tokens([token])
    lease = (Assignment.objects.select_related("task", "gold")
             .filter(token=token, annotator=annotator)
             .annotate(by_annotator=Exists(Task.annotators.through.objects.filter(
                 task_id=OuterRef("task_id"), user_id=annotator.pk)))
             .first())
    if lease is None:
        raise JudgmentError("no such assignment of yours", "unknown_assignment")
    for attempt in range(2):
        previous = client_id_in_use(client_uuid, lease_is_gold=lease.gold_id is not None)
        if previous is not None:
            if (previous.annotator_id != annotator.pk or previous.withdrawn_at is not None
                    or not _same_answer(previous, lease.pk, answer, justification,
                                        seconds_spent)):
                raise JudgmentError("this client_id was already used for another answer",
                                    "client_id_reused")
            return AnswerResult(previous, created=False)
        if attempt:
            break
        try:
            with transaction.atomic():
                return _answer(lease, annotator, client_uuid, answer, justification,
                               seconds_spent)
        except IntegrityError:
            continue  # a concurrent retry stored it first (or the pair is taken): look again
    raise JudgmentError("you have already answered this item", "already_answered")


def _answer(lease, annotator, client_uuid, answer, justification, seconds) -> AnswerResult:
    task = lease.task
    if task.state == Task.State.DRAFT:
        raise JudgmentError("this task is not open for annotation", "task_closed")
    if not lease.by_annotator:
        raise JudgmentError("you are not an annotator of this task", "not_annotator")
    if lease.gold_id is not None:
        return _answer_gold(lease, annotator, client_uuid, answer, justification, seconds)
    # A second answer on the item by the same annotator hits the partial unique index.
    request = (VerificationRequest.objects.select_for_update()
               .get(pk=lease.request_id))
    request.task = task
    outcome = record_judgment(request, annotator, answer, client_uuid, justification, seconds,
                              lease)
    return AnswerResult(outcome.judgment, created=True, resolved=outcome.resolved)


def _answer_gold(lease, annotator, client_uuid, answer, justification, seconds) -> AnswerResult:
    gold = lease.gold
    correct = None if answer == Answer.CANNOT_TELL else (answer == Answer.CORRECT) == gold.answer
    # Locked first, as every path locks a request before the task row.
    drawn = lock_request_of_item(gold.item_id) if correct is not None else None
    record = GoldAnswer.objects.create(
        gold=gold, annotator=annotator, assignment=lease, client_id=client_uuid, answer=answer,
        correct=correct, justification=justification, seconds_spent=seconds,
        seq=next_judgments_version(lease.task_id) if correct is not None else None)
    Assignment.objects.filter(pk=lease.pk).update(state=Assignment.State.ANSWERED)
    if drawn is not None:
        recount(drawn)
    if correct is not None:
        evaluate_pause(task=lease.task, annotator=annotator)
        # A gold answer measures the annotator: the engine's error rates move with it.
        enqueue_estimate(lease.task_id)
    return AnswerResult(record, created=True)


@dataclass(frozen=True)
class Undo:
    record: Judgment | GoldAnswer
    assignment: Assignment  # a fresh lease on the same item, item loaded


def undo_answer(*, annotator, client_id) -> Undo:
    """Take back ``annotator``'s last answer within ``ANNOTATION_UNDO_SECONDS``.

    The answer is marked withdrawn (kept as the audit trail, with the judgment-set version its
    withdrawal made), counts are restored, a request it completed is pending again, and a fresh
    lease on the same item is returned. The same for gold and real items, whatever others
    answered: the engine simply sees one answer fewer. Replaying an undo returns the same fresh
    lease while it is live.
    """
    client_uuid = parse_client_id(client_id)
    record = client_id_in_use(client_uuid)
    if record is None or record.annotator_id != annotator.pk:
        raise JudgmentError("no such answer of yours", "not_found")
    now = timezone.now()
    if record.withdrawn_at is not None:
        again = _lease_after_undo(record, annotator, now)
        if again is None:
            raise JudgmentError("this answer was already taken back", "undo_expired")
        return Undo(record, again)
    if now > record.created_at + timedelta(seconds=settings.ANNOTATION_UNDO_SECONDS):
        raise JudgmentError("too late to take this answer back", "undo_expired")
    task_id = (record.request.task_id if isinstance(record, Judgment) else record.gold.task_id)
    if _last_answer(task_id, annotator) != (type(record), record.pk):
        raise JudgmentError("only your last answer can be taken back", "not_last_answer")
    with transaction.atomic():
        if isinstance(record, GoldAnswer):
            drawn = lock_request_of_item(record.gold.item_id)
            withdrawn_seq = (next_judgments_version(task_id) if record.seq is not None
                             else None)
            updated = GoldAnswer.objects.filter(pk=record.pk, withdrawn_at=None).update(
                withdrawn_at=now, withdrawn_seq=withdrawn_seq)
            if updated and drawn is not None and record.seq is not None:
                recount(drawn)
            target = {"gold_id": record.gold_id}
        else:
            request = lock_request(record.request_id)
            record.refresh_from_db()
            withdrawn_seq = next_judgments_version(task_id) if record.counted else None
            updated = Judgment.objects.filter(pk=record.pk, withdrawn_at=None).update(
                withdrawn_at=now, withdrawn_seq=withdrawn_seq, counted=False)
            if updated and record.counted:
                recount(request)
            target = {"request_id": record.request_id}
        if not updated:
            raise JudgmentError("this answer was already taken back", "undo_expired")
        if withdrawn_seq is not None:
            enqueue_estimate(task_id)
        Assignment.objects.filter(annotator=annotator, state=Assignment.State.ACTIVE,
                                  expires_at__lte=now, **target).update(
            state=Assignment.State.EXPIRED)
        lease = Assignment.objects.create(task_id=task_id, annotator=annotator,
                                          expires_at=now + lease_length(), created_at=now,
                                          **target)
    record.refresh_from_db()
    return Undo(record, _loaded(lease))


def _loaded(lease: Assignment) -> Assignment:
    return (Assignment.objects.select_related("request__item", "gold__item", "task")
            .get(pk=lease.pk))


def _lease_after_undo(record, annotator, now) -> Assignment | None:
    target = ({"gold_id": record.gold_id} if isinstance(record, GoldAnswer)
              else {"request_id": record.request_id})
    lease = (Assignment.objects.filter(annotator=annotator, state=Assignment.State.ACTIVE,
                                       expires_at__gt=now, created_at__gte=record.withdrawn_at,
                                       **target).first())
    return _loaded(lease) if lease is not None else None


def _last_answer(task_id: int, annotator) -> tuple[type, int] | None:
    judgment = (Judgment.objects.filter(request__task_id=task_id, annotator=annotator,
                                        withdrawn_at=None)
                .order_by("-created_at", "-pk").values_list("pk", "created_at").first())
    gold = (GoldAnswer.objects.filter(gold__task_id=task_id, annotator=annotator,
                                      withdrawn_at=None)
            .order_by("-created_at", "-pk").values_list("pk", "created_at").first())
    if judgment is None and gold is None:
        return None
    if gold is None or (judgment is not None and judgment[1] >= gold[1]):
        return (Judgment, judgment[0])
    return (GoldAnswer, gold[0])
