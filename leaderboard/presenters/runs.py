"""The participant pages: a team's runs, one run with its scores and history.

Teams see published estimates only, and runs' progress as ``selectors.runs_seen_by`` shows it;
organizers also see held estimates, marked as held (``selectors.run_estimates_visible_to``). A
closed-pool run's precision-recall curve is the one stored with the snapshot its scores come
from (``selectors.run_curve_visible_to``): never newer than what the viewer may see. Anyone else
who may see the task sees the public page of a run on the public board
(``selectors.public_run_for``): its public details and published estimates, with its state as
the latest published snapshot lists it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from evaluation.core.measures import OPEN_MEASURES

from .. import selectors
from ..board_pairs import PairComparison, snapshot_neighbours
from ..board_text import ReferenceSupport, RunWords, SnapshotTerms
from ..ingestion import human_bytes
from ..kinds import kind_for
from ..models import LeaderboardSnapshot, Run, RunEvent, Task
from .board import STATE_LABELS, parse_sort, safe_link
from .cells import MetricCell, RankInterval, metric_labels
from .plots import history_chart, pr_curve_chart


@dataclass(frozen=True)
class SnapshotEstimate:
    """One metric of the run as one snapshot published it (drawn as a ``charts.HistoryPoint``)."""

    snapshot_version: int
    value: float | None
    low: float
    high: float


@dataclass(frozen=True)
class MetricLine:
    metric: str
    label: str
    cell: MetricCell
    rank: RankInterval | None
    history_svg: str
    n_history: int
    # The run against its neighbours on the board of ``RunPage.snapshot`` sorted by this metric
    # (the pair view; empty when the snapshot stores no pairs).
    neighbours: tuple[PairComparison, ...] = ()


@dataclass(frozen=True)
class RunPage:
    run: Run
    events: list[RunEvent]
    link: str
    can_edit: bool
    organizer: bool
    snapshot: LeaderboardSnapshot | None  # the newest snapshot with estimates the viewer may see
    lines: list[MetricLine] = field(default_factory=list)
    curve_svg: str = ""  # a closed-pool run's precision-recall curve, from ``snapshot``
    curve_points: int = 0
    state_text: str = ""  # what the run's state says was met, read against ``snapshot``
    reference: ReferenceSupport | None = None  # what recall rests on in ``snapshot``
    # The public page (``selectors.public_run_for``): public details and published scores only,
    # the run's state as ``snapshot`` lists it.
    public: bool = False
    public_state: str = ""
    can_withdraw: bool = False
    # Whether withdrawing it now would give its quota slot back (what the button says).
    withdraw_refunds: bool = False

    @property
    def held(self) -> bool:
        return self.snapshot is not None and not self.snapshot.published

    @property
    def confidence_percent(self) -> str:
        return "" if self.snapshot is None else f"{self.snapshot.confidence * 100:g}%"

    @property
    def ranks_computed(self) -> bool:
        return any(line.rank is not None for line in self.lines)

    @property
    def has_neighbours(self) -> bool:
        return any(line.neighbours for line in self.lines)


def _row_of(snapshot: LeaderboardSnapshot, run_id: int) -> dict:
    for row in snapshot.rows or []:
        if isinstance(row, dict) and row.get("run") == run_id:
            return row
    return {}


def run_page(*, run: Run, user, public: bool = False) -> RunPage:
    """The page of ``run`` for ``user``: as :func:`leaderboard.selectors.run_for` returned it,
    or, with ``public``, as :func:`leaderboard.selectors.public_run_for` did."""
    organizer = not public and selectors.is_organizer(task=run.task, user=user)
    values = list(
        selectors.run_estimates_visible_to(run=run, user=user).values(
            "metric",
            "value",
            "low",
            "high",
            "labels_used",
            "method",
            "snapshot_id",
            "snapshot__version",
        )
    )
    history: dict[str, list[SnapshotEstimate]] = defaultdict(list)
    for v in values:
        history[v["metric"]].append(
            SnapshotEstimate(v["snapshot__version"], v["value"], v["low"], v["high"])
        )
    snapshot = None
    lines: list[MetricLine] = []
    row: dict = {}
    terms = SnapshotTerms.of(run.task, None)
    if values:
        newest = values[-1]["snapshot_id"]
        snapshot = LeaderboardSnapshot.objects.get(pk=newest)
        terms = SnapshotTerms.of(run.task, snapshot)
        row = _row_of(snapshot, run.pk)
        ranks = row.get("rank")
        if not isinstance(ranks, dict):
            ranks = {}
        latest = {v["metric"]: v for v in values if v["snapshot_id"] == newest}
        labels = metric_labels(run.task)
        measures = kind_for(run.task).board_measures(run.task)
        neighbours = snapshot_neighbours(snapshot, measures, run.pk)
        for metric in measures:
            if metric not in latest:
                continue
            lines.append(
                MetricLine(
                    metric=metric,
                    label=labels[metric],
                    cell=MetricCell.from_row(latest[metric], terms.reference_note(metric)),
                    rank=RankInterval.from_row(ranks.get(metric)),
                    history_svg=history_chart(history[metric]),
                    n_history=len(history[metric]),
                    neighbours=tuple(neighbours.get(metric, ())),
                )
            )
    curve_svg, curve_points = "", 0
    if snapshot is not None and kind_for(run.task).has_curves:
        curve = selectors.run_curve_visible_to(run=run, user=user, snapshot=snapshot)
        if curve is not None:
            curve_svg, curve_points = pr_curve_chart(curve.data)
    can_withdraw = (
        not public
        and run.state in Run.WITHDRAWABLE
        and selectors.may_withdraw_run(run=run, user=user)
    )
    return RunPage(
        run=run,
        events=run.visible_events,
        link=safe_link(run.link),
        can_edit=not public and selectors.may_edit_run(run=run, user=user),
        organizer=organizer,
        snapshot=snapshot,
        lines=lines,
        curve_svg=curve_svg,
        curve_points=curve_points,
        # The public sees the state the published snapshot lists, never the run's live one.
        state_text=terms.row_state_text(row) if public else terms.run_state_text(run, row),
        reference=terms.reference,
        public=public,
        public_state=_public_state(run) if public else "",
        can_withdraw=can_withdraw,
        withdraw_refunds=can_withdraw and selectors.withdrawal_refunds(run),
    )


def _run_words(task: Task, user, published: LeaderboardSnapshot | None) -> RunWords:
    """The runs' words as ``user`` sees them: against the latest published snapshot, or the
    newest one for an organizer, who sees runs as they are (held snapshots included)."""
    newest = selectors.snapshots_visible_to(task=task, user=user).values_list("pk", flat=True)
    newest_pk = newest.first()
    if newest_pk is None or (published is not None and newest_pk == published.pk):
        return RunWords.of(task, published)
    return RunWords.of(task, LeaderboardSnapshot.objects.get(pk=newest_pk))


def _public_state(run: Run) -> str:
    """The run's state as the public board shows it (the latest published snapshot's row)."""
    snapshot = selectors.latest_published_snapshot(run.task)
    row = _row_of(snapshot, run.pk) if snapshot is not None else {}
    return STATE_LABELS.get(row.get("state", ""), str(row.get("state", "")))


@dataclass(frozen=True)
class RunListRow:
    run: Run
    cells: dict  # metric -> MetricCell, from the latest published snapshot
    provisional: bool
    metrics: tuple[str, ...] = OPEN_MEASURES  # the task's, in board order
    state_text: str = ""  # what its state says was met (the newest snapshot the viewer sees)

    @property
    def scored(self) -> bool:
        return bool(self.cells)

    @property
    def ordered_cells(self) -> list[MetricCell]:
        return [self.cells[m] for m in self.metrics if m in self.cells]


@dataclass(frozen=True)
class MyRuns:
    rows: list[RunListRow]
    quotas: list[selectors.TeamQuota]
    snapshot_version: int | None
    metrics: tuple[str, ...] = OPEN_MEASURES  # the task's measures
    labels: dict = field(default_factory=dict)  # metric -> its name
    sort: str | None = None  # None: newest first
    reference: ReferenceSupport | None = None  # what recall rests on in the published snapshot

    @property
    def columns(self) -> list[tuple[str, str, bool]]:
        """``(metric, label, sorted by it)`` per score column."""
        return [(m, self.labels.get(m, m), m == self.sort) for m in self.metrics]


def my_runs(*, task: Task, user, sort: str | None = None) -> MyRuns:
    """The team's runs (all runs for organizers) with published scores and the teams' quotas;
    newest first, or by ``sort`` (one of the task's measures) as the board orders its rows
    (``selectors.board_order``: highest first, runs without a published value last, then
    newest first). Raises ``ValueError`` for a ``sort`` the task does not show."""
    metrics = kind_for(task).board_measures(task)
    if sort is not None and sort != parse_sort(sort, metrics):
        raise ValueError(f"Unknown sort {sort!r}: use one of {', '.join(metrics)}.")
    runs = list(selectors.runs_seen_by(task=task, user=user))
    snapshot = selectors.latest_published_snapshot(task)
    by_run = {}
    if snapshot is not None:
        by_run = {r.get("run"): r for r in snapshot.rows or [] if isinstance(r, dict)}
    terms = SnapshotTerms.of(task, snapshot)
    words = _run_words(task, user, snapshot)
    if sort is not None:
        order = selectors.board_order(
            [{**by_run.get(run.pk, {}), "name": "", "run": -run.pk} for run in runs], sort
        )
        position = {-row["run"]: k for k, row in enumerate(order)}
        runs.sort(key=lambda run: position[run.pk])
    rows = []
    for run in runs:
        row = by_run.get(run.pk, {})
        cells = {
            m: MetricCell.from_row(row[m], terms.reference_note(m))
            for m in metrics
            if isinstance(row.get(m), dict)
        }
        rows.append(
            RunListRow(
                run=run,
                cells=cells,
                provisional=bool(row.get("provisional")),
                metrics=metrics,
                state_text=words.state_text(run),
            )
        )
    return MyRuns(
        rows=rows,
        quotas=selectors.quotas_for_user(task=task, user=user),
        snapshot_version=snapshot.version if snapshot else None,
        metrics=metrics,
        labels=metric_labels(task),
        sort=sort,
        reference=terms.reference,
    )


@dataclass(frozen=True)
class SubmitLimits:
    """What the submit page says before an upload: the file's limits (checked in the browser
    too, in the server's words) and each team's quota."""

    max_bytes: int
    max_predictions: int
    quotas: list[selectors.TeamQuota]

    @property
    def max_bytes_text(self) -> str:
        return human_bytes(self.max_bytes)


def submit_limits(*, task: Task, user) -> SubmitLimits:
    limits = selectors.upload_limits(task)
    return SubmitLimits(
        max_bytes=limits.max_bytes,
        max_predictions=limits.max_predictions,
        quotas=selectors.quotas_for_user(task=task, user=user),
    )
