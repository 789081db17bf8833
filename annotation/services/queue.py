"""Hand out work: leases (assignments) on requests and gold items, heartbeats, releases.

A request may be leased while ``live leases + counted judgments < judgments required``; a lease
is live while ``state == active`` and ``expires_at > now`` (an expired lease frees its slot at
once, no sweeper, and is never renewed again). An annotator holds at most
``ANNOTATION_MAX_CLAIM`` live leases on a task, a heartbeat never takes a lease past
``ANNOTATION_LEASE_MAX_SECONDS`` after it was handed out, and a pause revokes them. A live lease
no page ever heartbeated (its page left before the claim's reply) goes to the annotator's next
claim rather than being stranded until it expires. Claims lock
candidate requests with ``SELECT ... FOR UPDATE SKIP LOCKED`` on PostgreSQL and re-check the free
slots with the rows locked; on other databases (SQLite) each candidate is taken by a
compare-and-set on ``lease_seq``. Every path that creates a lease by the slot rule locks (or
compare-and-sets) the request first, and a partial unique index allows one live lease per
(request, annotator) as the last line of defence.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import (
    Count,
    DateTimeField,
    Exists,
    F,
    Func,
    IntegerField,
    OuterRef,
    QuerySet,
    Subquery,
    UUIDField,
    Value,
)
from django.db.models.functions import Coalesce
from django.utils import timezone

from leaderboard.models import ReferenceCandidate, Task
from leaderboard.selectors import check_verified_email, conflicted_teams
from site_platform.prepared import PreparedQuery, Slot, prepared_cursor, stand_in

from ..models import (
    AnnotatorPause,
    Assignment,
    VerificationRequest,
)
from ..selectors import answers_today, open_gold_for, open_requests_for
from .errors import JudgmentError
from .gold import open_pause
from .judgments import lock_annotator, revoke_leases

if TYPE_CHECKING:
    from django.contrib.auth.models import User

ACTIVE = Assignment.State.ACTIVE


def lease_expiry(created_at: datetime, now: datetime) -> datetime:
    """Until when a lease handed out at ``created_at`` holds if renewed ``now``: one lease
    length, never past its lifetime (heartbeats cannot keep an item forever)."""
    return min(
        now + timedelta(seconds=settings.ANNOTATION_LEASE_SECONDS),
        created_at + timedelta(seconds=settings.ANNOTATION_LEASE_MAX_SECONDS),
    )


@dataclass(frozen=True)
class Claim:
    """What a claim gave: ``status`` is ``ok``, ``empty``, ``daily_cap``, ``paused``, ``closed``."""

    status: str
    message: str
    assignments: list[Assignment] = field(default_factory=list)  # new Assignment rows, items loaded


def parse_tokens(tokens: Iterable[object]) -> list[uuid.UUID]:
    try:
        return [uuid.UUID(str(t)) for t in tokens]
    except ValueError:
        raise JudgmentError("every token must be a UUID") from None


def free_requests(*, task: Task, annotator: User, now: datetime) -> QuerySet[VerificationRequest]:
    """Pending requests of ``task`` that ``annotator`` may be given now, in queue order.

    Excludes what they answered or skipped, hold a live lease on, answered as gold, or conflict
    with (a team of theirs, now or since the task was created, predicted the item), and
    requests without a free slot; on a draft task, every request but those of reference sample
    candidates (:func:`draft_work`).
    """
    live = Assignment.objects.filter(request=OuterRef("pk"), state=ACTIVE, expires_at__gt=now)
    live_count = Subquery(live.order_by().values("request").annotate(n=Count("pk")).values("n"))
    qs = (
        open_requests_for(task=task, annotator=annotator)
        .filter(~Exists(live.filter(annotator=annotator)))
        .annotate(live=Coalesce(live_count, 0))
        .filter(judgments_required__gt=F("judgments_counted") + F("live"))
    )
    if task.state == Task.State.DRAFT:
        qs = qs.filter(Exists(draft_work(task).filter(item_id=OuterRef("item_id"))))
    return qs.order_by("priority", "id")


def draft_work(task: Task) -> QuerySet[ReferenceCandidate]:
    """What annotators may answer while ``task`` is a draft, besides gold items: the candidates
    of its reference sample, which the organizer builds before opening it (a draft has no runs,
    and runs' items wait for the task to open)."""
    return ReferenceCandidate.objects.filter(task=task)


def claim_assignments(
    *, task: Task, annotator: User, count: int = 1, holding: Iterable[object] = ()
) -> Claim:
    """Lease up to ``count`` items to ``annotator``, minus the live ones the page still holds,
    never past ``ANNOTATION_MAX_CLAIM`` live leases of theirs on the task (all tabs together).

    Gold items are mixed in at ``task.gold_rate`` (an rng seeded by task, annotator and the
    number of leases they ever had: reproducible, no global random state), only alongside real
    work: an empty queue serves no gold.
    """
    check_verified_email(annotator)
    count = max(1, min(int(count), settings.ANNOTATION_MAX_CLAIM))
    holding = parse_tokens(holding)
    attempts = 3
    while True:
        try:
            with transaction.atomic():
                return _claim_locked(task, annotator, count, holding, timezone.now())
        except IntegrityError:
            # Another tab of the same annotator took the same item at the same instant.
            attempts -= 1
            if not attempts:
                raise


def _how_many(task: Task, annotator: User, wanted: int, live: int, now: datetime) -> int | Claim:
    """How many new items a claim may lease (``wanted`` asked for, ``live`` held), within the
    page's and the day's limits; or the claim's answer when it may lease none."""
    if wanted <= 0:
        return Claim("ok", "")
    cap = task.annotator_daily_cap
    today = answers_today(task=task, annotator=annotator, now=now) if cap is not None else 0
    if cap is not None and today >= cap:
        return Claim(
            "daily_cap",
            f"You reached today's limit of {cap} answers on this "
            "task. Thank you! Come back tomorrow (days in UTC).",
        )
    wanted = min(wanted, settings.ANNOTATION_MAX_CLAIM - live)
    if wanted <= 0:
        return Claim(
            "ok",
            f"You already hold {live} items of this task (perhaps in another "
            "tab): answer those first.",
        )
    if cap is not None:
        wanted = min(wanted, cap - today - live)
        if wanted <= 0:
            return Claim("ok", "You hold as many items as today's limit allows.")
    return wanted


def _new_leases(
    task: Task, annotator: User, wanted: int, held: int, now: datetime
) -> list[Assignment]:
    """Up to ``wanted`` new leases (unsaved), gold items drawn in at the task's rate and placed
    at random among the real ones."""
    n_gold, rng = 0, None
    if task.gold_rate > 0:
        (served,) = _LEASES_EVER.fetch_one(task=task.pk, annotator=annotator.pk)
        rng = random.Random(f"{task.seed}:{annotator.pk}:{served}")
        n_gold = sum(rng.random() < task.gold_rate for _ in range(wanted))
    gold_ids = _pick_gold(task, annotator, now, n_gold, rng) if n_gold and rng is not None else []
    request_ids = _take_requests(task, annotator, wanted - len(gold_ids), now)
    if gold_ids and not request_ids and not held and not _real_work_left(task, annotator, now):
        gold_ids = []  # gold only alongside real work: an empty queue serves no gold
    expires = lease_expiry(now, now)
    rows = [
        Assignment(
            task=task, annotator=annotator, request_id=pk, expires_at=expires, created_at=now
        )
        for pk in request_ids
    ]
    for pk in gold_ids:
        assert rng is not None  # the gold was picked with it
        rows.insert(
            rng.randint(0, len(rows)),
            Assignment(
                task=task, annotator=annotator, gold_id=pk, expires_at=expires, created_at=now
            ),
        )
    return rows


class _Lease(NamedTuple):
    pk: int
    token: uuid.UUID
    expires_at: datetime
    beat_at: datetime | None
    created_at: datetime


def _of_annotator() -> QuerySet[Assignment]:
    return Assignment.objects.filter(
        task_id=Slot("task", IntegerField()), annotator_id=Slot("annotator", IntegerField())
    )


# A claim's reads of the annotator's leases, compiled once per process (site_platform.prepared).
_LEASES_EVER = PreparedQuery(
    lambda: _of_annotator().order_by().values_list(Func(Value(1), function="COUNT"))
)
_ACTIVE_LEASES = PreparedQuery(
    lambda: _of_annotator().filter(state=ACTIVE).values_list(*_Lease._fields)
)


def _claim_locked(
    task: Task, annotator: User, count: int, holding: list[uuid.UUID], now: datetime
) -> Claim:
    # One claim (or answer, undo, pause) of this annotator on this task at a time, so their
    # live leases are counted once and a pause cannot slip between the check and the lease; nor
    # a removal (which deletes the membership this locks, then revokes their leases).
    if not lock_annotator(task.pk, annotator.pk):
        raise JudgmentError("you are not an annotator of this task", code="not_annotator")
    pause = open_pause(task=task, annotator=annotator)
    if pause is not None:
        return Claim(
            "paused",
            f"Your work on this task is paused for review ({pause.reason}). "
            "An organizer will get back to you.",
        )
    # The annotator's active leases on the task, read once (a few rows: at most
    # ANNOTATION_MAX_CLAIM live ones, and those expired since their last claim).
    leases = [_Lease(*row) for row in _ACTIVE_LEASES.rows(task=task.pk, annotator=annotator.pk)]
    expired = [lease.pk for lease in leases if lease.expires_at <= now]
    if expired:
        Assignment.objects.filter(pk__in=expired, state=ACTIVE).update(
            state=Assignment.State.EXPIRED
        )
    current = [lease for lease in leases if lease.expires_at > now]
    live = len(current)
    held = sum(lease.token in holding for lease in current)
    # Leases claimed by a page that left before the reply came (never heartbeated, held by no
    # page): this page gets them back, so a reload never finds the annotator's items stranded.
    adopted = _adopt_unbeaten(current, holding, count - held)
    if adopted:
        more = _claim_locked(task, annotator, count, [*holding, *(a.token for a in adopted)], now)
        status = "ok" if more.status in ("ok", "empty") else more.status
        message = "" if status == "ok" else more.message
        return Claim(status, message, [*adopted, *more.assignments])
    wanted = _how_many(task, annotator, count - held, live, now)
    if isinstance(wanted, Claim):
        return wanted
    rows = _new_leases(task, annotator, wanted, held, now)
    if not rows:
        if task.state == Task.State.DRAFT:
            return Claim(
                "empty",
                "No item is waiting for you right now. This task is a draft: until it opens, "
                "only its reference sample's candidates and gold items are answered.",
            )
        return Claim("empty", "No item is waiting for you right now.")
    Assignment.objects.bulk_create(rows)
    tokens = [a.token for a in rows]
    claimed = _leases_with_items(len(tokens)).instances(
        **{f"token{i}": token for i, token in enumerate(tokens)}
    )
    loaded = {a.token: a for a in cast("list[Assignment]", claimed)}
    for lease in loaded.values():
        lease.task = task
    return Claim("ok", "", [loaded[t] for t in tokens])


@cache
def _leases_with_items(n: int) -> PreparedQuery:
    """The leases of ``n`` tokens (slots ``token0``...) with their items, as a claim returns
    them: one prepared query per number of leases claimed at once."""
    tokens: list[Any] = [Slot(f"token{i}", UUIDField()) for i in range(n)]
    return PreparedQuery(
        lambda: Assignment.objects.filter(token__in=tokens).select_related(
            "request__item", "gold__item"
        )
    )


def _adopt_unbeaten(current: list[Any], holding: list[uuid.UUID], wanted: int) -> list[Assignment]:
    """Of the annotator's live leases on the task (``current``), those that no page ever
    heartbeated nor holds, oldest first: a page that left before its claim's reply arrived.
    Handed to this claim rather than stranded."""
    if wanted <= 0:
        return []
    unbeaten = [lease for lease in current if lease.beat_at is None and lease.token not in holding]
    if not unbeaten:
        return []
    unbeaten.sort(key=lambda lease: (lease.created_at, lease.pk))
    return list(
        Assignment.objects.filter(pk__in=[lease.pk for lease in unbeaten[:wanted]], state=ACTIVE)
        .select_related("request__item", "gold__item", "task")
        .order_by("created_at", "pk")
    )


def _real_work_left(task: Task, annotator: User, now: datetime) -> bool:
    return free_requests(task=task, annotator=annotator, now=now).exists()


def _pick_gold(task: Task, annotator: User, now: datetime, n: int, rng: random.Random) -> list[int]:
    candidates = list(
        open_gold_for(task=task, annotator=annotator)
        .filter(
            ~Exists(
                Assignment.objects.filter(
                    gold=OuterRef("pk"), annotator=annotator, state=ACTIVE, expires_at__gt=now
                )
            )
        )
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    picked: list[int] = rng.sample(candidates, min(n, len(candidates)))
    return picked


def _take_requests(task: Task, annotator: User, n: int, now: datetime) -> list[int]:
    """Take up to ``n`` requests with a free slot (inside the claim's transaction)."""
    if n <= 0:
        return []
    if connection.vendor == "postgresql":
        return _take_with_row_locks(task, annotator, n, now)
    return _take_by_compare_and_set(task, annotator, n, now)


# The PostgreSQL claim in SQL: the same conditions as :func:`free_requests` (kept in step by
# the tests, which run on both databases), compiled once instead of on every claim, and
# prepared on the server once per connection (:func:`prepared_cursor`).
_FREE_REQUESTS_SQL = """
SELECT r.id FROM annotation_verificationrequest r
WHERE r.task_id = %(task)s AND r.state = 'pending' {extra}
  AND NOT EXISTS (SELECT 1 FROM annotation_judgment j WHERE j.request_id = r.id
                  AND j.annotator_id = %(user)s AND j.withdrawn_at IS NULL)
  AND NOT EXISTS (SELECT 1 FROM annotation_assignment a WHERE a.request_id = r.id
                  AND a.annotator_id = %(user)s AND a.state = 'active' AND a.expires_at > %(now)s)
  AND NOT EXISTS (SELECT 1 FROM annotation_goldanswer ga
                  JOIN annotation_golditem g ON g.id = ga.gold_id
                  WHERE g.item_id = r.item_id AND ga.annotator_id = %(user)s
                  AND ga.withdrawn_at IS NULL)
  AND NOT EXISTS (SELECT 1 FROM annotation_requestconflict c
                  WHERE c.request_id = r.id AND c.team_id = ANY(%(teams)s::bigint[]))
  AND r.judgments_required > r.judgments_counted
      + (SELECT count(*) FROM annotation_assignment a WHERE a.request_id = r.id
         AND a.state = 'active' AND a.expires_at > %(now)s)
ORDER BY r.priority, r.id
{tail}
"""
# On a draft task only reference sample candidates are served (:func:`draft_work`).
_DRAFT_SQL = (
    " AND EXISTS (SELECT 1 FROM leaderboard_referencecandidate rc"
    " WHERE rc.task_id = r.task_id AND rc.item_id = r.item_id)"
)
_LOCK_SQL, _DRAFT_LOCK_SQL = (
    _FREE_REQUESTS_SQL.format(
        extra="AND NOT (r.id = ANY(%(tried)s::bigint[]))" + draft,
        tail="LIMIT %(limit)s FOR UPDATE OF r SKIP LOCKED",
    )
    for draft in ("", _DRAFT_SQL)
)
_RECHECK_SQL, _DRAFT_RECHECK_SQL = (
    _FREE_REQUESTS_SQL.format(extra="AND r.id = ANY(%(ids)s::bigint[])" + draft, tail="")
    for draft in ("", _DRAFT_SQL)
)


_CONFLICTED_TEAMS = PreparedQuery(
    lambda: conflicted_teams(
        task=stand_in(created_at=Slot("task_created", DateTimeField())),
        user=stand_in(pk=Slot("user", IntegerField())),
    ).values_list("pk")
)


def _take_with_row_locks(task: Task, annotator: User, n: int, now: datetime) -> list[int]:
    chosen: list[int] = []
    tried: list[int] = []
    teams = [
        row[0] for row in _CONFLICTED_TEAMS.rows(task_created=task.created_at, user=annotator.pk)
    ]
    params: dict[str, Any] = {"task": task.pk, "user": annotator.pk, "now": now, "teams": teams}
    draft = task.state == Task.State.DRAFT
    lock_sql, recheck_sql = (
        (_DRAFT_LOCK_SQL, _DRAFT_RECHECK_SQL) if draft else (_LOCK_SQL, _RECHECK_SQL)
    )
    with prepared_cursor(connection) as cursor:
        for _ in range(4):
            need = n - len(chosen)
            if need <= 0:
                break
            cursor.execute(lock_sql, {**params, "tried": tried, "limit": need})
            locked = [row[0] for row in cursor.fetchall()]
            if not locked:
                break
            tried.extend(locked)
            # Re-check with the rows locked: this statement sees leases committed since the
            # first one started, and nobody can add a lease to a locked request until we commit.
            cursor.execute(recheck_sql, {**params, "ids": locked})
            chosen.extend(row[0] for row in cursor.fetchall())
    return chosen


def _take_by_compare_and_set(task: Task, annotator: User, n: int, now: datetime) -> list[int]:
    chosen: list[int] = []
    for _ in range(4):
        need = n - len(chosen)
        if need <= 0:
            break
        rows = list(
            free_requests(task=task, annotator=annotator, now=now)
            .exclude(pk__in=chosen)
            .values_list("pk", "lease_seq")[:need]
        )
        if not rows:
            break
        for pk, seq in rows:
            if VerificationRequest.objects.filter(pk=pk, lease_seq=seq).update(lease_seq=seq + 1):
                chosen.append(pk)
    return chosen


def heartbeat(*, annotator: User, tokens: Iterable[object]) -> list[dict[str, object]]:
    """Renew the caller's live leases, each at most to the end of its lifetime.

    An expired lease is never renewed, gold or real alike (reviving one whose slot was still
    free would tell a gold item, whose slot nobody takes, from a real one), nor a lease on a
    task the annotator is paused on (revoked here if the pause did not revoke it already).
    Returns one row per token (in the given order): ``token``, ``expires_at`` (None when not
    valid) and ``valid`` (False for answered, released, revoked, expired or unknown leases).
    """
    tokens = parse_tokens(tokens)
    now = timezone.now()
    mine = Assignment.objects.filter(annotator=annotator, token__in=tokens)
    paused = AnnotatorPause.objects.filter(annotator=annotator, lifted_at=None).values("task")
    revoke_leases(mine.filter(task__in=paused))
    mine.filter(state=ACTIVE, expires_at__lte=now).update(state=Assignment.State.EXPIRED)
    for lease in mine.filter(state=ACTIVE, expires_at__gt=now).only("pk", "created_at"):
        Assignment.objects.filter(pk=lease.pk, state=ACTIVE, expires_at__gt=now).update(
            expires_at=lease_expiry(lease.created_at, now), beat_at=now
        )
    current = {a.token: a for a in Assignment.objects.filter(annotator=annotator, token__in=tokens)}
    rows: list[dict[str, object]] = []
    for token in tokens:
        held = current.get(token)
        valid = held is not None and held.state == ACTIVE and held.expires_at > now
        rows.append(
            {
                "token": token,
                "expires_at": held.expires_at if valid and held is not None else None,
                "valid": valid,
            }
        )
    return rows


def release(*, annotator: User, tokens: Iterable[object]) -> int:
    """Give back the caller's live leases at once (the page is closing); returns how many."""
    return Assignment.objects.filter(
        annotator=annotator, token__in=parse_tokens(tokens), state=ACTIVE
    ).update(state=Assignment.State.RELEASED)
