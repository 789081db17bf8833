"""Paired differences of a closed pool's runs: the joint normal of every run's measures.

Every run of a closed pool is estimated from one set of labels on one pool: a run's true
positives ``tp`` and false negatives ``fn`` are its verified positives plus, per cell
(:mod:`.cells`), its unverified items there times the rate of its domain (its predicted
positives, or negatives, in the cell; :mod:`.totals`). Two runs that predict the same item
estimate that item's label with the same evidence, so the difference of their measures rests on
the items where they disagree, and its variance is far below the sum of their variances. This
module gives, per measure, the ``K x K`` covariance of the runs' estimates as
:class:`..paired.PairedDifferences`, which :func:`..ranking.paired_rank_intervals` ranks as it
ranks an open task's.

Method
------
Each measure is a smooth function ``g(tp, fn)`` (:mod:`.measures`); to first order a run's error
is ``sum_x g_x (yhat_x - y_x)`` over the pool, ``g_x`` its gradient for ``tp`` where the run
predicts item ``x`` and for ``fn`` where it does not, ``yhat_x`` the label the run's estimate
gives the item. The covariance of two runs is the sum over items of the products of their
pieces, so items they both count cancel in a difference. Per item (a Gram matrix of per-item
columns, hence positive semi-definite):

* an unverified item's own label: ``g sqrt(m (1 - m))``, ``m`` the rate of the run's domain in
  the item's cell (the Bernoulli part of the totals' Beta-binomial variance);
* the doubt of that rate, ``g sqrt(u) sd``, with ``u`` the domain's unverified items in the cell
  and ``sd`` its rate's posterior standard deviation: over a domain's ``u`` items these add up to
  ``g^2 u^2 var``, the totals' own term, and two runs' rate errors in a cell correlate as their
  unverified items there overlap (the same items: the same rate; disjoint: taken as
  independent, which can only widen a difference's interval, since both rates share the cell's
  other labels and prior);
* with fallible annotators, a verified item's label doubt ``g sqrt(z (1 - z))`` (``z`` the
  item's label under the run's domain), scaled per run and side so that it adds up to the
  labels' variance of that side's total (their doubt and the annotator parameters',
  :meth:`.label_noise.RunLabelValues.extra_variance`): counted once per item, shared by every
  run that counts it. With exact labels a verified item has no doubt.

Recall is ranked as each run's true positives over one estimate ``T`` of the pool's positives
(:class:`PositivesShareDifferences`): every run's true recall has the same denominator, so the
order of recalls is the order of true positives, and ``T``'s doubt, which scales every
difference alike, is left out of the differences' covariance; the interval of one difference
divides that of the true positives' difference by ``T``'s interval.

Each run's own variance is then raised to its interval's normal equivalent
``((high - low) / 2z)^2`` where that is larger (:func:`..paired.joint_covariance`: the floors of
:mod:`.totals`, the exact bounds of :mod:`.precision_bounds`, the intervals drawn on the
answers' scale); the excess counts as independent between runs. Runs with the same predictions
have the same estimates: their difference is exactly 0.

What it rests on
----------------
The marginal intervals' validity under the adaptive design and the annotator model
(docs/STATISTICS.md, "Closed pools"), the delta method, and the rates of different cells being
estimated from different labels (their common logit shift per run, :func:`.totals.domain_rates`,
is not carried across cells). Checked by simulation
(``tests/evaluation/core/closed_pool/test_pool_paired.py``; docs/STATISTICS.md, "Rank intervals
from paired differences").

References
----------
C.-E. Sarndal, B. Swensson and J. Wretman, *Model Assisted Survey Sampling*, Springer, 1992,
section 5.10 (the covariance of two estimators from one sample).
N. G. Marchant and B. I. P. Rubinstein, "Needle in a haystack: label-efficient evaluation under
extreme class imbalance", KDD 2021, section 3 (the measures as functions of ``tp`` and ``fn``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ..intervals import normal_quantile
from ..paired import PairedDifferences, _variance, joint_covariance
from ..results import IntervalEstimate
from .cells import CellRates, RankCells
from .interface import MeasureEstimates
from .label_noise import PoolLabels
from .measures import measure_beta, measure_gradient
from .state import PoolState
from .totals import PoolTotals, prediction_totals

__all__ = ["PoolModelDesign", "PositivesShareDifferences", "pool_paired_differences"]


@runtime_checkable
class PoolModelDesign(Protocol):
    """A closed-pool design whose estimates rest on cells' rates (``adaptive``)."""

    beta: float

    def fitted(
        self, state: PoolState
    ) -> tuple[RankCells, CellRates, PoolLabels | None, npt.NDArray[np.float64]]: ...


def pool_paired_differences(
    design: PoolModelDesign,
    state: PoolState,
    estimates: Sequence[MeasureEstimates],
    *,
    measures: Sequence[str],
    runs: Sequence[int] | None = None,
) -> dict[str, PairedDifferences]:
    """The joint normal of ``runs``' estimates of each of ``measures`` (module docstring).

    Parameters
    ----------
    design
        The design that sampled ``state`` (``adaptive``: it offers :meth:`fitted`).
    state : PoolState
    estimates : sequence of MeasureEstimates
        ``design.estimate(state, ...)`` of every run of ``state`` (any level): each run's value
        and its interval's normal-equivalent variance.
    measures : sequence of str
        Measures of the estimates to pair.
    runs : sequence of int, optional
        Run indices (default: every run); the differences' ``runs`` are these.

    Returns
    -------
    dict
        Measure name to :class:`..paired.PairedDifferences`.
    """
    runs = list(range(state.n_runs)) if runs is None else [int(r) for r in runs]
    if len(estimates) != state.n_runs:
        raise ValueError("one estimate per run of the state is needed")
    masks = np.array([state.runs[r].predictions for r in runs], dtype=bool).reshape(
        len(runs), state.n_items
    )
    cells, rates, labels, inclusion = design.fitted(state)
    sides = _Sides(state, cells, rates, inclusion, labels, masks)
    identical = _identical(masks)
    out: dict[str, PairedDifferences] = {}
    for m in measures:
        values = np.array([estimates[r][m].value for r in runs], dtype=float)
        if m == "recall":
            out[m] = sides.recall_differences(tuple(runs), values, identical)
            continue
        variances = np.array([_variance(estimates[r][m]) for r in runs])
        gram = sides.gram(*sides.gradients(m, measure_beta(m, design.beta)))
        out[m] = PairedDifferences(
            tuple(runs), m, values, joint_covariance(variances, gram), identical
        )
    return out


@dataclass(frozen=True)
class PositivesShareDifferences(PairedDifferences):
    """Recall's joint normal as the runs' true positives over one number ``total`` of the
    pool's positives (``values`` are ``tp / total``, the covariance that of ``tp`` over
    ``total^2``), whose order is the runs' recall order whatever the pool's positives are.

    :meth:`difference` gives the interval of the difference of two runs' recalls: that of
    their true positives' difference, at ``level``, over the interval of the pool's
    positives at ``level`` (``total`` with standard error ``total_se``, at least
    ``total_floor``), so that it excludes 0 exactly when the difference of true positives
    does (a union of the two intervals' errors: its coverage is at least ``2 level - 1``).
    """

    total: float = math.nan
    total_se: float = 0.0
    total_floor: float = 0.0

    def difference(self, a: object, b: object, *, level: float) -> IntervalEstimate:
        on_tp = super().difference(a, b, level=level)
        if not math.isfinite(on_tp.value) or not self.total > 0:
            return on_tp
        half = normal_quantile(level) * self.total_se
        high_total = self.total + half
        low_total = max(self.total - half, self.total_floor)
        # In true positives over ``total``: the difference's bounds, each divided by the end
        # of the positives' interval that moves it furthest from 0.
        low_tp, high_tp = on_tp.low * self.total, on_tp.high * self.total
        lows = [low_tp / t for t in (low_total, high_total) if t > 0]
        highs = [high_tp / t for t in (low_total, high_total) if t > 0]
        low = min(lows) if len(lows) == 2 else -1.0
        high = max(highs) if len(highs) == 2 else 1.0
        return IntervalEstimate(on_tp.value, max(low, -1.0), min(high, 1.0), level, self.method, 0)


class _Sides:
    """Every run's two domains (predicted positives, side 1; negatives, side 0) per cell: the
    unverified items, their rate's mean and variance, and the verified items' labels."""

    def __init__(
        self,
        state: PoolState,
        cells: RankCells,
        rates: CellRates,
        inclusion: npt.NDArray[np.float64],
        labels: PoolLabels | None,
        masks: npt.NDArray[np.bool_],
    ) -> None:
        self.n_items = state.n_items
        self.masks = masks
        # Side 1 is the run's predictions as the design estimates them; side 0 the same
        # estimate of the complement (its ``tp`` is the run's ``fn``, its domains the run's).
        self.totals: tuple[PoolTotals, PoolTotals] = (
            prediction_totals(state, cells, rates, inclusion, ~masks, labels),
            prediction_totals(state, cells, rates, inclusion, masks, labels),
        )
        self.tp = self.totals[1].tp
        self.fn = self.totals[0].tp
        self.pp = self.totals[1].pp
        unverified = ~state.labelled
        self.cell = cells.of_item
        voted = cells.voted[cells.of_item]
        self.voted_open = np.flatnonzero(unverified & voted)
        # An unvoted cell is every run's predicted negatives (no run predicts its items).
        self.unvoted_cells = np.flatnonzero(~cells.voted)
        self.verified = np.flatnonzero(state.labelled)
        # With exact labels the pool holds at least the positives among its verified items.
        exact = labels is None
        self.verified_positives = float(np.count_nonzero(state.labels == 1)) if exact else 0.0
        self.label_values = (
            None
            if labels is None
            else np.array([labels.for_run(mask).value[self.verified] for mask in masks])
        )

    def gradients(
        self, measure: str, beta: float
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """Per run, the derivatives of ``measure`` with respect to ``tp`` and ``fn`` (0 where
        undefined)."""
        gradient = measure_gradient(
            measure, self.tp, self.fn, pp=self.pp, n=self.n_items, beta=beta
        )
        d_tp, d_fn = (np.nan_to_num(d) for d in gradient)
        return d_tp, d_fn

    def recall_differences(
        self,
        runs: tuple[object, ...],
        values: npt.NDArray[np.float64],
        identical: npt.NDArray[np.bool_],
    ) -> PositivesShareDifferences:
        """Recall as each run's true positives over one estimate of the pool's positives,
        ``tp_a / T``, with the covariance of ``tp`` over ``T^2``
        (:class:`PositivesShareDifferences`).

        Every run's true recall is its true positives over the pool's one number of positives,
        so the runs' recall order is their true positives' order, which the items where they
        differ decide: ``T``'s doubt scales every difference alike and cannot reverse one
        (with each run's own ``tp / (tp + fn)`` it entered every difference, and the recall
        ranks of abt-buy at 500 labels ordered almost no pair). ``T`` is the mean of the runs'
        estimated positives (its variance that of the mean of their linearised errors, each
        run's own raised to its totals' interval variances), at least the positives verified
        (:attr:`PositivesShareDifferences.total_floor`); ``nan`` where ``values`` are."""
        total = float(np.mean(self.tp + self.fn))
        scale = 1.0 / total if total > 0 else 0.0
        shares = np.where(np.isfinite(values), self.tp * scale, np.nan)
        on_tp = self.totals[1].tp_interval_variance * scale * scale
        zero = np.zeros_like(self.tp)
        cov = joint_covariance(on_tp, self.gram(np.full_like(self.tp, scale), zero))
        ones = np.ones_like(self.tp)
        own = self.totals[1].tp_interval_variance + self.totals[0].tp_interval_variance
        positives = joint_covariance(own, self.gram(ones, ones))
        total_se = math.sqrt(max(float(positives.mean()), 0.0))
        return PositivesShareDifferences(
            runs,
            "recall",
            shares,
            cov,
            identical,
            total=total,
            total_se=total_se,
            total_floor=self.verified_positives,
        )

    def gram(
        self, d_tp: npt.NDArray[np.float64], d_fn: npt.NDArray[np.float64]
    ) -> npt.NDArray[np.float64]:
        """``K x K`` linearised covariance of the runs' estimates of a measure whose derivatives
        with respect to ``tp`` and ``fn`` are ``d_tp`` and ``d_fn`` (per run)."""
        k = self.masks.shape[0]
        gram = np.zeros((k, k))
        # Voted cells: one column per unverified item, each run on its own side.
        items = self.voted_open
        cell = self.cell[items]
        side = self.masks[:, items]
        slope = np.where(side, d_tp[:, None], d_fn[:, None])
        mean, var, unv = self._rates(cell, side)
        own = slope * np.sqrt(mean * (1.0 - mean))
        rate = slope * np.sqrt(unv * var)
        gram += own @ own.T + rate @ rate.T
        # Unvoted cells: every run counts every item as a predicted negative; per cell, ``u``
        # items alike.
        u, m, v = (
            np.array([self.totals[0].tp_rates[r][q] for r in range(k)])[:, self.unvoted_cells]
            for q in range(3)
        )
        own_c = d_fn[:, None] * np.sqrt(u * m * (1.0 - m))
        rate_c = d_fn[:, None] * u * np.sqrt(v)
        gram += own_c @ own_c.T + rate_c @ rate_c.T
        if self.label_values is not None:
            gram += self._label_gram(d_tp, d_fn)
        return gram

    def _rates(
        self, cell: npt.NDArray[np.int64], side: npt.NDArray[np.bool_]
    ) -> tuple[npt.NDArray[np.float64], ...]:
        """Per run and item (``K x items``): its domain's rate mean and variance, and the
        domain's unverified items in the item's cell."""
        mean, var, unverified = (np.empty(side.shape) for _ in range(3))
        for r in range(side.shape[0]):
            neg, pos = self.totals[0].tp_rates[r], self.totals[1].tp_rates[r]
            unverified[r] = np.where(side[r], pos[0][cell], neg[0][cell])
            mean[r] = np.where(side[r], pos[1][cell], neg[1][cell])
            var[r] = np.where(side[r], pos[2][cell], neg[2][cell])
        return mean, var, unverified

    def _label_gram(
        self, d_tp: npt.NDArray[np.float64], d_fn: npt.NDArray[np.float64]
    ) -> npt.NDArray[np.float64]:
        """The verified items' label doubt, per run and side scaled to the labels' variance."""
        assert self.label_values is not None
        z = self.label_values
        side = self.masks[:, self.verified]
        doubt = z * (1.0 - z)
        scale = np.zeros(side.shape)
        for s, totals in ((1, self.totals[1]), (0, self.totals[0])):
            on = side == bool(s)
            total = np.where(on, doubt, 0.0).sum(axis=1)
            label_var = (
                totals.tp_label_variance
                if totals.tp_label_variance is not None
                else np.zeros(total.size)
            )
            with np.errstate(invalid="ignore", divide="ignore"):
                per_doubt = np.where(total > 0, label_var / total, 0.0)
            scale = np.where(on, per_doubt[:, None], scale)
        slope = np.where(side, d_tp[:, None], d_fn[:, None])
        pieces = slope * np.sqrt(doubt * scale)
        gram: npt.NDArray[np.float64] = pieces @ pieces.T
        return gram


def _identical(masks: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
    """``K x K``: the runs predict the same items."""
    packed = [np.packbits(mask).tobytes() for mask in masks]
    k = len(packed)
    same = np.eye(k, dtype=bool)
    for i in range(k):
        for j in range(i + 1, k):
            if packed[i] == packed[j]:
                same[i, j] = same[j, i] = True
    return same
