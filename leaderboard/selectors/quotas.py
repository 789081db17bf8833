"""What a task and its teams have used: run quotas in the rolling window, refunds, the label
budget's spend, and the progress of a reference sample built in the product."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.db.models import Count, Q, QuerySet, Sum
from django.utils import timezone

from ..models import (
    Estimate,
    Item,
    ReferenceCandidate,
    ReferenceItem,
    ReferenceSample,
    Run,
    Task,
    Team,
)
from .roles import teams_of

QUOTA_WINDOW = timedelta(hours=24)

if TYPE_CHECKING:
    from .roles import AnyUser


# Runs that do not count against a quota: refused at upload, or failed by the platform (refunded).
NOT_COUNTED = (Run.State.REJECTED, Run.State.FAILED)


@dataclass(frozen=True)
class Quota:
    """A team's submissions on a task: used and allowed, in total and in the last 24 hours."""

    used_total: int
    limit_total: int
    used_today: int
    limit_today: int
    next_slot_at: datetime | None  # when a daily slot frees up (None: one is free, or never)

    @property
    def total_exhausted(self) -> bool:
        return self.used_total >= self.limit_total

    @property
    def daily_exhausted(self) -> bool:
        return self.used_today >= self.limit_today

    @property
    def exhausted(self) -> bool:
        return self.total_exhausted or self.daily_exhausted

    @property
    def remaining_total(self) -> int:
        return max(0, self.limit_total - self.used_total)

    @property
    def remaining_today(self) -> int:
        """Runs the daily limit still allows, whatever remains of the total."""
        return max(0, self.limit_today - self.used_today)

    @property
    def remaining(self) -> int:
        """Runs the team may submit now: what both limits still allow."""
        return max(0, min(self.limit_total - self.used_total, self.limit_today - self.used_today))


@dataclass(frozen=True)
class TeamQuota(Quota):
    """One of a user's teams' quota on a task, and how many of its runs were refunded."""

    team: Team
    n_refunded: int


@dataclass(frozen=True)
class UploadLimits:
    """What one run file may hold on a task: bytes (decompressed, for a gzipped file; the
    file as sent is checked against it too) and predictions (a closed pool's lines)."""

    max_bytes: int
    max_predictions: int


def upload_limits(task: Task) -> UploadLimits:
    """The limits a run upload to ``task`` is checked against: the task's, within the site's
    ``UPLOAD_MAX_BYTES``."""
    return UploadLimits(
        max_bytes=min(task.max_upload_bytes, settings.UPLOAD_MAX_BYTES),
        max_predictions=task.max_predictions_per_run,
    )


def counted_runs(*, task: Task, team: Team) -> QuerySet[Run]:
    """The team's runs on the task that count against its quota."""
    return (
        Run.objects.filter(task=task, team=team)
        .exclude(state__in=NOT_COUNTED)
        .exclude(quota_refunded=True)
    )


def quota_for(*, task: Task, team: Team, now: datetime | None = None) -> Quota:
    now = now or timezone.now()
    counted = counted_runs(task=task, team=team)
    used_total = counted.count()
    recent = list(
        counted.filter(created_at__gt=now - QUOTA_WINDOW)
        .order_by("created_at")
        .values_list("created_at", flat=True)
    )
    limit_today = task.max_runs_per_team_per_day
    next_slot_at = None
    if recent and len(recent) >= limit_today and used_total < task.max_runs_per_team:
        # The daily window slides: the slot of the run that leaves it first frees up first.
        next_slot_at = recent[len(recent) - limit_today] + QUOTA_WINDOW if limit_today else None
    return Quota(
        used_total=used_total,
        limit_total=task.max_runs_per_team,
        used_today=len(recent),
        limit_today=limit_today,
        next_slot_at=next_slot_at,
    )


def withdrawal_refunds(run: Run) -> bool:
    """Whether withdrawing ``run`` now gives its quota slot back: it still counts, no planning
    round asked anything of annotators for it and no snapshot estimated it. The stored row is
    read (a participant's copy of a run hides its rounds while the board is held)."""
    return (
        Run.objects.filter(pk=run.pk, rounds=0, quota_refunded=False)
        .exclude(state__in=NOT_COUNTED)
        .exists()
        and not Estimate.objects.filter(run_id=run.pk).exists()
    )


def refunded_runs(*, task: Task, team: Team) -> QuerySet[Run]:
    """The team's runs on the task whose quota slot was given back (failed for platform reasons,
    or withdrawn before anything was asked of annotators for them)."""
    return Run.objects.filter(task=task, team=team, quota_refunded=True)


def quotas_for_user(*, task: Task, user: AnyUser) -> list[TeamQuota]:
    """Each of the user's teams' quota on the task, and how many of its runs were refunded."""
    return [
        TeamQuota(
            **asdict(quota_for(task=task, team=team)),
            team=team,
            n_refunded=refunded_runs(task=task, team=team).count(),
        )
        for team in teams_of(user)
    ]


@dataclass(frozen=True)
class LabelSpend:
    """A task's budget (``None``: none), judgments asked of annotators, judgments in, what
    remains.

    The budget counts judgments, gold answers included (what the planner charges): every item
    drawn asks its first judgments, every further look one more. ``remaining`` is the budget
    less ``requested``; ``verified <= requested``.
    """

    budget: int | None
    verified: int
    remaining: int | None
    requested: int = 0


def label_spend(task: Task) -> LabelSpend:
    """Judgments spent on the task: asked and in on verification requests, plus gold answers
    (reached through reverse relations so this layer imports nothing above it)."""
    requests = Item.objects.filter(task=task, verification_request__isnull=False).aggregate(
        asked=Sum("verification_request__judgments_required"),
        answered=Sum("verification_request__judgments_counted"),
    )
    gold = Task.objects.filter(pk=task.pk).aggregate(
        answered=Count(
            "gold_items__answers",
            filter=Q(
                gold_items__answers__correct__isnull=False, gold_items__answers__withdrawn_at=None
            ),
        )
    )
    verified = (requests["answered"] or 0) + gold["answered"]
    requested = (requests["asked"] or 0) + gold["answered"]
    budget = task.label_budget
    remaining = None if budget is None else max(0, budget - requested)
    return LabelSpend(budget=budget, verified=verified, remaining=remaining, requested=requested)


@dataclass(frozen=True)
class ReferenceSampleStatus:
    """What the organizers see of a reference sample built in the product: the candidates
    uploaded (documents, items), the latest draw (``None`` before the first), whose counts are
    as the latest estimation resolved them, the reference sample's size, the documents the
    current sampling frame's complete draws took, and whether a further draw adds to the sample
    (else it can only replace it: the sample was uploaded as a file, or drawn from candidates
    replaced since)."""

    documents: int
    candidates: int
    sample: ReferenceSample | None
    reference: ReferenceSize
    documents_drawn: int
    adds_to_sample: bool

    @property
    def documents_left(self) -> int:
        """Documents a further draw that adds to the sample may take."""
        return self.documents - self.documents_drawn if self.adds_to_sample else self.documents


def reference_sample_status(task: Task) -> ReferenceSampleStatus:
    # A draw completes in one transaction with the reference version it writes, but each read
    # here sees the latest commit: the draw is read first and the task's reference fields after
    # it, so a draw seen complete never comes with the version before it.
    sample = ReferenceSample.objects.filter(task=task).order_by("-created_at", "-pk").first()
    task.refresh_from_db(fields=["reference_version", "reference_frame"])
    candidates = ReferenceCandidate.objects.filter(task=task).aggregate(
        items=Count("pk"), documents=Count("document", distinct=True)
    )
    size = reference_size(task)
    return ReferenceSampleStatus(
        documents=candidates["documents"],
        candidates=candidates["items"],
        sample=sample,
        reference=size,
        documents_drawn=sum(draw.size for draw in frame_draws(task)),
        adds_to_sample=size.empty or sample_is_drawn(task),
    )


def frame_draws(task: Task) -> QuerySet[ReferenceSample]:
    """The complete draws of the task's current sampling frame, earliest first."""
    return ReferenceSample.objects.filter(
        task=task, frame=task.reference_frame, state=ReferenceSample.State.COMPLETE
    ).order_by("completed_at", "pk")


def sample_is_drawn(task: Task) -> bool:
    """Whether the task's reference sample is what the complete draws of its current frame
    wrote (the latest of them wrote its current version): a further draw adds to it."""
    latest = frame_draws(task).last()
    return latest is not None and latest.reference_version == task.reference_version


# The smallest reference sample a run's recall is presented on, and an open-world task may open
# with. Recall is a ratio over the reference items, its variance resampled over their documents
# (``evaluation.core.reference``): at 30 items a recall of 0.8 is +-0.14 at 95%, and with fewer
# than 10 documents the cluster-robust variance has too few degrees of freedom to be trusted.
# An item uploaded without a group is a document of its own.
REFERENCE_MIN_ITEMS = 30
REFERENCE_MIN_DOCUMENTS = 10


@dataclass(frozen=True)
class ReferenceSize:
    """The task's current reference sample: its version, how many items and documents it holds,
    and whether that is enough to present recall on (``REFERENCE_MIN_ITEMS`` items in
    ``REFERENCE_MIN_DOCUMENTS`` documents); ``settled``: how many of its items a settled draw
    decided below the task's confidence."""

    version: int
    items: int
    documents: int
    settled: int = 0

    @property
    def enough(self) -> bool:
        return self.items >= REFERENCE_MIN_ITEMS and self.documents >= REFERENCE_MIN_DOCUMENTS

    @property
    def empty(self) -> bool:
        return self.items == 0

    @property
    def summary(self) -> str:
        """``"45 items in 12 documents"``, ``"..., 2 of them decided below the task's
        confidence"``."""
        size = (
            f"{self.items:,} item{'' if self.items == 1 else 's'} in {self.documents:,} "
            f"document{'' if self.documents == 1 else 's'}"
        )
        if self.settled:
            size += f", {self.settled:,} of them decided below the task's confidence"
        return size


def reference_size(task: Task) -> ReferenceSize:
    """The size of ``task``'s reference sample (items, and documents: an item without a group
    counts as a document of its own)."""
    counts = ReferenceItem.objects.filter(task=task).aggregate(
        items=Count("pk"),
        grouped=Count("pk", filter=~Q(group="")),
        groups=Count("group", distinct=True, filter=~Q(group="")),
        settled=Count("pk", filter=Q(settled=True)),
    )
    return ReferenceSize(
        version=task.reference_version,
        items=counts["items"],
        documents=counts["groups"] + counts["items"] - counts["grouped"],
        settled=counts["settled"],
    )
