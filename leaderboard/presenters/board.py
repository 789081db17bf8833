"""The public board and its snapshot permalinks, shaped for templates.

No statistics happen here: a board is one stored snapshot the viewer may see
(:mod:`leaderboard.selectors`), its rows in the board order (``selectors.board_order``).
Rank intervals come from the snapshot rows (``row["rank"][metric] = {"best", "worst"}``), written
by the worker; snapshots from before rank groups existed show "rank not computed".
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from typing import Generic, TypeVar

from django.core.cache import cache
from django.db.models import Count, Max, Q

from evaluation.core.measures import OPEN_MEASURES

from .. import phases, selectors
from ..board_pairs import PairComparison, board_neighbours
from ..board_text import ReferenceSupport, SnapshotTerms
from ..kinds import kind_for
from ..models import LeaderboardSnapshot, Run, Task
from .cells import METRIC_LABELS, MetricCell, RankInterval, metric_labels
from .plots import interval_plot

DEFAULT_SORT = "f1"
WIDER_THAN_UNIT = frozenset({"mcc"})  # measures whose values reach below 0
STATE_LABELS = dict(Run.State.choices)
BOARD_CACHE_SECONDS = 3600
T = TypeVar("T")


@dataclass(frozen=True)
class BoardRow:
    position: int
    run_id: int | None
    name: str
    team: str
    link: str
    state: str
    provisional: bool
    after_deadline: bool
    n_requested: int | None
    n_verified: int | None
    precision: MetricCell
    recall: MetricCell
    f1: MetricCell
    ranks: dict = field(default_factory=dict)  # metric -> RankInterval | None
    rank: RankInterval | None = None  # for the metric the board is sorted by
    # The board's columns, and the cells of those beyond precision, recall and F1 (closed pools).
    metrics: tuple[str, ...] = OPEN_MEASURES
    extra: dict = field(default_factory=dict)  # metric -> MetricCell
    state_text: str = ""  # what the state says was met (board_text.SnapshotTerms.state_text)
    baseline: bool = False  # listed as a reference point, without a rank (the snapshot's mark)

    @property
    def labels_used(self) -> int | None:
        return next(
            (c.labels_used for c in self.cells if c.labels_used is not None),
            self.precision.labels_used,
        )

    @property
    def state_label(self) -> str:
        return STATE_LABELS.get(self.state, self.state)

    @property
    def cells(self) -> tuple[MetricCell, ...]:
        return tuple(self.cell(m) for m in self.metrics)

    def cell(self, metric: str) -> MetricCell:
        return self.extra[metric] if metric in self.extra else getattr(self, metric)


@dataclass(frozen=True)
class SortLink:
    metric: str
    label: str
    active: bool


class _FromBody(Generic[T]):
    """An attribute of a :class:`Board` that is its body's (:class:`BoardBody`, read from the
    snapshot's rows on first use), under the same name."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, board: Board | None, owner: type | None = None) -> T:
        if board is None:  # the class's own attribute
            return self  # type: ignore[return-value]  # read on the class, not a board
        return getattr(board.body, self.name)


@dataclass(frozen=True)
class Board:
    """One snapshot as shown on a page (the latest published one, or a permalink).

    The body (rows, plot, methods) is read from the snapshot's rows only when used: a page whose
    rendered body is cached under ``cache_key`` never loads the rows at all.
    """

    task: Task
    snapshot: LeaderboardSnapshot  # loaded without its rows
    sort: str
    n_snapshots: int  # snapshots the viewer may see
    latest_version: int | None  # the newest one the viewer may see
    cache_key: str  # covers everything the body shows
    # run id -> (name, link, late, withdrawn)
    live: dict = field(default_factory=dict, repr=False)
    metrics: tuple[str, ...] = OPEN_MEASURES  # the board's columns (a closed pool's measures)
    labels: dict = field(default_factory=lambda: dict(METRIC_LABELS))  # metric -> its name

    @cached_property
    def body(self) -> BoardBody:
        body = cache.get(self.cache_key)
        if body is None:
            rows, details = (
                LeaderboardSnapshot.objects.filter(pk=self.snapshot.pk)
                .values_list("rows", "details")
                .get()
            )
            body = _body(
                snapshot_rows=rows,
                details=details,
                terms=SnapshotTerms.of(self.task, self.snapshot, details),
                sort=self.sort,
                live=self.live,
                metrics=self.metrics,
                labels=self.labels,
            )
            cache.set(self.cache_key, body, BOARD_CACHE_SECONDS)
        return body

    rows = _FromBody[list[BoardRow]]()
    n_withdrawn = _FromBody[int]()  # runs of the snapshot left out: withdrawn since
    methods = _FromBody[dict[str, str]]()
    ranking = _FromBody[dict]()
    labels_corrected = _FromBody[bool]()
    too_few_annotators = _FromBody[bool]()
    look_annotators = _FromBody[int | None]()
    ranks_computed = _FromBody[bool]()
    # Neighbouring ranked runs compared (the pair view), in the board's order.
    pairs = _FromBody[list[PairComparison]]()
    plot_svg = _FromBody[str]()
    terms = _FromBody[SnapshotTerms]()

    @property
    def ranked_by_pairs(self) -> bool:
        """The ranks come from paired differences (else from each run's interval, Bonferroni:
        the ``published`` design, and snapshots from before)."""
        return str(self.ranking.get("method", "")).startswith("paired-differences")

    @property
    def reference(self) -> ReferenceSupport | None:
        """The reference sample recall rests on (``None`` on a closed pool: it needs none)."""
        return self.body.terms.reference

    @property
    def confidence_percent(self) -> str:
        return f"{self.snapshot.confidence * 100:g}%"

    @property
    def is_latest(self) -> bool:
        return self.latest_version is None or self.snapshot.version >= self.latest_version

    @property
    def sort_label(self) -> str:
        return self.labels[self.sort]

    @property
    def sort_links(self) -> list[SortLink]:
        return [SortLink(m, self.labels[m], m == self.sort) for m in self.metrics]

    @property
    def ranking_text(self) -> str:
        """How the rank intervals were made, from ``details["ranking"]`` (empty if unknown)."""
        ranking = self.ranking
        if not ranking:
            return ""
        parts = []
        if ranking.get("method"):
            parts.append(str(ranking["method"]))
        for key, label in (
            ("family_level", "family-wise level"),
            ("interval_level", "pairwise interval level"),
        ):
            value = ranking.get(key)
            if isinstance(value, (int, float)):
                parts.append(f"{label} {value * 100:g}%")
        return ", ".join(parts)


def parse_sort(value, metrics: tuple[str, ...] = OPEN_MEASURES) -> str:
    if value in metrics:
        return value
    return DEFAULT_SORT if DEFAULT_SORT in metrics else metrics[0]


def _methods(
    rows: list[BoardRow], metrics: tuple[str, ...] = OPEN_MEASURES, labels: dict | None = None
) -> dict[str, str]:
    labels = labels or METRIC_LABELS
    methods = {}
    for metric in metrics:
        names = sorted({r.cell(metric).method for r in rows if r.cell(metric).method})
        if names:
            methods[labels[metric]] = ", ".join(names)
    return methods


def _live_runs(task: Task) -> dict[int, tuple[str, str, bool, bool]]:
    """Names and links as the teams last edited them, whether each run came after the
    deadline as it stands now, and whether it was withdrawn (one query, whatever the number of
    runs)."""
    return {
        pk: (name, link, late, state == Run.State.WITHDRAWN)
        for pk, name, link, late, state in Run.objects.filter(task=task).values_list(
            "pk", "name", "link", "after_deadline", "state"
        )
    }


def _cache_key(
    task: Task,
    snapshot: LeaderboardSnapshot,
    sort: str,
    live: dict,
    metrics: tuple[str, ...],
    labels: dict | None = None,
) -> str:
    """Everything a board's body depends on: the (immutable) snapshot, the sort, live names,
    links and late marks, the columns and their names, and the task's target (what a snapshot
    stored before it kept its own is read against)."""
    shown = repr(
        (sorted(live.items()), metrics, sorted((labels or {}).items()), task.target_half_width)
        if metrics != OPEN_MEASURES
        else (sorted(live.items()), task.target_half_width)
    )
    names = hashlib.sha1(shown.encode(), usedforsecurity=False)
    stamp = snapshot.created_at.timestamp() if snapshot.created_at else 0
    return (
        f"lb:board:{task.pk}:{snapshot.pk}:{snapshot.version}:{stamp}:{sort}:"
        f"{names.hexdigest()[:20]}"
    )


def safe_link(url: str) -> str:
    """``url`` if it is an http(s) URL, else empty (a ``javascript:`` link is never rendered)."""
    url = (url or "").strip()
    lowered = url.lower()
    if lowered.startswith(("http://", "https://")) and not any(c in url for c in "\r\n\t "):
        return url
    return ""


@dataclass(frozen=True)
class BoardBody:
    """The part of a board computed from the snapshot's rows (cached: snapshots never change)."""

    rows: list[BoardRow]
    methods: dict[str, str]
    ranking: dict
    ranks_computed: bool
    plot_svg: str
    terms: SnapshotTerms
    # The labels came from fallible annotators, corrected for their estimated error rates.
    labels_corrected: bool = False
    # A closed pool whose looks lack annotators (fewer than three have answered): recall is biased.
    too_few_annotators: bool = False
    look_annotators: int | None = None
    n_withdrawn: int = 0  # rows left out: their runs were withdrawn after the snapshot
    pairs: list[PairComparison] = field(default_factory=list)  # neighbours on the board


def _body(
    *,
    snapshot_rows,
    details,
    terms: SnapshotTerms,
    sort: str,
    live: dict,
    metrics: tuple[str, ...] = OPEN_MEASURES,
    labels: dict | None = None,
) -> BoardBody:
    labels = labels or METRIC_LABELS
    listed = [r for r in snapshot_rows or [] if isinstance(r, dict)]
    # A run withdrawn after the snapshot was computed leaves every board page at once (its
    # ranks stay those of the snapshot until the next one).
    shown = [r for r in listed if not live.get(r.get("run"), (None, "", False, False))[3]]
    raw = selectors.board_order(shown, sort)
    rows = []
    for position, row in enumerate(raw, start=1):
        run_id = row.get("run") if isinstance(row.get("run"), int) else None
        name, link, late, _ = live.get(run_id, (None, "", False, False))
        rank_data = row.get("rank")
        if not isinstance(rank_data, dict):
            rank_data = {}
        ranks = {m: RankInterval.from_row(rank_data.get(m)) for m in metrics}
        cells = {m: MetricCell.from_row(row.get(m), terms.reference_note(m)) for m in metrics}
        state = str(row.get("state", ""))
        rows.append(
            BoardRow(
                position=position,
                run_id=run_id if run_id in live else None,
                name=str(name if name is not None else row.get("name", "")),
                team=str(row.get("team", "")),
                link=safe_link(link),
                state=state,
                provisional=bool(row.get("provisional")),
                after_deadline=late,
                n_requested=row.get("n_requested"),
                n_verified=row.get("n_verified"),
                precision=cells.get("precision") or MetricCell.from_row(None),
                recall=cells.get("recall") or MetricCell.from_row(None),
                f1=cells.get("f1") or MetricCell.from_row(None),
                ranks=ranks,
                rank=ranks.get(sort),
                metrics=metrics,
                extra={m: cell for m, cell in cells.items() if m not in OPEN_MEASURES},
                state_text=terms.row_state_text(row),
                baseline=row.get("baseline") is True,
            )
        )
    details = details if isinstance(details, dict) else {}
    model = details.get("label_model")
    ranking = details.get("ranking") if isinstance(details.get("ranking"), dict) else {}
    # The plot's axis is [0, 1]: MCC (in [-1, 1]) would be clamped there, so it gets none.
    plotted = rows and sort not in WIDER_THAN_UNIT
    plot = interval_plot(rows, sort=sort, metric_label=labels[sort]) if plotted else ""
    family = ranking.get("family_level")
    pairs = (
        board_neighbours(
            shown,
            details,
            sort,
            confidence=float(family),
            names={r["run"]: live[r["run"]][0] for r in shown if r.get("run") in live},
        )
        if isinstance(family, (int, float))
        else []
    )
    return BoardBody(
        rows=rows,
        methods=_methods(rows, metrics, labels),
        ranking=ranking,
        ranks_computed=any(r.rank is not None for r in rows),
        plot_svg=plot,
        terms=terms,
        labels_corrected=isinstance(model, dict),
        too_few_annotators=isinstance(model, dict) and model.get("too_few_annotators") is True,
        look_annotators=model.get("look_annotators") if isinstance(model, dict) else None,
        n_withdrawn=len(listed) - len(shown),
        pairs=pairs,
    )


def build_board(
    *,
    task: Task,
    snapshot: LeaderboardSnapshot,
    sort: str,
    n_snapshots: int,
    latest_version: int | None,
) -> Board:
    """The board of ``snapshot`` (loaded without its rows). Its key covers the immutable
    snapshot, the sort and the runs' current names and links, so a cached body is never stale.
    """
    metrics = kind_for(task).board_measures(task)
    sort = parse_sort(sort, metrics)
    live = _live_runs(task)
    labels = metric_labels(task)
    return Board(
        task=task,
        snapshot=snapshot,
        sort=sort,
        n_snapshots=n_snapshots,
        latest_version=latest_version,
        cache_key=_cache_key(task, snapshot, sort, live, metrics, labels),
        live=live,
        metrics=metrics,
        labels=labels,
    )


def _board_of(task: Task, snapshots, sort: str, **version) -> Board | None:
    """The board of the newest of ``snapshots`` (or the one of ``version``), which counts
    them; ``None`` if there is none."""
    snapshot = snapshots.filter(**version).defer("rows", "details").order_by("-version").first()
    if snapshot is None:
        return None
    agg = snapshots.aggregate(n=Count("pk"), latest=Max("version"))
    return build_board(
        task=task, snapshot=snapshot, sort=sort, n_snapshots=agg["n"], latest_version=agg["latest"]
    )


def board_for(*, task: Task, sort: str = DEFAULT_SORT) -> Board | None:
    """The public board: the task's latest published snapshot; None before the first one."""
    return _board_of(task, selectors.published_snapshots(task), sort)


def snapshot_board(*, task: Task, version: int, user, sort: str = DEFAULT_SORT) -> Board | None:
    """One snapshot by version, if the viewer may see it (held ones for organizers only)."""
    return _board_of(
        task, selectors.snapshots_visible_to(task=task, user=user), sort, version=version
    )


def snapshot_list(*, task: Task, user):
    """The snapshots the viewer may see, newest first, without the rows (a list page needs
    none of them)."""
    return selectors.snapshots_visible_to(task=task, user=user).defer("rows", "details")


@dataclass(frozen=True)
class HoldStatus:
    held: bool
    n_held: int  # snapshots waiting for publication
    last_published: int | None


def hold_status(task: Task) -> HoldStatus:
    agg = LeaderboardSnapshot.objects.filter(task=task).aggregate(
        n_held=Count("pk", filter=Q(published=False)), last=Max("version", filter=Q(published=True))
    )
    return HoldStatus(
        held=phases.board_held(task), n_held=agg["n_held"], last_published=agg["last"]
    )
