"""Reads of the verification queue: an annotator's progress, a task's queue health."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypedDict

from django.contrib.auth import get_user_model
from django.db.models import (
    BooleanField,
    Count,
    DateTimeField,
    Exists,
    F,
    Func,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
)
from django.db.models.expressions import Combinable
from django.utils import timezone

from leaderboard.models import LabelModelFit, Task
from leaderboard.selectors import conflicted_memberships, conflicted_teams
from site_platform.prepared import PreparedQuery, Slot, stand_in

from .agreement import task_agreement
from .models import (
    AnnotatorPause,
    Assignment,
    GoldAnswer,
    GoldItem,
    Judgment,
    RequestConflict,
    VerificationRequest,
)

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def start_of_day(now: datetime) -> datetime:
    """Midnight UTC of ``now``'s day: daily caps count answers per UTC day."""
    day = now.astimezone(UTC).date()
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def _answers(
    task: Task, annotator: User | None = None
) -> tuple[QuerySet[Judgment], QuerySet[GoldAnswer]]:
    judgments = Judgment.objects.filter(request__task_id=task.pk, withdrawn_at=None)
    gold = GoldAnswer.objects.filter(gold__task_id=task.pk, withdrawn_at=None)
    if annotator is not None:
        judgments = judgments.filter(annotator_id=annotator.pk)
        gold = gold.filter(annotator_id=annotator.pk)
    return judgments, gold


def answers_today(*, task: Task, annotator: User, now: datetime | None = None) -> int:
    """Answers (skips and gold answers included, undone ones not) since midnight UTC."""
    since = start_of_day(now or timezone.now())
    judgments, gold = _answers(task, annotator)
    return (
        judgments.filter(created_at__gte=since).count() + gold.filter(created_at__gte=since).count()
    )


def working_annotators(*, task: Task) -> int:
    """Annotators of ``task`` who have answered on it and are not paused: those who can give
    the further judgments the planner asks of an item (each by a different annotator)."""
    judgments, gold = _answers(task)
    answered = set(judgments.values_list("annotator_id", flat=True).distinct()) | set(
        gold.values_list("annotator_id", flat=True).distinct()
    )
    return len(answered & _active_annotators(task))


def _active_annotators(task: Task) -> set[int]:
    """The task's annotators who are not paused."""
    paused = AnnotatorPause.objects.filter(task=task, lifted_at=None).values("annotator")
    return set(task.annotators.exclude(pk__in=paused).values_list("pk", flat=True))


def open_requests_for(*, task: Task, annotator: User) -> QuerySet[VerificationRequest]:
    """Pending requests ``annotator`` has not answered (nor answered as gold) and may see
    (conflicts excluded)."""
    return (
        VerificationRequest.objects.filter(task_id=task.pk, state=VerificationRequest.State.PENDING)
        .filter(_not_answered_by(annotator, Judgment, request=OuterRef("pk")))
        .filter(_not_answered_by(annotator, GoldAnswer, gold__item=OuterRef("item_id")))
        .filter(
            ~Exists(
                RequestConflict.objects.filter(
                    request=OuterRef("pk"), team__in=conflicted_teams(task=task, user=annotator)
                )
            )
        )
    )


def open_gold_for(*, task: Task, annotator: User) -> QuerySet[GoldItem]:
    """Gold items of ``task`` the queue may still mix into ``annotator``'s work: not answered
    by them, nor judged by them as a request."""
    return (
        GoldItem.objects.filter(task_id=task.pk)
        .filter(_not_answered_by(annotator, GoldAnswer, gold=OuterRef("pk")))
        .filter(_not_answered_by(annotator, Judgment, request__item=OuterRef("item_id")))
    )


def _not_answered_by(
    annotator: User, answers: type[Judgment] | type[GoldAnswer], **outer: Any
) -> Combinable:
    """A condition: ``annotator`` has no live (not withdrawn) answer among ``answers`` matching
    ``outer`` (lookups of the outer row)."""
    return ~Exists(answers.objects.filter(annotator_id=annotator.pk, withdrawn_at=None, **outer))


def _remaining(task: Task, requests: int, gold: int) -> int:
    """The items an annotator could still be given, from the counts of their open requests
    (:func:`open_requests_for`) and open gold items (:func:`open_gold_for`), each item once.

    Gold items count like the others, so that any answer (or undo) moves the count by exactly
    one whether its item was gold or not: a count of requests alone drops after a real item and
    stays after a gold one, which tells gold apart. Gold is only served alongside real work, so
    with no request left nothing remains, and never at a gold rate of 0.
    """
    if task.gold_rate <= 0:
        return requests
    return requests + gold if requests else 0


def _count_of(rows: QuerySet[Any]) -> Subquery:
    """``COUNT(*)`` of ``rows`` as a scalar subquery, to read several counts in one statement
    (``COUNT`` through ``Func``: an aggregate would make Django group the rows)."""
    return Subquery(
        rows.order_by().annotate(n=Func(Value(1), function="COUNT")).values("n"),
        output_field=IntegerField(),
    )


def _progress_query() -> QuerySet[Any]:
    """The progress block's one statement, with slots for the task, its creation time (which
    dates conflicts of interest), the annotator and the start of the day."""
    task = stand_in(pk=Slot("task", IntegerField()), created_at=Slot("created", DateTimeField()))
    annotator = stand_in(pk=Slot("annotator", IntegerField()))
    since = Slot("since", DateTimeField())
    judgments, gold = _answers(task, annotator)
    pause = AnnotatorPause.objects.filter(task_id=task.pk, annotator_id=annotator.pk)
    requests = open_requests_for(task=task, annotator=annotator)
    # Each gold item looks up its own item's request (an index lookup for each of a few gold
    # items), rather than the database listing every open request a second time.
    open_gold = open_gold_for(task=task, annotator=annotator).exclude(
        Exists(requests.filter(item_id=OuterRef("item_id")))
    )
    return (
        Task.objects.filter(pk=task.pk)
        .order_by()
        .values_list(
            _count_of(judgments),
            _count_of(judgments.filter(created_at__gte=since)),
            _count_of(gold),
            _count_of(gold.filter(created_at__gte=since)),
            Subquery(pause.filter(lifted_at=None).order_by("pk").values("reason")[:1]),
            _count_of(requests),
            _count_of(open_gold),
        )
    )


# Compiled once per process: building this query cost four times what running it does.
_PROGRESS = PreparedQuery(_progress_query)


def annotator_progress(*, task: Task, annotator: User) -> dict[str, Any]:
    """What the annotator page shows: answers today and in all, the cap, what is left, pause.

    ``remaining`` is the exact number of items this annotator could still be given
    (:func:`_remaining`: pending requests not answered or skipped by them, with no conflict
    of interest, and the gold items they have not answered); items whose slots others hold right
    now are included, since their leases may expire. One statement (every claim and answer
    response carries it), whose SQL text is compiled once per process.
    """
    judged, judged_today, gold_total, gold_today, paused_reason, requests, open_gold = (
        _PROGRESS.fetch_one(
            task=task.pk,
            created=task.created_at,
            annotator=annotator.pk,
            since=start_of_day(timezone.now()),
        )
    )
    return {
        "answered_today": judged_today + gold_today,
        "answered_total": judged + gold_total,
        "daily_cap": task.annotator_daily_cap,
        "remaining": _remaining(task, requests, open_gold),
        "paused": paused_reason is not None,  # a pause always has a reason
        "paused_reason": paused_reason or "",
    }


def queue_counts(*, task: Task) -> dict[str, int]:
    """Request counts of a task by state (pending, resolved, cancelled)."""
    counts = dict(
        VerificationRequest.objects.filter(task=task)
        .values("state")
        .annotate(n=Count("pk"))
        .values_list("state", "n")
    )
    return {state: counts.get(state, 0) for state in VerificationRequest.State.values}


@dataclass(frozen=True)
class AnnotatorRow:
    """One annotator on the queue page. ``sensitivity`` and ``specificity`` are the engine's
    estimates ``(value, low, high)`` in the latest fit of the annotator model, ``weight`` what
    one of their answers weighs there (``None`` until the model has seen their answers)."""

    username: str
    answers_total: int
    answers_today: int
    gold_answers: int
    gold_accuracy: float | None
    median_seconds: float | None
    paused: bool
    paused_reason: str
    sensitivity: tuple[float, float, float] | None = None
    specificity: tuple[float, float, float] | None = None
    weight: float | None = None


@dataclass(frozen=True)
class QueueHealth:
    pending_requests: int
    judgments_outstanding: int  # counted judgments still needed by pending requests
    leased_now: int  # live leases (requests and gold items)
    stuck: int  # pending requests no active annotator can answer any more
    resolved: int
    answers_last_hour: int
    answers_last_day: int
    agreement: dict[str, Any] = field(default_factory=dict)
    annotators: list[AnnotatorRow] = field(default_factory=list)  # by username
    # The annotator model behind ``model_snapshot`` (the latest stored; ``None`` before any
    # estimation with judgments): its method and the level of the annotators' intervals.
    model_method: str = ""
    model_level: float | None = None
    model_snapshot: int | None = None
    # A closed pool with fewer annotators at work than its looks need (the snapshot says so).
    too_few_annotators: bool = False
    look_annotators: int | None = None


def queue_health(*, task: Task) -> QueueHealth:
    """The organizer's view of the queue: depth, leases, stuck items, throughput, agreement,
    and one row per annotator (answers, gold accuracy, median time, pause)."""
    now = timezone.now()
    requests = VerificationRequest.objects.filter(task=task)
    pending = requests.filter(state=VerificationRequest.State.PENDING)
    outstanding = sum(
        max(0, r - c) for r, c in pending.values_list("judgments_required", "judgments_counted")
    )
    judgments, gold = _answers(task)

    def answered_since(moment: datetime) -> int:
        return (
            judgments.filter(created_at__gte=moment).count()
            + gold.filter(created_at__gte=moment).count()
        )

    fit = (
        LabelModelFit.objects.filter(task=task)
        .select_related("snapshot")
        .only("annotators", "level", "snapshot__version", "snapshot__details")
        .first()
    )
    model = (fit.snapshot.details or {}).get("label_model") if fit is not None else None
    return QueueHealth(
        pending_requests=pending.count(),
        judgments_outstanding=outstanding,
        leased_now=Assignment.objects.filter(
            task=task, state=Assignment.State.ACTIVE, expires_at__gt=now
        ).count(),
        stuck=len(stuck_items(task=task)),
        resolved=requests.filter(state=VerificationRequest.State.RESOLVED).count(),
        answers_last_hour=answered_since(now - timedelta(hours=1)),
        answers_last_day=answered_since(now - timedelta(days=1)),
        agreement=task_agreement(task=task).as_dict(),
        annotators=_annotator_rows(task, now, fit.annotators if model and fit else []),
        model_method=model["method"] if model else "",
        model_level=fit.level if model and fit else None,
        model_snapshot=fit.snapshot.version if model and fit else None,
        too_few_annotators=bool(model and model.get("too_few_annotators")),
        look_annotators=model.get("look_annotators") if model else None,
    )


def pending_items(*, task: Task) -> set[int]:
    """Items (engine indices) whose requests still wait for a judgment asked of them."""
    return set(
        VerificationRequest.objects.filter(
            task=task, state=VerificationRequest.State.PENDING
        ).values_list("item__index", flat=True)
    )


def items_answered_since(*, task: Task, item_ids: list[int], version: int) -> set[int]:
    """Of ``item_ids`` (``Item`` pks), those whose answers changed after judgment-set ``version``:
    a judgment or gold answer given, or withdrawn, since. A decision that read their answers at
    ``version`` read a count that is out of date. A counted judgment not numbered yet is one
    given since (every reader numbers the ones committed before it reads)."""
    since = Q(seq__gt=version) | Q(withdrawn_seq__gt=version)
    judged = Judgment.objects.filter(
        since | Q(counted=True, seq=None), request__task=task, request__item_id__in=item_ids
    ).values_list("request__item_id", flat=True)
    gold = GoldAnswer.objects.filter(
        since, gold__task=task, gold__item_id__in=item_ids
    ).values_list("gold__item_id", flat=True)
    return set(judged) | set(gold)


def stuck_items(*, task: Task) -> set[int]:
    """Items (engine indices) of pending requests that no unpaused annotator of the task can be
    given: each has answered or skipped it, answered it as gold, or conflicts with it.

    They stay pending for organizers to decide (add annotators, lift a pause); meanwhile they do
    not hold a run back (:meth:`evaluation.kinds.open_world.state.LoadedTask.pending_in_run`).
    """
    active = _active_annotators(task)
    requests = VerificationRequest.objects.filter(
        task=task, state=VerificationRequest.State.PENDING
    )
    pending = dict(requests.values_list("pk", "item__index"))
    if not active:
        return set(pending.values())
    blocked = _barred(task, requests, active)
    # (A request that turned pending meanwhile is left for the next look.)
    return {pending[pk] for pk, users in blocked.items() if pk in pending and active <= users}


def annotators_left(*, task: Task, item_ids: list[int]) -> dict[int, int]:
    """Per item of ``item_ids`` (``Item`` pks) that has a request: how many unpaused annotators
    of the task could still be given it (as :func:`stuck_items` decides)."""
    active = _active_annotators(task)
    requests = VerificationRequest.objects.filter(task=task, item_id__in=item_ids)
    items = dict(requests.values_list("pk", "item_id"))
    blocked = _barred(task, requests, active) if active else {}
    return {item: len(active - blocked.get(pk, set())) for pk, item in items.items()}


def _barred(
    task: Task, requests: QuerySet[VerificationRequest], active: set[int]
) -> dict[int, set[int]]:
    """Per request of ``requests``, the ``active`` annotators who may not be given it: they
    answered or skipped it, answered its item as gold, or are (or were, since the task was
    created) in a team that conflicts with it."""
    blocked: defaultdict[int, set[int]] = defaultdict(set)
    for request_id, user_id in (
        Judgment.objects.filter(request__in=requests, withdrawn_at=None)
        .values_list("request_id", "annotator_id")
        .iterator()
    ):
        blocked[request_id].add(user_id)
    for request_id, user_id in (
        GoldAnswer.objects.filter(gold__item__verification_request__in=requests, withdrawn_at=None)
        .values_list("gold__item__verification_request", "annotator_id")
        .iterator()
    ):
        blocked[request_id].add(user_id)
    teams = defaultdict(set)
    for team_id, user_id in conflicted_memberships(task=task, user_ids=active):
        teams[team_id].add(user_id)
    if teams:
        for request_id, team_id in (
            RequestConflict.objects.filter(request__in=requests, team_id__in=list(teams))
            .values_list("request_id", "team_id")
            .iterator()
        ):
            blocked[request_id] |= teams[team_id]
    return blocked


class _AnswerStats(TypedDict):
    total: int
    today: int
    gold: int
    right: int
    judged: int
    seconds: list[float]


def _annotator_rows(
    task: Task, now: datetime, estimated: list[dict[str, Any]]
) -> list[AnnotatorRow]:
    since = start_of_day(now)
    users = {
        u.pk: u.username
        for u in get_user_model()
        .objects.filter(
            Q(annotated_tasks=task)
            | Q(judgments__request__task=task)
            | Q(gold_answers__gold__task=task)
        )
        .distinct()
    }
    stats: defaultdict[int, _AnswerStats] = defaultdict(
        lambda: {"total": 0, "today": 0, "gold": 0, "right": 0, "judged": 0, "seconds": []}
    )
    judgments, gold = _answers(task)
    for qs, is_gold in ((judgments, False), (gold, True)):
        fields = ["annotator_id", "created_at", "seconds_spent"]
        fields += ["correct", "late"] if is_gold else []
        for row in qs.values_list(*fields).iterator(chunk_size=5000):
            s = stats[row[0]]
            s["total"] += 1
            s["today"] += row[1] >= since
            if row[2] is not None:
                s["seconds"].append(row[2])
            if is_gold:
                s["gold"] += 1
                if row[3] is not None and not row[4]:  # a late answer measures nobody
                    s["judged"] += 1
                    s["right"] += bool(row[3])
    pauses = dict(
        AnnotatorPause.objects.filter(task=task, lifted_at=None).values_list(
            "annotator_id", "reason"
        )
    )
    model = {row["annotator"]: row for row in estimated}
    rows = []
    for pk, username in users.items():
        s = stats[pk]
        m = model.get(pk, {})
        rows.append(
            AnnotatorRow(
                username=username,
                answers_total=s["total"],
                answers_today=s["today"],
                gold_answers=s["gold"],
                gold_accuracy=s["right"] / s["judged"] if s["judged"] else None,
                median_seconds=statistics.median(s["seconds"]) if s["seconds"] else None,
                paused=pk in pauses,
                paused_reason=pauses.get(pk, ""),
                sensitivity=tuple(m["sensitivity"]) if m else None,
                specificity=tuple(m["specificity"]) if m else None,
                weight=m.get("weight"),
            )
        )
    return sorted(rows, key=lambda r: r.username)


ANSWER_EXPORT_HEADER = (
    "kind",
    "item_key",
    "annotator",
    "answer",
    "counted",
    "gold_correct",
    "justification",
    "seconds_spent",
    "answered_at",
    "withdrawn_at",
    "client_id",
    "late",
)


def answers_export_rows(*, task: Task) -> Iterator[tuple[Any, ...]]:
    """Every answer given on ``task`` (judgments, then gold answers), header first, streamed.

    For organizers: kept, late, skipped and withdrawn answers are all listed (``counted``,
    ``withdrawn_at`` and ``late`` say which count: a late answer came on a lease its annotator no
    longer held); gold answers carry whether they matched the known answer.
    """
    yield ANSWER_EXPORT_HEADER
    judgments = Judgment.objects.filter(request__task=task).annotate(
        export_counted=F("counted"), export_correct=Value(None, output_field=BooleanField())
    )
    yield from _export_rows("judgment", judgments, item_key="request__item__key")
    gold = GoldAnswer.objects.filter(gold__task=task).annotate(
        export_counted=Value(False, output_field=BooleanField()), export_correct=F("correct")
    )
    yield from _export_rows("gold", gold, item_key="gold__item__key")


def _export_rows(
    kind: str, answers: QuerySet[Judgment] | QuerySet[GoldAnswer], *, item_key: str
) -> Iterator[tuple[Any, ...]]:
    """``answers`` (annotated with ``export_counted`` and ``export_correct``: a gold answer
    never counts as a judgment, a judgment has no known answer) as rows of the answers export,
    oldest first, streamed."""
    rows = answers.order_by("created_at", "id").values_list(
        item_key,
        "annotator__username",
        "answer",
        "export_counted",
        "export_correct",
        "justification",
        "seconds_spent",
        "created_at",
        "withdrawn_at",
        "client_id",
        "late",
    )
    for row in rows.iterator(chunk_size=2000):
        yield (kind, *row)
