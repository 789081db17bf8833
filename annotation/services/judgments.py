"""Open verification requests, record judgments, resolve items by majority.

Every write of a request's counts happens with the request row locked (``SELECT ... FOR UPDATE``
on PostgreSQL; SQLite transactions take the write lock when they start), so counts, leases and
resolution stay consistent however many annotators answer at once.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from leaderboard.jobs import enqueue_estimate
from leaderboard.models import Item, Task

from ..models import Answer, Assignment, GoldAnswer, Judgment, RequestConflict, VerificationRequest
from .conflicts import register_request_conflicts
from .errors import JudgmentError

COUNTED_ANSWERS = (Answer.CORRECT, Answer.INCORRECT)
# Longer than this, the time spent on an item is not a measurement (the tab sat open).
MAX_SECONDS_SPENT = 3600.0
MAX_JUSTIFICATION = 500


def request_verification(*, task: Task, item_ids: Iterable[int], priority: int = 0,
                         run_items=None) -> int:
    """Open one pending request per item (items that already have one are skipped).

    Also records which teams' runs predicted each new item (their members never get it; see
    :func:`~annotation.services.conflicts.register_request_conflicts` for ``run_items``).
    Returns the number of requests created. Must run inside the caller's transaction.
    """
    item_ids = list(item_ids)
    existing = set(VerificationRequest.objects.filter(item_id__in=item_ids)
                   .values_list("item_id", flat=True))
    new_ids = [i for i in dict.fromkeys(item_ids) if i not in existing]
    VerificationRequest.objects.bulk_create(
        [VerificationRequest(task=task, item_id=i, priority=priority,
                             judgments_required=task.judgments_per_item) for i in new_ids],
        batch_size=2000)
    if new_ids:
        register_request_conflicts(task=task, item_ids=new_ids, run_items=run_items)
    if len(new_ids) >= FRESH_STATISTICS_AT:
        _refresh_statistics()
    return len(new_ids)


# A batch this large can change the queue tables' statistics enough that PostgreSQL, planning
# with the old ones, picks nested-loop plans that make every claim scan the whole queue (measured:
# 49 ms instead of 3 ms per claim on 2,000 fresh requests) until autovacuum catches up.
FRESH_STATISTICS_AT = 500


def _refresh_statistics() -> None:
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {VerificationRequest._meta.db_table}, "
                       f"{RequestConflict._meta.db_table}")


def required_cap(judgments_per_item: int) -> int:
    """Most judgments a request may come to need: a majority of 3 for 1 to 3 per item, else the
    smallest odd number not below ``judgments_per_item`` (an odd count cannot tie)."""
    cap = max(3, judgments_per_item)
    return cap if cap % 2 else cap + 1


@dataclass(frozen=True)
class JudgmentOutcome:
    judgment: Judgment
    created: bool  # False: a retry of an answer already stored (same client id)
    resolved: bool  # the item got its label with this answer


def parse_client_id(client_id) -> uuid.UUID:
    try:
        return uuid.UUID(str(client_id))
    except ValueError:
        raise JudgmentError("client_id must be a UUID") from None


def clean_answer_fields(answer, justification, seconds_spent) -> tuple[str, str, float | None]:
    """Validate an answer's fields; over-long times become None (not a measurement)."""
    if answer not in Answer.values:
        raise JudgmentError(f"unknown answer {answer!r}; use one of {Answer.values}")
    justification = "" if justification is None else justification
    if not isinstance(justification, str):
        raise JudgmentError("justification must be text")
    justification = justification.strip()
    if len(justification) > MAX_JUSTIFICATION:
        raise JudgmentError(f"justification is longer than {MAX_JUSTIFICATION} characters")
    if seconds_spent is not None:
        try:
            seconds_spent = float(seconds_spent)
        except (TypeError, ValueError):
            raise JudgmentError("seconds_spent must be a number") from None
        if not seconds_spent >= 0.0:  # also refuses NaN
            raise JudgmentError("seconds_spent must be a number of seconds, at least 0")
        if seconds_spent > MAX_SECONDS_SPENT:
            seconds_spent = None
    return answer, justification, seconds_spent


def client_id_in_use(client_uuid: uuid.UUID, *, lease_is_gold: bool = False):
    """The judgment or gold answer stored under ``client_uuid``, if any (the kind the caller
    most likely replays is looked up first)."""
    kinds = (GoldAnswer, Judgment) if lease_is_gold else (Judgment, GoldAnswer)
    for model in kinds:
        found = model.objects.filter(client_id=client_uuid).first()
        if found is not None:
            return found
    return None


def lock_request(request_id: int) -> VerificationRequest | None:
    """The request, its row locked until the transaction ends (PostgreSQL; SQLite is serial)."""
    return (VerificationRequest.objects.select_for_update(of=("self",))
            .select_related("task").filter(pk=request_id).first())


def submit_judgment(*, request_id: int, annotator, answer: str, client_id: uuid.UUID | str | None
                    = None, justification: str = "", seconds_spent: float | None = None
                    ) -> JudgmentOutcome:
    """Record an annotator's answer on a request, lease or not; idempotent by ``client_id``.

    A second answer by the same annotator on the same item is refused; an answer the request no
    longer needs (it resolved, or its counted judgments are in) is kept but not counted. The
    annotator's live lease on the request, if any, is marked answered. The API answers by lease
    token instead (:func:`annotation.services.answers.answer_assignment`).
    """
    answer, justification, seconds_spent = clean_answer_fields(answer, justification,
                                                               seconds_spent)
    client_uuid = parse_client_id(client_id) if client_id is not None else uuid.uuid4()
    previous = client_id_in_use(client_uuid)
    if previous is not None:
        if (not isinstance(previous, Judgment) or previous.request_id != request_id
                or previous.annotator_id != annotator.pk):
            raise JudgmentError("this client_id was already used for another answer",
                                "client_id_reused")
        return JudgmentOutcome(previous, created=False, resolved=False)
    try:
        with transaction.atomic():
            request = lock_request(request_id)
            if request is None:
                raise JudgmentError(f"no verification request {request_id}", "not_found")
            if not request.task.annotators.filter(pk=annotator.pk).exists():
                raise JudgmentError("you are not an annotator of this task", "not_annotator")
            if Judgment.objects.filter(request=request, annotator=annotator,
                                       withdrawn_at=None).exists():
                raise JudgmentError("you have already answered this item", "already_answered")
            lease = (Assignment.objects.filter(request=request, annotator=annotator,
                                               state=Assignment.State.ACTIVE).first())
            return record_judgment(request, annotator, answer, client_uuid, justification,
                                   seconds_spent, lease)
    except IntegrityError:
        again = Judgment.objects.filter(client_id=client_uuid).first()
        if again is not None and again.annotator_id == annotator.pk:
            return JudgmentOutcome(again, created=False, resolved=False)
        raise JudgmentError("you have already answered this item", "already_answered") from None


def record_judgment(request: VerificationRequest, annotator, answer: str, client_uuid,
                    justification: str, seconds_spent, lease: Assignment | None
                    ) -> JudgmentOutcome:
    """Store a judgment on a locked request and apply it: count, extra judgment, resolution."""
    needed = request.judgments_required - request.judgments_counted
    pending = request.state == VerificationRequest.State.PENDING
    counted = pending and answer in COUNTED_ANSWERS and needed > 0
    judgment = Judgment.objects.create(
        request=request, annotator=annotator, assignment=lease, client_id=client_uuid,
        answer=answer, justification=justification, seconds_spent=seconds_spent,
        counted=counted)
    if lease is not None:
        Assignment.objects.filter(pk=lease.pk).update(state=Assignment.State.ANSWERED)
    resolved = False
    if counted:
        request.judgments_counted += 1
        VerificationRequest.objects.filter(pk=request.pk).update(
            judgments_counted=F("judgments_counted") + 1)
        resolved = resolve_if_decided(request)
    elif (answer == Answer.CANNOT_TELL and pending
          and request.judgments_required <= request.task.judgments_per_item
          and request.judgments_required < required_cap(request.task.judgments_per_item)):
        # A skip asks for one extra judgment (once): the item was hard for someone.
        request.judgments_required += 1
        VerificationRequest.objects.filter(pk=request.pk).update(
            judgments_required=F("judgments_required") + 1)
    return JudgmentOutcome(judgment, created=True, resolved=resolved)


def resolve_if_decided(request: VerificationRequest) -> bool:
    """Resolve by majority once the required counted answers are in (the request is locked).

    With one judgment per item the first counted answer decides; a tie asks for one more answer
    (two annotators who disagree get a third), up to :func:`required_cap`, an odd number.
    """
    if request.judgments_counted < request.judgments_required:
        return False
    votes = list(request.judgments.filter(counted=True).values_list("answer", flat=True))
    if len(votes) < request.judgments_required:
        return False
    yes = votes.count(Answer.CORRECT)
    no = len(votes) - yes
    if yes == no:
        request.judgments_required += 1
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
    request.state = VerificationRequest.State.RESOLVED
    # Bumping the version locks the task row until commit, so label sequence numbers are
    # handed out in commit order: a reader that sees version v sees every label up to v.
    seq = _bump_labels_version(request.task_id)
    Item.objects.filter(pk=request.item_id).update(label=label, verified_at=now, label_seq=seq)
    enqueue_estimate(request.task_id)
    return True


def _bump_labels_version(task_id: int) -> int:
    """Add one to the task's ``labels_version`` and return it, in one statement (PostgreSQL and
    SQLite >= 3.35 both support ``RETURNING``); the row stays locked until commit."""
    table = Task._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET labels_version = labels_version + 1 "
                       "WHERE id = %s RETURNING labels_version", [task_id])
        return int(cursor.fetchone()[0])
