"""The pair view: how two neighbouring runs on a board compare, from what the worker stored.

A snapshot ranked by paired differences (an open task's, a closed pool's on the adaptive design)
stores, per measure, the difference of every pair of ranked runs at most two apart in the
board's order, with its interval at the level its rank intervals tested each pair at
(``details["ranking"]["pairs"]``: ``[above, below, difference, low, high]``, written by
``evaluation/kinds/board_pairs.py``). The interval excludes 0 exactly when the rank
intervals order the two runs, so the words are "A above B with 95% confidence" (the board's
family level: every such statement on the board holds at once with that confidence) or "not
separated". Snapshots ranked otherwise (Bonferroni: the published design, older snapshots)
store no pairs: nothing is shown. The board, the run pages and the API read pairs
here; no statistics happen (docs/STATISTICS.md, "Rank intervals from paired differences").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from .models import LeaderboardSnapshot
from .selectors import board_order, without_withdrawn

__all__ = [
    "PairComparison",
    "board_neighbours",
    "run_neighbours",
    "snapshot_neighbours",
    "stored_pairs",
]

StoredPairs = dict[str, dict[tuple[int, int], tuple[float, float, float]]]


@dataclass(frozen=True)
class PairComparison:
    """Run ``above`` (placed higher on the board by ``metric``) against run ``below``."""

    metric: str
    above: int  # run pk
    below: int
    above_name: str
    below_name: str
    difference: float  # above - below
    low: float
    high: float
    confidence: float  # the board's family level

    @property
    def separated(self) -> bool:
        """The interval excludes 0: the ranks order the two runs."""
        return self.low > 0 or self.high < 0

    @property
    def confidence_text(self) -> str:
        return f"{self.confidence * 100:g}%"

    @property
    def difference_text(self) -> str:
        return f"difference {self.difference:.3f} [{self.low:.3f}, {self.high:.3f}]"

    @property
    def text(self) -> str:
        """``"A above B with 95% confidence; difference 0.031 [0.012, 0.050]"``, or
        ``"A and B not separated at 95% confidence; ..."``."""
        if self.separated:
            upper, lower = (
                (self.above_name, self.below_name)
                if self.low > 0
                else (self.below_name, self.above_name)
            )
            claim = f"{upper} above {lower} with {self.confidence_text} confidence"
        else:
            claim = (
                f"{self.above_name} and {self.below_name} not separated at "
                f"{self.confidence_text} confidence"
            )
        return f"{claim}; {self.difference_text}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "above": self.above,
            "below": self.below,
            "above_name": self.above_name,
            "below_name": self.below_name,
            "difference": self.difference,
            "low": self.low,
            "high": self.high,
            "confidence": self.confidence,
            "separated": self.separated,
            "text": self.text,
        }


def stored_pairs(details: Any) -> StoredPairs:
    """The snapshot's stored pairs per measure, keyed ``(above, below)`` (empty when it has
    none); malformed entries are skipped."""
    ranking = details.get("ranking") if isinstance(details, dict) else None
    pairs = ranking.get("pairs") if isinstance(ranking, dict) else None
    out: StoredPairs = {}
    if not isinstance(pairs, dict):
        return out
    for metric, entries in pairs.items():
        by_pair = out.setdefault(str(metric), {})
        for entry in entries if isinstance(entries, list) else []:
            try:
                above, below, d, low, high = entry
                by_pair[(int(above), int(below))] = (float(d), float(low), float(high))
            except (TypeError, ValueError):
                continue
    return out


def _between(
    pairs: StoredPairs, metric: str, upper: int, lower: int
) -> tuple[float, float, float] | None:
    """``upper - lower`` with its interval, from either way round it was stored."""
    by_pair = pairs.get(metric, {})
    if (upper, lower) in by_pair:
        return by_pair[(upper, lower)]
    if (lower, upper) in by_pair:
        d, low, high = by_pair[(lower, upper)]
        return -d, -high, -low
    return None


def _ranked(rows: Iterable[Mapping[str, Any]], metric: str) -> list[dict[str, Any]]:
    """The rows ranked on ``metric``, in the board's order (baselines and runs without a value
    have no rank)."""
    ranked = [
        r
        for r in rows
        if isinstance(r.get("run"), int)
        and isinstance(r.get("rank"), dict)
        and isinstance(r["rank"].get(metric), dict)
    ]
    return board_order([dict(r) for r in ranked], metric)


def _compare(
    pairs: StoredPairs,
    metric: str,
    upper: Mapping[str, Any],
    lower: Mapping[str, Any],
    confidence: float,
    names: Mapping[int, str],
) -> PairComparison | None:
    found = _between(pairs, metric, upper["run"], lower["run"])
    if found is None:
        return None
    d, low, high = found
    return PairComparison(
        metric=metric,
        above=upper["run"],
        below=lower["run"],
        above_name=names.get(upper["run"], str(upper.get("name", ""))),
        below_name=names.get(lower["run"], str(lower.get("name", ""))),
        difference=d,
        low=low,
        high=high,
        confidence=confidence,
    )


def board_neighbours(
    rows: Sequence[Mapping[str, Any]],
    details: Any,
    metric: str,
    *,
    confidence: float,
    names: Mapping[int, str] | None = None,
) -> list[PairComparison]:
    """Every pair of ranked runs next to each other on the board of ``rows`` (the rows the
    viewer sees) sorted by ``metric``, with a stored difference; ``names`` overrides the rows'
    run names (the board shows the names as teams last edited them)."""
    pairs = stored_pairs(details)
    if metric not in pairs:
        return []
    ranked = _ranked(rows, metric)
    out = []
    for upper, lower in pairwise(ranked):
        found = _compare(pairs, metric, upper, lower, confidence, names or {})
        if found is not None:
            out.append(found)
    return out


def run_neighbours(
    rows: Sequence[Mapping[str, Any]],
    details: Any,
    metric: str,
    run: int,
    *,
    confidence: float,
    names: Mapping[int, str] | None = None,
) -> list[PairComparison]:
    """Run ``run`` against the ranked run just above it and the one just below it on the board
    of ``rows`` sorted by ``metric`` (those with a stored difference)."""
    pairs = stored_pairs(details)
    if metric not in pairs:
        return []
    ranked = _ranked(rows, metric)
    at = next((k for k, r in enumerate(ranked) if r["run"] == run), None)
    if at is None:
        return []
    out = []
    for upper, lower in ((at - 1, at), (at, at + 1)):
        if upper < 0 or lower >= len(ranked):
            continue
        found = _compare(pairs, metric, ranked[upper], ranked[lower], confidence, names or {})
        if found is not None:
            out.append(found)
    return out


def snapshot_neighbours(
    snapshot: LeaderboardSnapshot,
    metrics: Sequence[str],
    run: int | None = None,
    *,
    rows: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, list[PairComparison]]:
    """Per metric with stored pairs, on the board of ``rows`` (default: the snapshot's less
    the runs withdrawn since, as a board lists them): every pair of neighbours, or, with
    ``run``, that run against its neighbours. The caller has checked that the viewer may see
    ``snapshot``."""
    pairs = stored_pairs(snapshot.details)
    if not pairs:
        return {}
    if rows is None:
        rows = without_withdrawn(snapshot.task, snapshot.rows or [])
    out = {}
    for metric in metrics:
        if metric not in pairs:
            continue
        if run is None:
            found = board_neighbours(rows, snapshot.details, metric, confidence=snapshot.confidence)
        else:
            found = run_neighbours(
                rows, snapshot.details, metric, run, confidence=snapshot.confidence
            )
        out[metric] = found
    return out
