"""A run's estimated precision-recall curve on a closed pool, from the shared labels.

The run's scores ``s`` define, for every threshold ``t``, the predictions ``s >= t``; each is a run
of its own as far as the estimator is concerned. A design draws the curve with its own estimator
at each threshold (:meth:`.interface.PoolDesign.curve`, :class:`ThresholdCurves`); the passive
design's is its simple random sample's counts at each threshold
(:meth:`.passive.PassiveDesign.threshold_estimates`). The adaptive design's: its true positives
``tp(t)`` (positives with
``s >= t``) and false negatives ``fn(t)`` (positives with ``s < t``) are estimated exactly as the
adaptive design estimates a run's totals (:func:`.adaptive.prediction_totals`: verified positives
plus, per cell, the unverified items times the rate of the domain's items there, from the
verified items' importance-weighted Hajek rates), with the same Beta-binomial variances; precision
``tp / pp(t)`` and recall ``tp / (tp + fn)`` and their intervals are those of
:meth:`.adaptive.AdaptivePoolDesign.estimate` for that run (delta method, Beta-type interval on
the effective number of trials). So the curve passes exactly through the run's own estimates at
the threshold its predictions use, and with every item verified it is the true curve.

The intervals are pointwise (each at ``level``), not a band for the whole curve.

References
----------
N. G. Marchant and B. I. P. Rubinstein, "Needle in a haystack: label-efficient evaluation under
extreme class imbalance", KDD 2021 (paper 000), §3 (measures as smooth functions of weighted
means; the PR curve as a family of them).
J. Davis and M. Goadrich, "The relationship between precision-recall and ROC curves", ICML 2006.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..results import IntervalEstimate
from .cells import CellRates, RankCells
from .label_noise import RunLabelValues
from .state import PoolState
from .totals import PoolTotals, domain_total, totals_of, verified_weights, weighted_sums

__all__ = [
    "PrecisionRecallCurve",
    "ThresholdCurves",
    "assemble_curve",
    "curve_thresholds",
    "operating_threshold",
    "score_threshold_totals",
]

METHOD = "pointwise"


@dataclass(frozen=True)
class PrecisionRecallCurve:
    """A run's estimated precision-recall curve: one point per threshold, highest recall first.

    Attributes
    ----------
    thresholds : tuple of float
        Increasing score thresholds; point ``k`` predicts ``score >= thresholds[k]``.
    precision, precision_low, precision_high : tuple of float
        Estimated precision at each threshold and its interval (``nan`` value where no item
        reaches the threshold; the interval is then the whole range).
    recall, recall_low, recall_high : tuple of float
        Estimated recall at each threshold and its interval.
    level : float
        Pointwise confidence level of every interval.
    method : str
        How the points and intervals were obtained, e.g.
        ``"pointwise/cell-posterior/clopper-pearson"``.
    labels_used : int
        Verified items the curve rests on.
    operating_point : int or None
        Index of the threshold at which ``score >= t`` gives exactly the run's own predictions
        (its estimates there are the run's precision and recall), if any.
    """

    thresholds: tuple[float, ...]
    precision: tuple[float, ...]
    precision_low: tuple[float, ...]
    precision_high: tuple[float, ...]
    recall: tuple[float, ...]
    recall_low: tuple[float, ...]
    recall_high: tuple[float, ...]
    level: float
    method: str
    labels_used: int
    operating_point: int | None = None

    def __len__(self) -> int:
        return len(self.thresholds)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: lists of floats, ``None`` for ``nan``."""

        def clean(values: tuple[float, ...]) -> list[float | None]:
            return [float(v) if np.isfinite(v) else None for v in values]

        return {
            "thresholds": clean(self.thresholds),
            "precision": clean(self.precision),
            "precision_low": clean(self.precision_low),
            "precision_high": clean(self.precision_high),
            "recall": clean(self.recall),
            "recall_low": clean(self.recall_low),
            "recall_high": clean(self.recall_high),
            "level": self.level,
            "method": self.method,
            "labels_used": self.labels_used,
            "operating_point": self.operating_point,
        }


def operating_threshold(scores: npt.ArrayLike, predictions: npt.ArrayLike) -> float | None:
    """The threshold ``t`` with ``predictions == (scores >= t)``, or ``None`` if there is none.

    ``t`` is the lowest score of a predicted positive (just above the top score when the run
    predicts nothing); ``None`` when an item predicted negative scores at least that.
    """
    s = np.asarray(scores, dtype=float)
    f = np.asarray(predictions, dtype=bool)
    if not f.any():
        return float(np.nextafter(s.max(), np.inf))
    t = float(s[f].min())
    return t if np.array_equal(f, s >= t) else None


def curve_thresholds(
    scores: npt.ArrayLike, *, points: int = 30, include: float | None = None
) -> npt.NDArray[np.float64]:
    """Up to ``points`` increasing thresholds at the quantiles of ``scores`` (actual scores, so
    each threshold is the lowest score of the items it predicts positive), plus ``include``.

    The quantile levels run from 0 (every item predicted positive) to ``1 - 1/points``.
    """
    if points < 2:
        raise ValueError("a curve needs at least 2 points")
    s = np.asarray(scores, dtype=float)
    levels = np.arange(points) / points
    t = np.quantile(s, levels, method="inverted_cdf")
    if include is not None:
        t = np.append(t, include)
    out: npt.NDArray[np.float64] = np.unique(t)
    return out


def score_threshold_totals(
    state: PoolState,
    cells: RankCells,
    rates: CellRates,
    inclusion: npt.ArrayLike,
    scores: npt.ArrayLike,
    thresholds: npt.ArrayLike,
    *,
    labels: RunLabelValues | None = None,
) -> PoolTotals:
    """:func:`.adaptive.prediction_totals` of the predictions ``scores >= t`` for every ``t`` of
    the increasing ``thresholds``, in one pass over the pool: each item falls in the bin of the
    thresholds it reaches, and a threshold's per-cell counts and weighted sums are the sums over
    the bins above it. ``labels``: with fallible annotators, the labels corrected for their
    error as the run whose scores these are sees them (:mod:`.label_noise`), its domains'
    information loss and the labels' variance applied to each threshold's items; at the run's
    own threshold exactly its estimate."""
    s = np.asarray(scores, dtype=float)
    t = np.asarray(thresholds, dtype=float)
    if t.ndim != 1 or np.any(np.diff(t) <= 0):
        raise ValueError("thresholds must increase")
    k = t.size
    reach = np.searchsorted(t, s, side="right")  # item i is predicted at threshold j < reach[i]
    verified = state.labelled
    positive = (
        (verified & (state.labels == 1)).astype(float)
        if labels is None
        else np.where(verified, labels.value, 0.0)
    )
    unverified = ~verified
    weight = verified_weights(state, inclusion)
    n_cells = cells.n_cells
    bins = k + 1
    key = cells.of_item * bins + reach

    def above(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """Per cell and threshold ``j``, the sum of ``values`` over items reaching ``j``."""
        by_bin = np.bincount(key, weights=values, minlength=n_cells * bins)
        by_bin = by_bin.reshape(n_cells, bins)
        return np.cumsum(by_bin[:, ::-1], axis=1)[:, ::-1][:, 1:].astype(np.float64)

    open_above = above(unverified.astype(float))
    sums_above = np.array([above(weight), above(weight * weight), above(weight * positive)])
    positives_above = above(positive).sum(axis=0)
    cell_sums = weighted_sums(cells, weight, positive)
    everywhere = cells.count(unverified)
    n_positive = float(positive.sum())
    parts = [
        [
            domain_total(
                rates,
                cell_sums,
                sums_above[:, :, j],
                open_above[:, j],
                positives_above[j],
                doubt=True,
                labels=labels,
                side=1,
                members=s >= t[j],
            ),
            domain_total(
                rates,
                cell_sums,
                cell_sums - sums_above[:, :, j],
                everywhere - open_above[:, j],
                n_positive - positives_above[j],
                labels=labels,
                side=0,
                members=s < t[j],
            ),
        ]
        for j in range(k)
    ]
    pp = np.cumsum(np.bincount(reach, minlength=bins)[::-1])[::-1][1:].astype(float)
    return totals_of(
        parts,
        pp,
        exact_labels=labels is None,
        answer_shape=(1.0, 1.0) if labels is None else labels.answer_shape,
    )


class ThresholdCurves(ABC):
    """A design's :meth:`.interface.PoolDesign.curve` from its estimates at each threshold.

    Every design draws the curve the same way: the thresholds (quantiles of the run's scores,
    with its own operating threshold, or the caller's), each threshold's precision and recall
    estimated by the design's own estimator (:meth:`threshold_estimates`), and the curve put
    together from them.
    """

    def curve(
        self,
        state: PoolState,
        run: int,
        *,
        level: float,
        points: int = 30,
        thresholds: npt.ArrayLike | None = None,
    ) -> PrecisionRecallCurve:
        """Run ``run``'s estimated precision-recall curve with pointwise intervals at ``level``
        (:meth:`.interface.PoolDesign.curve`, whose parameters these are).

        Raises ``IndexError`` for a run ``state`` does not hold and ``ValueError`` for a
        ``level`` outside (0, 1).
        """
        if not 0 <= run < state.n_runs:
            raise IndexError(f"no run {run} in a state of {state.n_runs} runs")
        if not 0.0 < level < 1.0:
            raise ValueError("level must lie strictly between 0 and 1")
        scores = state.runs[run].scores
        own = operating_threshold(scores, state.runs[run].predictions)
        t: npt.NDArray[np.float64] = (
            curve_thresholds(scores, points=points, include=own)
            if thresholds is None
            else np.unique(np.asarray(thresholds, dtype=float))
        )
        estimates = self.threshold_estimates(state, run, t, level=level)
        return assemble_curve(t, own, estimates, level=level, labels_used=state.n_labelled)

    @abstractmethod
    def threshold_estimates(
        self, state: PoolState, run: int, thresholds: npt.NDArray[np.float64], *, level: float
    ) -> Sequence[tuple[IntervalEstimate, IntervalEstimate]]:
        """Per threshold ``t`` of ``thresholds``, the precision and recall estimates (at
        ``level``) of the predictions ``scores >= t`` of run ``run``."""


def assemble_curve(
    thresholds: npt.NDArray[np.float64],
    own: float | None,
    estimates: Sequence[tuple[IntervalEstimate, IntervalEstimate]],
    *,
    level: float,
    labels_used: int,
) -> PrecisionRecallCurve:
    """The curve of ``estimates`` (per threshold, its precision and recall estimates); its
    method names the first defined estimate's (``pointwise/<method>``)."""
    methods = {e.method for pair in estimates for e in pair if e.method != "undefined"}
    hit = np.flatnonzero(thresholds == own) if own is not None else np.empty(0, np.int64)
    precision = [p for p, _ in estimates]
    recall = [r for _, r in estimates]
    return PrecisionRecallCurve(
        thresholds=tuple(float(x) for x in thresholds),
        precision=tuple(e.value for e in precision),
        precision_low=tuple(e.low for e in precision),
        precision_high=tuple(e.high for e in precision),
        recall=tuple(e.value for e in recall),
        recall_low=tuple(e.low for e in recall),
        recall_high=tuple(e.high for e in recall),
        level=float(level),
        method="/".join([METHOD, *sorted(methods)[:1]]),
        labels_used=labels_used,
        operating_point=int(hit[0]) if hit.size else None,
    )
