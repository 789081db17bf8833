"""Open verification requests, ask further looks, record judgments, resolve complete requests.

A request is resolved once every judgment asked of it is in; it has no label of its own: the
engine weighs each judgment with its annotator's estimated error rates. The task's judgment set
has a version (``Task.labels_version``), so a reader of version ``v`` knows exactly which answers
it rests on. A counted judgment is stored unnumbered, without touching the task row (so a task's
answers do not queue behind each other); the engine numbers every committed one when it starts
reading (:func:`number_judgments`). Gold answers and withdrawals, rarer, take the next version
themselves.

Every write of a request's counts happens with the request row locked (``SELECT ... FOR UPDATE``
on PostgreSQL; SQLite transactions take the write lock when they start), so counts, leases and
resolution stay consistent however many annotators answer at once.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
from django.db import IntegrityError, connection, transaction
from django.db.models import F, IntegerField, Min, QuerySet, UUIDField, Value
from django.utils import timezone

from leaderboard.jobs import enqueue_estimate
from leaderboard.models import Item, Task
from site_platform.prepared import PreparedQuery, Slot

from ..models import Answer, Assignment, GoldAnswer, Judgment, RequestConflict, VerificationRequest
from ..selectors import items_answered_since
from .cancelled import reopen_requests
from .conflicts import register_request_conflicts
from .errors import JudgmentError
from .judgment_locks import lock_judgment_set

if TYPE_CHECKING:
    from django.contrib.auth.models import User

COUNTED_ANSWERS = (Answer.CORRECT, Answer.INCORRECT)
# Longer than this, the time spent on an item is not a measurement (the tab sat open).
MAX_SECONDS_SPENT = 3600.0
MAX_JUSTIFICATION = 500


def request_verification(
    *,
    task: Task,
    item_ids: Iterable[int],
    judgments: int | None = None,
    priority: int = 0,
    run_items: Iterable[tuple[int, np.ndarray]] | None = None,
) -> int:
    """Open one pending request per item, asking ``judgments`` answers of it (default: the
    task's judgments per item); items that already have one are skipped.

    Also records which teams' runs predicted each new item (their members never get it; see
    :func:`~annotation.services.conflicts.register_request_conflicts` for ``run_items``).
    Returns the number of requests created. Must run inside the caller's transaction.
    """
    judgments = task.judgments_per_item if judgments is None else judgments
    item_ids = list(item_ids)
    existing = set(
        VerificationRequest.objects.filter(item_id__in=item_ids).values_list("item_id", flat=True)
    )
    # Asked for again: a request cancelled when its run was withdrawn is pending once more.
    reopen_requests(task=task, item_ids=existing)
    new_ids = [i for i in dict.fromkeys(item_ids) if i not in existing]
    new_ids = serving_order(task=task, priority=priority, item_ids=new_ids)
    VerificationRequest.objects.bulk_create(
        [
            VerificationRequest(
                task=task, item_id=i, priority=priority, judgments_required=judgments
            )
            for i in new_ids
        ],
        batch_size=2000,
    )
    if new_ids:
        register_request_conflicts(task=task, item_ids=new_ids, run_items=run_items)
    # A gold item drawn after annotators answered it as gold: those answers count.
    answered_gold = (
        set(
            GoldAnswer.objects.filter(
                gold__task=task, correct__isnull=False, late=False, withdrawn_at=None
            ).values_list("gold__item_id", flat=True)
        )
        if new_ids
        else set()
    )
    for item_id in sorted(answered_gold.intersection(new_ids)):
        request = lock_request_of_item(item_id)
        assert request is not None  # opened above
        recount(request)
    if len(new_ids) >= FRESH_STATISTICS_AT:
        _refresh_statistics()
    return len(new_ids)


def serving_order(*, task: Task, priority: int, item_ids: list[int]) -> list[int]:
    """The order a round's new requests are created in, so served in (the queue serves by
    ``(priority, id)``): a shuffle of ``item_ids`` seeded by the task and the round
    (``priority``), reproducible. Served in the items' order, their keys came in sequence and
    a gold item mixed in was the one out of it (issue 29, N4); which items are drawn is
    unchanged."""
    order = list(item_ids)
    random.Random(f"{task.seed}:requests:{priority}").shuffle(order)
    return order


# A batch this large can change the queue tables' statistics enough that PostgreSQL, planning
# with the old ones, picks nested-loop plans that make every claim scan the whole queue (measured:
# 49 ms instead of 3 ms per claim on 2,000 fresh requests) until autovacuum catches up.
FRESH_STATISTICS_AT = 500


def _refresh_statistics() -> None:
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(
            f"ANALYZE {VerificationRequest._meta.db_table}, {RequestConflict._meta.db_table}"
        )


def ask_again(
    *,
    task: Task,
    item_ids: Iterable[int],
    seen_version: int,
    run_items: Iterable[tuple[int, np.ndarray]] | None = None,
) -> list[int]:
    """One more judgment on each item's request (the planner's looks): a resolved request is
    pending again, for an annotator who has not judged the item yet.

    The planner chose the looks from the answers of judgment set ``seen_version``. An item
    answered (or un-answered) since is not asked: its look rested on a count that is out of date,
    and asking it could open a request that every annotator has answered already, which nobody
    could ever be given. The next plan, after the estimation those answers enqueue, sees them.
    The teams of runs submitted since a request opened are recorded as conflicting with it
    (``run_items`` as for :func:`request_verification`). Must run inside the caller's
    transaction. Returns the items (``Item`` pks) asked again, sorted.
    """
    item_ids = list(item_ids)
    if not item_ids:
        return []
    # Locked before the answers are looked at: an answer counts itself under its request's
    # lock without the task row, so one that commits after this check must wait for the lock.
    locked = list(
        VerificationRequest.objects.select_for_update(of=("self",))
        .filter(task=task, item_id__in=item_ids)
        .order_by("pk")
        .values_list("pk", "item_id")
    )
    stale = items_answered_since(task=task, item_ids=item_ids, version=seen_version)
    rows = [(pk, item) for pk, item in locked if item not in stale]
    VerificationRequest.objects.filter(pk__in=[pk for pk, _ in rows]).update(
        judgments_required=F("judgments_required") + 1,
        state=VerificationRequest.State.PENDING,
        resolved_at=None,
    )
    asked = sorted(item for _, item in rows)
    register_request_conflicts(task=task, item_ids=asked, run_items=run_items)
    return asked


@dataclass(frozen=True)
class JudgmentOutcome:
    judgment: Judgment
    created: bool  # False: a retry of an answer already stored (same client id)
    resolved: bool  # the request got every judgment asked of it with this answer


def parse_client_id(client_id: object) -> uuid.UUID:
    try:
        return uuid.UUID(str(client_id))
    except ValueError:
        raise JudgmentError("client_id must be a UUID") from None


@dataclass(frozen=True)
class SubmittedAnswer:
    """An answer as its annotator sent it, validated: what a judgment and a gold answer share."""

    annotator: User
    client_id: uuid.UUID
    answer: str
    justification: str
    seconds_spent: float | None

    def row_fields(self, *, lease: Assignment | None, late: bool) -> dict[str, object]:
        """The fields of the stored row (``Judgment`` or ``GoldAnswer``) this answer fills."""
        return {
            "annotator": self.annotator,
            "assignment": lease,
            "client_id": self.client_id,
            "answer": self.answer,
            "justification": self.justification,
            "seconds_spent": self.seconds_spent,
            "late": late,
        }

    def repeats(self, record: Judgment | GoldAnswer, lease_id: int) -> bool:
        """Whether ``record`` stores this very answer on lease ``lease_id`` (a retry)."""
        return (
            record.annotator_id == self.annotator.pk
            and record.assignment_id == lease_id
            and record.answer == self.answer
            and record.justification == self.justification
            and record.seconds_spent == self.seconds_spent
        )


def submitted_answer(
    *,
    annotator: User,
    client_id: uuid.UUID,
    answer: str,
    justification: str | None,
    seconds_spent: float | str | None,
) -> SubmittedAnswer:
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
    return SubmittedAnswer(annotator, client_id, answer, justification, seconds_spent)


def client_id_in_use(
    client_uuid: uuid.UUID, *, lease_is_gold: bool = False
) -> Judgment | GoldAnswer | None:
    """The judgment or gold answer stored under ``client_uuid``, if any.

    One statement asks both tables (``UNION ALL`` of their ids): a new answer, the usual case,
    finds nothing there; a replay then loads the row it found (the kind the caller most likely
    replays first)."""
    found = sorted(
        _CLIENT_ID_ROWS.rows(client_id=client_uuid), key=lambda row: row[1] != int(lease_is_gold)
    )
    if not found:
        return None
    pk, kind = found[0]
    model: type[Judgment] | type[GoldAnswer] = GoldAnswer if kind else Judgment
    return model.objects.filter(pk=pk).first()


def _client_id_rows() -> QuerySet[Any]:
    client_id = Slot("client_id", UUIDField())
    judgments = Judgment.objects.filter(client_id=client_id).values_list("pk", Value(0))
    gold = GoldAnswer.objects.filter(client_id=client_id).values_list("pk", Value(1))
    return judgments.union(gold, all=True)


# The hottest statements of an answer, compiled once per process (site_platform.prepared).
_CLIENT_ID_ROWS = PreparedQuery(_client_id_rows)


def lock_annotator(task_id: int, user_id: int) -> bool:
    """Lock the annotator's membership of the task until the transaction ends; False if they
    are not an annotator of it. Every claim, answer, undo and pause of one annotator on one task
    takes it first, so they happen one at a time (a pause never slips between a check and a
    lease or an answer), while other annotators are not held up."""
    return bool(_MEMBERSHIP_LOCK.rows(task=task_id, user=user_id))


_MEMBERSHIP_LOCK = PreparedQuery(
    lambda: (
        Task.annotators.through.objects.select_for_update()
        .filter(task_id=Slot("task", IntegerField()), user_id=Slot("user", IntegerField()))
        .values_list("pk")
    )
)


def lock_request(request_id: int) -> VerificationRequest | None:
    """The request, its row locked until the transaction ends (PostgreSQL; SQLite is serial),
    its task's row locked first (:func:`lock_judgment_set`)."""
    return _lock_request_where(pk=request_id)


def submit_judgment(
    *,
    request_id: int,
    annotator: User,
    answer: str,
    client_id: uuid.UUID | str | None = None,
    justification: str = "",
    seconds_spent: float | None = None,
) -> JudgmentOutcome:
    """Record an annotator's answer on a request, lease or not; idempotent by ``client_id``.

    A second answer by the same annotator on the same item is refused; an answer the request no
    longer needs (every judgment asked of it is in) is kept but not counted. The
    annotator's live lease on the request, if any, is marked answered. The API answers by lease
    token instead (:func:`annotation.services.answers.answer_assignment`).
    """
    client_uuid = parse_client_id(client_id) if client_id is not None else uuid.uuid4()
    submitted = submitted_answer(
        annotator=annotator,
        client_id=client_uuid,
        answer=answer,
        justification=justification,
        seconds_spent=seconds_spent,
    )
    previous = client_id_in_use(client_uuid)
    if previous is not None:
        if (
            not isinstance(previous, Judgment)
            or previous.request_id != request_id
            or previous.annotator_id != annotator.pk
        ):
            raise JudgmentError(
                "this client_id was already used for another answer", code="client_id_reused"
            )
        return JudgmentOutcome(previous, created=False, resolved=False)
    try:
        with transaction.atomic():
            request = VerificationRequest.objects.filter(pk=request_id).first()
            if request is None:
                raise JudgmentError(f"no verification request {request_id}", code="not_found")
            if not lock_annotator(request.task_id, annotator.pk):
                raise JudgmentError("you are not an annotator of this task", code="not_annotator")
            if Judgment.objects.filter(
                request=request, annotator=annotator, withdrawn_at=None
            ).exists():
                raise JudgmentError("you have already answered this item", code="already_answered")
            lease = Assignment.objects.filter(
                request=request, annotator=annotator, state=Assignment.State.ACTIVE
            ).first()
            return record_judgment(request, submitted, lease)
    except IntegrityError:
        again = Judgment.objects.filter(client_id=client_uuid).first()
        if again is not None and again.annotator_id == annotator.pk:
            return JudgmentOutcome(again, created=False, resolved=False)
        raise JudgmentError(
            "you have already answered this item", code="already_answered"
        ) from None


def record_judgment(
    request: VerificationRequest,
    submitted: SubmittedAnswer,
    lease: Assignment | None,
    late: bool = False,
) -> JudgmentOutcome:
    """Store a judgment on ``request`` and apply it: count it, resolve the request.

    A "can't tell" is kept but is no judgment: the request waits for another annotator. A
    ``late`` answer (on a lease its annotator no longer held) is kept and never counted: its
    slot may be someone else's by now.

    The locks are taken here, in the one order, and as late as they can be. A counted answer
    never takes the task row: it counts itself on the request in one conditional ``UPDATE`` (its
    row lock) and is stored unnumbered, for the engine's next read to number
    (:func:`number_judgments`); a resolution asks for an estimation once it has committed. An
    answer that does not count locks the task row and then the request (:func:`lock_request`),
    as before.
    """
    now = timezone.now()
    count = None
    pending = False
    if not late and submitted.answer in COUNTED_ANSWERS:
        count = _count_on_request(request.pk, now)
    else:
        locked = lock_request(request.pk)
        assert locked is not None  # a request is never deleted while its task lives
        pending = locked.state == VerificationRequest.State.PENDING
    judgment = Judgment.objects.create(
        request=request,
        counted=count is not None,
        created_at=now,
        **submitted.row_fields(lease=lease, late=late),
    )
    if lease is not None:
        close_lease(lease, late=late)
    if count is None:
        if pending and submitted.answer == Answer.CANNOT_TELL:
            # A skip may leave the item to nobody: the runs waiting for it are looked at again.
            enqueue_estimate(request.task_id)
        return JudgmentOutcome(judgment, created=True, resolved=False)
    request.judgments_counted, resolved = count
    if request.judgments_counted == 1:
        # The item's first counted answer (a counted gold answer on it is counted here too, and
        # set ``verified_at`` itself: see :func:`recount`).
        Item.objects.filter(pk=request.item_id, verified_at=None).update(verified_at=now)
    if resolved:
        request.state, request.resolved_at = VerificationRequest.State.RESOLVED, now
        # Its runs may now move on. After the commit: asking writes the task row, which a
        # transaction holding a request row must not wait for (the engine takes them the other
        # way round). A worker that dies in between leaves the judgment unnumbered, which the
        # watchdog answers with an estimation.
        task_id = request.task_id
        transaction.on_commit(lambda: enqueue_estimate(task_id))
    return JudgmentOutcome(judgment, created=True, resolved=resolved)


def _count_on_request(request_id: int, now: datetime) -> tuple[int, bool] | None:
    """Count one more judgment on the pending request ``request_id`` and resolve it if that was
    the last one asked, in one statement that locks its row; returns its count and whether it
    resolved, or None if it takes no judgment (not pending, or every judgment asked is in)."""
    table = VerificationRequest._meta.db_table
    state = VerificationRequest.State
    complete = "judgments_counted + 1 >= judgments_required"
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET judgments_counted = judgments_counted + 1, "
            f"state = CASE WHEN {complete} THEN %s ELSE state END, "
            f"resolved_at = CASE WHEN {complete} THEN %s ELSE resolved_at END "
            "WHERE id = %s AND state = %s AND judgments_counted < judgments_required "
            "RETURNING judgments_counted, state",
            [
                state.RESOLVED.value,
                connection.ops.adapt_datetimefield_value(now),
                request_id,
                state.PENDING.value,
            ],
        )
        row = cursor.fetchone()
    return None if row is None else (int(row[0]), row[1] == state.RESOLVED.value)


def close_lease(lease: Assignment, *, late: bool) -> None:
    """The lease an answer was given on is done: answered, or expired if the answer came too
    late (a released or revoked lease keeps its state, for the audit trail)."""
    Assignment.objects.filter(pk=lease.pk, state=Assignment.State.ACTIVE).update(
        state=Assignment.State.EXPIRED if late else Assignment.State.ANSWERED
    )


def revoke_leases(leases: QuerySet[Assignment]) -> int:
    """Revoke the active leases of ``leases`` (a pause, an annotator removed from the task): their
    items go back to the queue at once, and answers given on them later are kept as late answers,
    never counted. Returns how many were revoked."""
    return leases.filter(state=Assignment.State.ACTIVE).update(state=Assignment.State.REVOKED)


def lock_request_of_item(item_id: int, *, task_locked: bool = False) -> VerificationRequest | None:
    """The request on ``item_id``, if the planner drew it, its row locked (as
    :func:`lock_request`, its task's row first, unless the caller holds it: ``task_locked``)."""
    return _lock_request_where(task_locked=task_locked, item_id=item_id)


def _lock_request_where(*, task_locked: bool = False, **where: int) -> VerificationRequest | None:
    """The request ``where`` selects, its row locked, its task's row locked first unless the
    caller holds it (a task's lock is always taken before its requests' rows)."""
    if not task_locked:
        task_id = (
            VerificationRequest.objects.filter(**where).values_list("task_id", flat=True).first()
        )
        if task_id is None:
            return None
        lock_judgment_set(task_id)
    return (
        VerificationRequest.objects.select_for_update(of=("self",))
        .select_related("task")
        .filter(**where)
        .first()
    )


def recount(request: VerificationRequest) -> None:
    """Count the (locked) request's answers again after one was taken back, or after a gold
    answer on its item: resolved once every judgment asked is in, pending again otherwise.

    A gold item the planner also drew counts its gold answers too (the engine counts every
    answer on an item, and an annotator who answered it as gold is never served its request).
    The item is verified from its earliest counted answer on.
    """
    judged = Judgment.objects.filter(request=request, counted=True)
    gold = GoldAnswer.objects.filter(
        gold__item_id=request.item_id, correct__isnull=False, late=False, withdrawn_at=None
    )
    counted = min(request.judgments_required, judged.count() + gold.count())
    if request.state == VerificationRequest.State.CANCELLED:
        # Only asking again reopens it (:func:`.cancelled.reopen_requests`).
        VerificationRequest.objects.filter(pk=request.pk).update(judgments_counted=counted)
        request.judgments_counted = counted
        return
    complete = counted >= request.judgments_required
    now = timezone.now()
    VerificationRequest.objects.filter(pk=request.pk).update(
        judgments_counted=counted,
        lease_seq=F("lease_seq") + 1,
        state=VerificationRequest.State.RESOLVED if complete else VerificationRequest.State.PENDING,
        resolved_at=(request.resolved_at or now) if complete else None,
    )
    first = [
        t
        for t in (
            judged.aggregate(t=Min("created_at"))["t"],
            gold.aggregate(t=Min("created_at"))["t"],
        )
        if t is not None
    ]
    Item.objects.filter(pk=request.item_id).update(verified_at=min(first, default=None))
    if complete and request.state == VerificationRequest.State.PENDING:
        enqueue_estimate(request.task_id)
    elif not complete and request.state == VerificationRequest.State.RESOLVED:
        # Runs submitted while it was resolved have not been checked against it.
        register_request_conflicts(
            task=request.task, item_ids=[request.item_id], since=request.created_at
        )
    request.judgments_counted = counted


def next_judgments_version(task_id: int) -> int:
    """Add one to the task's judgment-set version and return it, in one statement (PostgreSQL
    and SQLite >= 3.35 both support ``RETURNING``); the row stays locked until commit, so
    versions are handed out in commit order: a reader that sees version ``v`` sees every answer
    up to ``v``."""
    table = Task._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET labels_version = labels_version + 1 "
            "WHERE id = %s RETURNING labels_version",
            [task_id],
        )
        (version,) = cursor.fetchone()
    return int(version)


def number_judgments(task_id: int) -> int:
    """Number the task's counted judgments stored since the last reader, as one new version of
    the judgment set, and return the version a reader should read (the current one if there
    were none).

    Every engine job calls it before it reads the answers: each counted judgment committed by
    then is in the version it returns, one committed later gets a later one. Run in its own
    short transaction, with the task row locked, so versions stay in commit order. Judgments
    numbered together share their number; the engine's order among them is fixed by item and
    annotator (:func:`evaluation.kinds.engine_rows.load_answers`)."""
    with transaction.atomic():
        (version,) = (
            Task.objects.select_for_update(no_key=True)
            .filter(pk=task_id)
            .values_list("labels_version", flat=True)
        )
        unnumbered = Judgment.objects.filter(request__task_id=task_id, counted=True, seq=None)
        if unnumbered.update(seq=version + 1):
            Task.objects.filter(pk=task_id).update(labels_version=version + 1)
            return int(version) + 1
    return int(version)
