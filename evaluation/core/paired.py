"""Paired differences of runs: the joint normal of every run's precision, recall and F1.

Two runs of one task are estimated from one sample: the items they share are verified once and
weigh in both estimates, and their recall rests on one reference sample. The difference of two
runs' measures therefore has far less variance than the sum of their two variances when they
share most of their items. This module gives, per measure, the joint covariance of the ``K``
runs' estimates (their values: the design's precision, ``n P / T`` for recall, F1 of the
two), from which the estimate and interval of every difference follow
(:meth:`PairedDifferences.difference`) and the simultaneous rank intervals of
:func:`.ranking.paired_rank_intervals`.

Method
------
* **precision**: the design's estimate of run ``a`` is, to first order, ``sum_x c_ax e_ax``
  over its verified items, ``c_ax`` the derivative of the estimate with respect to the item's
  label and ``e_ax`` the label minus its post-stratum's Hajek rate (:class:`PrecisionParts`).
  Over the one Poisson sample both runs use, the covariance of two runs' errors is estimated by
  ``sum_x (1 - pi_x) c_ax e_ax c_bx e_bx`` over the items they share, plus
  ``sum_x c_ax c_bx v_x`` for the labels' own uncertainty (``v_x`` the posterior variance of an
  item judged by fallible annotators, 0 for exact labels): the same linearisation the marginal
  variance rests on, with the runs' own strata, weights and the design's inclusion
  probabilities. Each run's variance is the larger of the estimator's own
  (``PrecisionParts.variance``, with every term it carries: the floors of pure strata, the
  borrowed rate of an unsampled stratum, the annotators' parameters) and its interval's normal
  equivalent ``((high - low) / 2z)^2``, but at least its linearised part; what is not in the
  linearised covariance counts as independent between runs, which can only widen a
  difference's interval.
* **recall** (``recall_model="verified"``, the default): ``R_a = n_a P_a / T``, with one
  estimate ``T`` of the true items (from the run whose recall and precision are the most
  precise), so that ``R_a - R_b = (n_a P_a - n_b P_b) / T`` rests on the verified items where
  the runs differ (the items both predict cancel), through precision's covariance, plus ``T``'s
  relative variance times ``R_a R_b`` and half a correct item of doubt per run. On febrl4 its
  differences err 5x less than the reference shares' (docs/STATISTICS.md).
  ``recall_model="reference"``: the difference of the runs' shares of the reference sample (a
  uniform sample of true items, exact): only the reference items the runs disagree on count,
  with the cluster-robust variance over the sample's groups (documents), plus half a reference
  item of doubt per run. Unbiased and free of the annotators' errors, but as wide as the
  reference sample is small.
* **F1**: with the verified recall ``F_a = 2 n_a P_a / (T + n_a)``, linear in ``P_a``; with the
  reference shares ``F(P_a, R_a)`` by the delta method (``dF/dP`` through the precision
  covariance, ``dF/dR`` through the recall one; the reference sample is drawn apart from the
  verified sample, so the two are independent).

The covariance of the ``K`` estimates is positive semi-definite (linearised Gram matrices plus a
non-negative diagonal), so every pair's difference, and every set of differences at once
(:func:`.ranking.paired_rank_intervals`), has a normal approximation. Runs with identical item
sets have identical true measures: their difference is exactly 0.

What it rests on
----------------
The marginal precision and recall estimates' validity under the adaptive design
(docs/STATISTICS.md: the stopping rule's effect is measured, not proven zero), a normal
approximation for each difference, and the reference sample being a uniform sample of the true
items. Checked by
simulation (``tests/evaluation/core/test_core_paired.py``; docs/STATISTICS.md "Rank intervals
from paired differences").
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy import sparse

from .designs.precision import CENSUS_METHOD, PrecisionParts
from .intervals import normal_quantile
from .results import IntervalEstimate, RunEstimate
from .sorted_sets import contains
from .state import TaskState

__all__ = ["PairedDifferences", "joint_covariance", "paired_differences"]

METHOD = "paired-normal"
PRECISION_VARIANCES = ("larger", "estimator", "interval")
RECALL_MODELS = ("verified", "reference")
# Items of a run compared before two runs of one size are compared in full (:func:`_identical`).
_SPREAD_POSITIONS = 64


class _Design(Protocol):
    def precision_parts(
        self, state: TaskState, runs: Sequence[int] | None = None
    ) -> list[PrecisionParts]: ...

    def estimate(
        self, state: TaskState, runs: Sequence[int] | None = None, *, level: float | None = None
    ) -> list[RunEstimate]: ...


@dataclass(frozen=True)
class PairedDifferences:
    """The joint normal of ``K`` runs' estimates of one measure.

    Attributes
    ----------
    runs : tuple
        Run identifiers, in order.
    measure : str
        ``"precision"``, ``"recall"`` or ``"f1"``.
    values : numpy.ndarray
        Point estimate per run (``nan``: undefined, the run takes part in no difference).
        Precision is the design's; recall ``n P / T`` (or the run's share of the reference
        sample); F1 of the two.
    covariance : numpy.ndarray
        ``K x K`` covariance of the estimates (positive semi-definite).
    identical : numpy.ndarray of bool
        ``K x K``: the two runs predict the same items, so every difference is exactly 0.
    method : str
        ``"paired-normal"``.
    """

    runs: tuple[object, ...]
    measure: str
    values: np.ndarray
    covariance: np.ndarray
    identical: np.ndarray
    method: str = METHOD

    @property
    def differences(self) -> np.ndarray:
        """``K x K``: ``values[a] - values[b]`` (exactly 0 for identical runs)."""
        d = self.values[:, None] - self.values[None, :]
        return np.where(self.identical, 0.0, d)

    @property
    def standard_errors(self) -> np.ndarray:
        """``K x K``: standard error of each difference (0 for identical runs)."""
        var = np.diag(self.covariance)
        v = var[:, None] + var[None, :] - 2.0 * self.covariance
        return np.where(self.identical, 0.0, np.sqrt(np.maximum(v, 0.0)))

    def difference(self, a: object, b: object, *, level: float) -> IntervalEstimate:
        """Estimate and normal interval at ``level`` of ``measure(a) - measure(b)``."""
        i, j = self.runs.index(a), self.runs.index(b)
        value = float(self.differences[i, j])
        se = float(self.standard_errors[i, j])
        if not math.isfinite(value):
            return IntervalEstimate(math.nan, -1.0, 1.0, level, "bounds-only", 0)
        half = normal_quantile(level) * se
        low, high = max(value - half, -1.0), min(value + half, 1.0)
        return IntervalEstimate(value, low, high, level, self.method, 0)


def joint_covariance(variances: np.ndarray, linearised: np.ndarray) -> np.ndarray:
    """The linearised covariance with each run's own variance on the diagonal.

    Parameters
    ----------
    variances : numpy.ndarray
        Per run (``K``): the marginal variance (``nan`` or infinite: the run is unranked and
        gets its linearised variance).
    linearised : numpy.ndarray
        ``K x K`` Gram matrix of the runs' linearised errors (positive semi-definite).

    Returns
    -------
    numpy.ndarray
        ``K x K``: ``linearised`` with its diagonal raised to ``variances`` where those are
        larger; the excess counts as independent between runs.
    """
    out = np.array(linearised, dtype=float, copy=True)
    diag = np.diag(out)
    own = np.where(np.isfinite(variances), variances, diag)
    np.fill_diagonal(out, np.maximum(diag, own))
    return out


def paired_differences(
    design: _Design,
    state: TaskState,
    runs: Sequence[int] | None = None,
    *,
    estimates: Sequence[RunEstimate] | None = None,
    precision_variance: str = "larger",
    recall_model: str = "verified",
) -> dict[str, PairedDifferences]:
    """The joint normal of ``runs``' precision, recall and F1 under ``design``.

    Parameters
    ----------
    design
        The design that sampled ``state`` (``default``: it offers ``precision_parts`` and
        ``estimate``).
    state : TaskState
    runs : sequence of int, optional
        Run indices (default: every run).
    estimates : sequence of RunEstimate, optional
        ``design.estimate(state, runs)`` when already computed (any level). Their
        ``precision_parts``, when every one carries them, are the runs' precision pieces;
        otherwise the design computes them again.
    precision_variance : str
        Each run's precision variance on the covariance's diagonal: ``"estimator"`` the
        design's own variance of the estimate (``PrecisionParts.variance``); ``"interval"``
        the normal equivalent of its interval, ``((high - low) / 2z)^2``, at the estimates'
        level (engine 1.x: it keeps a Beta-type interval's width near 0 and 1, where a normal
        one on the estimator's variance is too narrow, but is 0 for a run whose interval
        collapsed while its labels are uncertain); ``"larger"`` (default) the larger of the
        two.
    recall_model : str
        ``"verified"`` (default): each run's recall as its estimated true items over one
        estimate of the true items, ``n_a P_a / T`` (:func:`_verified_recall`), so that a
        recall difference rests on the verified items where two runs differ; ``"reference"``:
        the runs' shares of the reference sample (free of the annotators' errors, but as
        wide as the reference sample is small). Without a reference sample recall is ``nan``
        either way.

    Returns
    -------
    dict
        Measure name to :class:`PairedDifferences`.

    References
    ----------
    Sarndal, C.-E., Swensson, B. and Wretman, J. (1992). Model Assisted Survey Sampling,
    sections 5.10 (the covariance of two estimators from one sample) and 7.6 (post-strata).
    Agresti, A. (2013). Categorical Data Analysis, 3rd ed., section 11.1 (paired proportions).
    """
    if precision_variance not in PRECISION_VARIANCES:
        raise ValueError(
            f"unknown precision variance {precision_variance!r}; "
            f"choose one of {PRECISION_VARIANCES}"
        )
    if recall_model not in RECALL_MODELS:
        raise ValueError(f"unknown recall model {recall_model!r}; choose one of {RECALL_MODELS}")
    runs = list(range(state.n_runs)) if runs is None else [int(r) for r in runs]
    if estimates is None:
        estimates = design.estimate(state, runs)
    if len(estimates) != len(runs):
        raise ValueError("one estimate per run is needed")
    items = [state.runs[r].items for r in runs]
    identical = _identical(items)
    ids = tuple(runs)
    p_values = np.array([e.precision.value for e in estimates], dtype=float)
    parts = _estimated_parts(design, state, runs, estimates)
    own = np.array([_parts_variance(part) for part in parts])
    read_off = np.array([_read_off_variance(e.precision) for e in estimates])
    if precision_variance == "larger":
        p_var = np.fmax(own, read_off)
    else:
        p_var = own if precision_variance == "estimator" else read_off
    p_cov = joint_covariance(p_var, _precision_gram(parts, state))
    verified = None
    if recall_model == "verified" and state.reference.size:
        sizes = np.array([run.size for run in items], dtype=float)
        verified = _verified_recall(p_values, p_cov, sizes, estimates)
    if verified is None:
        r_values, r_cov = _reference_shares(items, state)
        f_values, f_cov = _f1_joint(p_values, p_cov, r_values, r_cov)
    else:
        r_values, r_cov, slope, rel, total = verified
        f_values, f_cov = _f1_through_precision(p_values, p_cov, slope, rel)
        # Half a correct item of doubt on each run's own count (Jeffreys' half count, as the
        # reference shares had half a reference item): a run of a few items whose precision
        # the annotators' errors bias (the known weak spot of tiny runs) would otherwise have
        # a recall, and a recall difference with another tiny run, known to within 1e-5.
        r_cov[np.diag_indices_from(r_cov)] += (0.5 / total) ** 2
        f_cov[np.diag_indices_from(f_cov)] += (1.0 / (total + sizes)) ** 2
    return {
        "precision": PairedDifferences(ids, "precision", p_values, p_cov, identical),
        "recall": PairedDifferences(ids, "recall", r_values, r_cov, identical),
        "f1": PairedDifferences(ids, "f1", f_values, f_cov, identical),
    }


def _estimated_parts(
    design: _Design, state: TaskState, runs: Sequence[int], estimates: Sequence[RunEstimate]
) -> list[PrecisionParts]:
    """Each run's precision pieces: those its estimate carries (``RunEstimate.precision_parts``:
    the estimate has just computed every run's post-strata, the largest cost of a pass), else
    the design's. What is read here does not depend on the estimate's level."""
    carried = [e.precision_parts for e in estimates]
    parts = [part for part in carried if isinstance(part, PrecisionParts)]
    return parts if len(parts) == len(carried) else design.precision_parts(state, runs)


def _parts_variance(part: PrecisionParts) -> float:
    """The estimator's own variance of a run's precision (``nan`` when it has no value)."""
    if not math.isfinite(part.estimate.value) or not math.isfinite(part.variance):
        return math.nan
    return float(part.variance)


def _verified_recall(
    p: np.ndarray, p_cov: np.ndarray, sizes: np.ndarray, estimates: Sequence[RunEstimate]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, float] | None:
    """Recall as each run's estimated true items over one estimate of the true items.

    ``R_a = n_a P_a / T`` with ``T = n_c P_c / R_c`` from the run ``c`` whose recall and
    precision are the most precise (relative variance ``rel``). Returns the values, their
    covariance ``n_a n_b Cov(P_a, P_b) / T^2 + R_a R_b rel``, ``n / T`` (the derivative of
    ``R_a`` with respect to ``P_a``), ``rel`` and ``T``; ``None`` when no run has a recall.
    """
    r = np.array([e.recall.value for e in estimates], dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.array([_variance(e.recall) for e in estimates]) / (r * r) + np.array(
            [_variance(e.precision) for e in estimates]
        ) / (p * p)
    ok = np.isfinite(rel) & (r > 0) & (p > 0)
    if not ok.any():
        return None
    c = int(np.flatnonzero(ok)[np.argmin(rel[ok])])
    total = float(sizes[c] * p[c] / r[c])
    slope = sizes / total
    values = slope * p
    cov = np.outer(slope, slope) * np.nan_to_num(p_cov) + np.outer(
        np.nan_to_num(values), np.nan_to_num(values)
    ) * float(rel[c])
    return values, cov, slope, float(rel[c]), total


# The estimates share one level or two: each quantile once (scipy's ppf took 0.05 s for the 300
# look-ups of 100 runs).
_quantile = functools.lru_cache(maxsize=16)(normal_quantile)


def _read_off_variance(estimate: IntervalEstimate) -> float:
    """A run's precision variance read off its interval: :func:`_variance`, except for a census
    (every item of the run verified, :data:`CENSUS_METHOD`), whose interval is bounds of an
    integer count with the value at one side of it (a run of five items, one of whose answers
    may be a false yes: 0.4 in [0.2, 0.6]); a normal with half its width leaves out the bound
    the count sits on, so the larger side counts. Elsewhere both sides are a smooth interval's
    and half the width is kept (the larger side widened febrl4's ranks by a third)."""
    if not estimate.method.startswith(CENSUS_METHOD) or not math.isfinite(estimate.value):
        return _variance(estimate)
    half = max(estimate.high - estimate.value, estimate.value - estimate.low)
    return (half / _quantile(estimate.level)) ** 2


def _variance(estimate: IntervalEstimate) -> float:
    """The normal-equivalent variance of a marginal interval, ``((high - low) / 2z)^2``."""
    if not math.isfinite(estimate.value):
        return math.nan
    return ((estimate.high - estimate.low) / (2.0 * _quantile(estimate.level))) ** 2


def _precision_gram(parts: Sequence[PrecisionParts], state: TaskState) -> np.ndarray:
    """Gram matrix of the runs' linearised precision errors: design part (sampled items, each
    ``sqrt(1 - pi) c e``) and label part (every verified item, ``c sqrt(v)``).

    One column per item with a non-zero piece in some run, in item order, the design parts
    before the label parts: the sparse product sums every entry over the shared items in that
    order, as it did with a column for every item of the task (twice), so the matrix is the same
    bit for bit at a third of the cost (docs/BENCHMARKS.md, the paired ranks at 100 runs x 1 M
    predictions: most of those columns were empty).
    """
    k = len(parts)
    if not k:
        return np.zeros((0, 0))
    pieces = []
    for part in parts:
        pi = part.inclusion
        design = np.sqrt(np.clip(1.0 - pi, 0.0, 1.0)) * part.coefficients * part.residuals
        label = part.coefficients * np.sqrt(np.maximum(part.variances, 0.0))
        pieces.append([(part.items[v != 0.0], v[v != 0.0]) for v in (design, label)])
    held = np.zeros(state.n_items, dtype=bool)
    for run_pieces in pieces:
        for items, _ in run_pieces:
            held[items] = True
    column = np.cumsum(held) - 1
    width = int(np.count_nonzero(held))
    indices, data, ends = [], [], [0]
    for run_pieces in pieces:
        for offset, (items, values) in zip((0, width), run_pieces, strict=True):
            indices.append(column[items] + offset)
            data.append(values)
        ends.append(ends[-1] + sum(v.size for _, v in run_pieces))
    m = sparse.csr_matrix(
        (np.concatenate(data), np.concatenate(indices), np.array(ends)), shape=(k, 2 * width)
    )
    m.sort_indices()  # a no-op when each run's items are sorted, as a task state keeps them
    gram: np.ndarray = np.asarray((m @ m.T).todense())
    return gram


def _reference_shares(
    items: Sequence[np.ndarray], state: TaskState
) -> tuple[np.ndarray, np.ndarray]:
    """Each run's share of the reference sample and their cluster-robust joint covariance."""
    ref = state.reference
    k = len(items)
    if ref.size == 0:
        return np.full(k, math.nan), np.zeros((k, k))
    _, group = np.unique(ref.groups, return_inverse=True)
    n_groups = int(group.max()) + 1
    inside = np.array([contains(run_items, ref.items) for run_items in items], dtype=float)
    shares = inside.mean(axis=1)
    totals = np.stack(
        [np.bincount(group, weights=row - row.mean(), minlength=n_groups) for row in inside]
    )
    n = ref.size
    scale = n_groups / max(n_groups - 1, 1) / (n * n)
    cov: np.ndarray = totals @ totals.T * scale
    # Half a reference item of doubt on each run's own side (Jeffreys' half count): a run that
    # holds none of the sample (a run of a few items) has a share of exactly 0 and a variance of
    # 0 otherwise, and so has the difference of two runs that no sampled item separates.
    cov[np.diag_indices(k)] += 0.5 / (n * n)
    return shares, cov


def _f1_joint(
    p: np.ndarray, p_cov: np.ndarray, r: np.ndarray, r_cov: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """F1 of each run and its delta-method joint covariance (precision and recall independent:
    they rest on two samples drawn apart)."""
    total = p + r
    with np.errstate(invalid="ignore", divide="ignore"):
        value = np.where(total > 0, 2.0 * p * r / total, 0.0)
    value = np.where(np.isfinite(total), value, math.nan)
    dp, dr = _f1_precision_slope(p, r), _f1_precision_slope(r, p)
    cov: np.ndarray = np.outer(dp, dp) * p_cov + np.outer(dr, dr) * r_cov
    return value, cov


def _f1_through_precision(
    p: np.ndarray, p_cov: np.ndarray, slope: np.ndarray, rel: float
) -> tuple[np.ndarray, np.ndarray]:
    """F1 of each run and its joint covariance when recall is ``R_a = slope_a P_a`` with
    ``slope_a = n_a / T``: then ``F1_a = 2 n_a P_a / (T + n_a)`` exactly, linear in ``P_a``
    (so a run whose estimated precision is 0 keeps its variance), and
    ``dF_a = 2 s_a / (1 + s_a) dP_a - F_a / (1 + s_a) dT / T``."""
    value = 2.0 * slope * p / (1.0 + slope)
    through = np.nan_to_num(2.0 * slope / (1.0 + slope))
    common = np.nan_to_num(value / (1.0 + slope))
    cov: np.ndarray = (
        np.outer(through, through) * np.nan_to_num(p_cov) + np.outer(common, common) * rel
    )
    return value, cov


def _f1_precision_slope(p: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``dF1/dP`` per run (0 where undefined); ``dF1/dR`` with the arguments swapped."""
    total = p + r
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = np.where(total > 0, 2.0 * r * r / (total * total), 0.0)
    return np.nan_to_num(slope)


def _identical(items: Sequence[np.ndarray]) -> np.ndarray:
    """``K x K``: the runs predict the same item sets.

    Only runs of one size with the same items at a few spread positions are compared in full
    (hashing every run's items took 0.3 s at 100 runs x 1 M predictions)."""
    k = len(items)
    same = np.eye(k, dtype=bool)
    alike: dict[tuple[int, bytes], list[int]] = {}
    for i, run_items in enumerate(items):
        step = max(1, run_items.size // _SPREAD_POSITIONS)
        key = (run_items.size, run_items[::step].tobytes() + run_items[-1:].tobytes())
        alike.setdefault(key, []).append(i)
    for group in alike.values():
        for n, i in enumerate(group):
            for j in group[n + 1 :]:
                if np.array_equal(items[i], items[j]):
                    same[i, j] = same[j, i] = True
    return same
