"""Reads behind the server-rendered pages: shaped for templates, computed from stored rows only.

No statistics happen here: the leaderboard is the stored snapshot, ranked by its F1 values.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Count, QuerySet

from . import selectors
from .models import Estimate, LeaderboardSnapshot, Run, Task, Team

METRICS = ("precision", "recall", "f1")
STATE_LABELS = dict(Run.State.choices)


def _fmt(x) -> str:
    return "—" if x is None else f"{x:.3f}"


@dataclass(frozen=True)
class MetricCell:
    """One metric of one run as shown on a page: ``0.712 [0.661, 0.758]``."""

    value: float | None
    low: float | None
    high: float | None
    labels_used: int | None
    method: str

    @classmethod
    def from_row(cls, data) -> MetricCell:
        data = data or {}
        return cls(value=data.get("value"), low=data.get("low"), high=data.get("high"),
                   labels_used=data.get("labels_used"), method=data.get("method") or "")

    @property
    def value_text(self) -> str:
        return _fmt(self.value)

    @property
    def interval_text(self) -> str:
        if self.low is None or self.high is None:
            return ""
        return f"[{_fmt(self.low)}, {_fmt(self.high)}]"

    @property
    def text(self) -> str:
        return f"{self.value_text} {self.interval_text}".strip()


@dataclass(frozen=True)
class BoardRow:
    rank: int
    run_id: int | None
    name: str
    team: str
    state: str
    provisional: bool
    precision: MetricCell
    recall: MetricCell
    f1: MetricCell

    @property
    def labels_used(self) -> int | None:
        return self.precision.labels_used

    @property
    def state_label(self) -> str:
        return STATE_LABELS.get(self.state, self.state)

    @property
    def cells(self) -> tuple[MetricCell, MetricCell, MetricCell]:
        return (self.precision, self.recall, self.f1)


@dataclass(frozen=True)
class Board:
    snapshot: LeaderboardSnapshot
    rows: list[BoardRow]
    methods: dict[str, str] = field(default_factory=dict)

    @property
    def confidence_percent(self) -> str:
        return f"{self.snapshot.confidence * 100:g}%"


# --- tasks --------------------------------------------------------------------------------------

def task_list(user) -> QuerySet[Task]:
    """Tasks the user may see, with their number of runs (``n_runs``)."""
    return (selectors.visible_tasks(user).annotate(n_runs=Count("runs", distinct=True))
            .order_by("-created_at"))


def visible_task(user, slug: str) -> Task | None:
    return selectors.visible_tasks(user).filter(slug=slug).first()


def is_organizer(*, task: Task, user) -> bool:
    return selectors.is_organizer(task=task, user=user)


def teams_of(user) -> list[Team]:
    """The teams a participant can submit for."""
    return list(selectors.teams_of(user))


# --- the leaderboard ----------------------------------------------------------------------------

def latest_published_snapshot(task: Task) -> LeaderboardSnapshot | None:
    return (LeaderboardSnapshot.objects.filter(task=task, published=True)
            .order_by("-version").first())


def _ranked(rows: list[dict]) -> list[BoardRow]:
    """Order by F1 (runs without an F1 last); equal F1 values share a rank."""
    def f1_of(row):
        return (row.get("f1") or {}).get("value")

    ordered = sorted(rows, key=lambda r: (f1_of(r) is None, -(f1_of(r) or 0.0),
                                          str(r.get("name", ""))))
    result, rank, previous = [], 0, object()
    for position, row in enumerate(ordered, start=1):
        if f1_of(row) != previous:
            rank, previous = position, f1_of(row)
        result.append(BoardRow(
            rank=rank, run_id=row.get("run"), name=str(row.get("name", "")),
            team=str(row.get("team", "")), state=str(row.get("state", "")),
            provisional=bool(row.get("provisional")),
            precision=MetricCell.from_row(row.get("precision")),
            recall=MetricCell.from_row(row.get("recall")),
            f1=MetricCell.from_row(row.get("f1")),
        ))
    return result


def _methods(rows: list[BoardRow]) -> dict[str, str]:
    """Each metric's interval method(s), to be stated once above the table."""
    methods = {}
    for metric in METRICS:
        names = sorted({getattr(r, metric).method for r in rows if getattr(r, metric).method})
        if names:
            methods[metric] = ", ".join(names)
    return methods


def board_for(task: Task) -> Board | None:
    """The task's latest published snapshot, ranked; None before the first one."""
    snapshot = latest_published_snapshot(task)
    if snapshot is None:
        return None
    rows = _ranked([r for r in snapshot.rows or [] if isinstance(r, dict)])
    return Board(snapshot=snapshot, rows=rows, methods=_methods(rows))


# --- runs ---------------------------------------------------------------------------------------

def runs_for_viewer(*, task: Task, user) -> QuerySet[Run]:
    """All runs of the task for its organizers (and staff), else those of the user's teams."""
    return selectors.runs_visible_to(task=task, user=user)


def run_for_viewer(*, run_id: int, user) -> Run | None:
    """The run if the user is on its team, organizes its task or is staff; else None."""
    return selectors.run_for(run_id=run_id, user=user)


def run_events(run: Run):
    return selectors.run_events(run=run)


@dataclass(frozen=True)
class RunEstimates:
    snapshot: LeaderboardSnapshot
    estimates: list[Estimate]

    @property
    def confidence_percent(self) -> str:
        return f"{self.snapshot.confidence * 100:g}%"


def latest_estimates(*, run: Run, user) -> RunEstimates | None:
    """The run's estimates in the newest snapshot that has them (None if there is none).

    Participants see published snapshots only (organizers may hold results back); organizers
    and staff see the newest one.
    """
    estimates = Estimate.objects.filter(run=run).select_related("snapshot")
    if not is_organizer(task=run.task, user=user):
        estimates = estimates.filter(snapshot__published=True)
    newest = estimates.order_by("-snapshot__version").first()
    if newest is None:
        return None
    order = {m: i for i, m in enumerate(METRICS)}
    chosen = sorted(estimates.filter(snapshot=newest.snapshot),
                    key=lambda e: order.get(e.metric, len(order)))
    return RunEstimates(snapshot=newest.snapshot, estimates=chosen)


# --- annotation ---------------------------------------------------------------------------------

def tasks_annotated_by(user) -> QuerySet[Task]:
    """Tasks the user annotates, in any state (a closed task may still have runs to verify)."""
    if not user.is_authenticated:
        return Task.objects.none()
    return Task.objects.filter(annotators=user).order_by("title")


def annotatable_task(*, slug: str) -> Task | None:
    return Task.objects.filter(slug=slug).first()


def is_annotator(*, task: Task, user) -> bool:
    return user.is_authenticated and task.annotators.filter(pk=user.pk).exists()
