"""Rank intervals per run: from simultaneous (Bonferroni) confidence intervals of each run, or
from every pairwise difference at once (:func:`paired_rank_intervals`, below).

A leaderboard position is itself an estimate. This module turns per-run intervals into a *rank
interval* per run, ``[best, worst]``, such that with probability at least ``family_level`` every
run's true rank lies in its rank interval at the same time.

Procedure
---------
1. Rank the ``K`` runs whose metric has a finite point estimate (the others are *unranked*).
2. Estimate every one of them at the Bonferroni-adjusted level ``1 - alpha / K`` with
   ``alpha = 1 - family_level`` (:func:`bonferroni_level`; the designs accept
   ``estimate(state, level=...)``).
3. Run ``j`` is *significantly better* than run ``i`` when ``low_j > high_i``. Then
   ``best_i = 1 + #{j significantly better than i}`` and
   ``worst_i = K - #{j significantly worse than i}`` (:func:`rank_intervals`).

Why it holds
------------
By Bonferroni's inequality the ``K`` intervals cover their true values *simultaneously* with
probability at least ``1 - K * alpha / K = family_level``, **whatever the dependence between the
intervals**. The dependence here is strong and hard to model: runs share verified items, the
reference sample and the data-dependent stopping of the planner; Bonferroni needs none of it. On
that event ``low_j > high_i`` implies ``theta_j > theta_i``, so the runs counted as better are
truly better and the runs counted as worse are truly worse: every true rank, and with ties in
the truth the whole tie range ``[1 + #{truly better}, K - #{truly worse}]``, lies in
``[best, worst]``. Multiple comparisons are accounted for because all ``K (K - 1) / 2`` pairwise
statements are derived from one simultaneous event.

Assumptions and conservativeness
--------------------------------
* Each interval must reach its nominal ``1 - alpha / K`` coverage. The engine's intervals are
  checked by simulation at the adjusted levels too (``tests/evaluation/core/test_ev_ranking.py``).
* The procedure is conservative: Bonferroni ignores the positive dependence between runs, and the
  ranks only need the *orderings* to be right, not every interval to cover. The simulated
  family-wise coverage is therefore well above ``family_level`` (docs/STATISTICS.md lists it);
  the price is wider rank intervals, growing slowly with ``K`` (the adjusted normal quantile grows
  like ``sqrt(2 log K)``).
* Rank intervals are for the runs ranked *together*; adding a run changes ``K`` and with it every
  interval's level.
* A run with an undefined metric (``nan``: no verified item yet, or recall without a reference
  sample) is unranked and not counted in ``K``.

From paired differences
-----------------------
Runs share most of their items and the reference sample, so the difference of two runs has far
less variance than two marginal intervals imply. :func:`paired_rank_intervals` takes the joint
normal of the runs' estimates (:mod:`.paired`) and claims every pairwise order at once: run
``j`` is above run ``i`` when ``(v_j - v_i) / se_ji`` exceeds the ``family_level`` quantile of the
maximum ``|T|`` over all pairs (simulated from the joint normal), or by Holm's step-down over
the pairs. On the event that every difference lies within its simultaneous interval, every
claimed order is true, and the same counting gives ``[best, worst]``. It rests on the joint
normal being right (marginal intervals that hold, and the correlations of :mod:`.paired`),
which Bonferroni does not need; the simulations measure it (docs/STATISTICS.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats

from .intervals import normal_quantile
from .paired import PairedDifferences
from .results import RunEstimate

__all__ = [
    "PAIRED_METHODS",
    "RankIntervals",
    "bonferroni_level",
    "paired_rank_intervals",
    "rank_estimates",
    "rank_intervals",
]

METHOD = "bonferroni-simultaneous-intervals"
# Simultaneous tests of every pairwise difference: the max-|t| quantile of the joint normal
# (by simulation), or Holm's step-down over the pairs' p-values (any dependence).
PAIRED_METHODS = {"max-t": "paired-differences-max-t", "holm": "paired-differences-holm"}


def bonferroni_level(family_level: float, k: int) -> float:
    """Level of each of ``k`` intervals so that all hold together with ``family_level``.

    Returns ``1 - (1 - family_level) / max(k, 1)``; for ``k <= 1`` that is ``family_level``.
    """
    if not 0.0 < family_level < 1.0:
        raise ValueError(f"family level must lie in (0, 1), got {family_level!r}")
    return 1.0 - (1.0 - family_level) / max(int(k), 1)


@dataclass(frozen=True)
class RankIntervals:
    """Rank intervals of a set of runs on one metric.

    Attributes
    ----------
    runs : tuple of int
        Run identifiers, in the order given.
    best, worst : tuple of (int or None)
        Per run (aligned with ``runs``): best possible rank (1 = top) and worst possible rank;
        ``None`` for unranked runs (undefined value).
    ranked : int
        ``K``, the number of ranked runs.
    level : float
        Confidence level of each interval the ranks rest on (``1 - alpha / K`` or higher; from
        paired differences, the two-sided level each pair was tested at).
    family_level : float
        Probability, at least, that every ranked run's true rank lies in its rank interval.
    method : str
        The procedure, ``"bonferroni-simultaneous-intervals"``, or one of
        :data:`PAIRED_METHODS` (``"paired-differences-max-t"``, ``"paired-differences-holm"``).
    """

    runs: tuple[object, ...]
    best: tuple[int | None, ...]
    worst: tuple[int | None, ...]
    ranked: int
    level: float
    family_level: float
    method: str = METHOD

    def of(self, run: object) -> tuple[int | None, int | None]:
        """``(best, worst)`` of ``run`` (``(None, None)`` when it is unranked)."""
        k = self.runs.index(run)
        return self.best[k], self.worst[k]

    def tied_for_first(self, run: object) -> bool:
        """Whether ``run`` may be first but is not provably first (best 1, worst above 1)."""
        best, worst = self.of(run)
        return best == 1 and worst is not None and worst > 1


def rank_intervals(
    values: npt.ArrayLike,
    low: npt.ArrayLike,
    high: npt.ArrayLike,
    *,
    family_level: float,
    level: float,
    runs: Sequence[object] | None = None,
    rtol: float = 1e-9,
) -> RankIntervals:
    """Rank intervals from intervals that hold simultaneously (higher value = better rank).

    Parameters
    ----------
    values, low, high : array_like
        Point estimate and interval bounds per run; a ``nan`` value makes the run unranked.
    family_level : float
        Joint confidence wanted, e.g. 0.95.
    level : float
        Confidence of each interval. Must be at least ``bonferroni_level(family_level, K)``
        with ``K`` the number of runs with a finite value (checked with relative tolerance
        ``rtol``), otherwise :class:`ValueError`.
    runs : sequence, optional
        Identifiers of the runs (default ``0 .. n-1``).

    Returns
    -------
    RankIntervals

    Notes
    -----
    Run ``j`` is significantly better than ``i`` when ``low_j > high_i`` (strictly: touching
    intervals do not separate). ``best_i = 1 + #better``, ``worst_i = K - #worse``. Identical
    intervals never separate, so identical runs always share a rank interval.
    """
    values = np.asarray(values, dtype=float)
    low = np.asarray(low, dtype=float)
    high = np.asarray(high, dtype=float)
    if not values.shape == low.shape == high.shape or values.ndim != 1:
        raise ValueError("values, low and high must be 1-d arrays of one length")
    runs = tuple(range(values.size)) if runs is None else tuple(runs)
    if len(runs) != values.size:
        raise ValueError("runs must have one identifier per value")
    ranked = np.isfinite(values)
    k = int(np.count_nonzero(ranked))
    needed = bonferroni_level(family_level, k)
    if level < needed - rtol * needed:
        raise ValueError(f"{k} runs need intervals at level >= {needed:.6g}, got {level!r}")
    lo, hi = low[ranked], high[ranked]
    if np.isnan(lo).any() or np.isnan(hi).any():
        raise ValueError("a ranked run has a nan interval bound")
    best, worst = _ranks_from_order(lo[None, :] > hi[:, None], ranked)
    return RankIntervals(runs, best, worst, k, float(level), float(family_level))


def _ranks_from_order(
    above: np.ndarray, ranked: np.ndarray
) -> tuple[tuple[int | None, ...], tuple[int | None, ...]]:
    """``best`` and ``worst`` per run from ``above[i, j]``: run ``j`` is significantly better
    than run ``i`` (over the ranked runs only); ``None`` for unranked runs."""
    k = int(np.count_nonzero(ranked))
    better = above.sum(axis=1)
    worse = above.sum(axis=0)
    best: list[int | None] = [None] * ranked.size
    worst: list[int | None] = [None] * ranked.size
    for pos, i in enumerate(np.flatnonzero(ranked)):
        best[i] = int(1 + better[pos])
        worst[i] = int(k - worse[pos])
    return tuple(best), tuple(worst)


def rank_estimates(
    estimates: Sequence[RunEstimate],
    metric: str,
    *,
    family_level: float,
    runs: Sequence[object] | None = None,
) -> RankIntervals:
    """Rank intervals of ``metric`` from a design's ``estimate(state, level=...)`` output.

    The estimates must all be at one level, at least ``bonferroni_level(family_level, K)`` with
    ``K`` the runs with a finite ``metric`` value. ``runs`` renames the runs (default: the
    estimates' ``run`` fields).
    """
    picked = [e.metric(metric) for e in estimates]
    levels = {e.level for e in picked}
    if len(levels) > 1:
        raise ValueError(f"estimates at several levels: {sorted(levels)}")
    level = levels.pop() if levels else family_level
    ids = [e.run for e in estimates] if runs is None else list(runs)
    return rank_intervals(
        [e.value for e in picked],
        [e.low for e in picked],
        [e.high for e in picked],
        family_level=family_level,
        level=level,
        runs=ids,
    )


def paired_rank_intervals(
    paired: PairedDifferences,
    *,
    family_level: float,
    method: str = "max-t",
    rng: np.random.Generator | None = None,
    draws: int = 20_000,
) -> RankIntervals:
    """Rank intervals from every pairwise difference, claimed at once at ``family_level``.

    Parameters
    ----------
    paired : PairedDifferences
        The joint normal of the runs' estimates of one measure (:mod:`.paired`).
    family_level : float
        Probability, at least, that every claimed order is right at once.
    method : str
        ``"max-t"``: run ``j`` is above run ``i`` when ``d_ji / se_ji`` exceeds the
        ``family_level`` quantile of ``max |T|`` over every pair under the joint normal
        (simulated with ``rng``, ``draws`` draws). ``"holm"``: Holm's step-down over the pairs'
        two-sided normal p-values, valid whatever the dependence.
    rng : numpy.random.Generator, optional
        For ``"max-t"`` (default: seed 0, so the same data give the same ranks).

    Returns
    -------
    RankIntervals
        ``level`` is the two-sided level each pair was effectively tested at (for Holm, that of
        its first step). Identical runs (difference exactly 0) are never ordered.

    Notes
    -----
    On the event that every difference lies within its simultaneous interval, every claimed
    order is true, so every run's true rank range ``[1 + #truly better, K - #truly worse]`` lies
    in ``[best, worst]``.

    References
    ----------
    Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scand. J. Statist.
    6, 65-70. Hothorn, T., Bretz, F. and Westfall, P. (2008). Simultaneous inference in general
    parametric models. Biometrical Journal 50, 346-363.
    """
    if method not in PAIRED_METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {sorted(PAIRED_METHODS)}")
    bonferroni_level(family_level, 1)  # checks the level
    ranked = np.isfinite(paired.values)
    idx = np.flatnonzero(ranked)
    d = paired.differences[np.ix_(idx, idx)]
    se = paired.standard_errors[np.ix_(idx, idx)]
    # A difference known exactly (both runs' measures are, with every item verified by exact
    # labels) orders its runs whenever it is not 0; identical runs never separate.
    testable = np.triu(~paired.identical[np.ix_(idx, idx)], 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(testable | testable.T, d / se, 0.0)
    t = np.nan_to_num(t, nan=0.0, posinf=np.inf, neginf=-np.inf)
    if method == "max-t":
        cov = paired.covariance[np.ix_(idx, idx)]
        crit = _max_t_quantile(cov, testable & (se > 0), family_level, rng, draws)
        # above[i, j]: run j significantly better than run i (t[j, i] beyond the quantile).
        above = crit < t.T
        level = 2.0 * float(stats.norm.cdf(crit)) - 1.0
    else:
        above, level = _holm(t, testable, 1.0 - family_level)
    best, worst = _ranks_from_order(above, ranked)
    return RankIntervals(
        paired.runs,
        best,
        worst,
        int(idx.size),
        level,
        float(family_level),
        PAIRED_METHODS[method],
    )


def _max_t_quantile(
    cov: np.ndarray,
    testable: np.ndarray,
    family_level: float,
    rng: np.random.Generator | None,
    draws: int,
) -> float:
    """The ``family_level`` quantile of ``max |Z_a - Z_b| / se_ab`` over the testable pairs.

    One run against its testable partners at a time, on contiguous rows of the transposed
    draws: at 100 runs (4,950 pairs, 20,000 draws) 6x less CPU than gathering both columns of
    every pair, and the same numbers bit for bit. The partners are usually every later run, a
    slice of the draws rather than a gathered copy, and their differences go to one buffer
    (another third less, bit for bit again)."""
    a, _ = np.nonzero(testable)
    if a.size == 0:
        return normal_quantile(family_level)
    rng = np.random.default_rng(0) if rng is None else rng
    # A square root that survives a semi-definite covariance (identical runs).
    vals, vecs = np.linalg.eigh(cov)
    root = vecs * np.sqrt(np.clip(vals, 0.0, None))
    z = np.ascontiguousarray((rng.standard_normal((draws, cov.shape[0])) @ root.T).T)
    var = np.diag(cov)
    biggest = np.zeros(draws)
    buffer = np.empty_like(z)
    for i in np.unique(a):
        partners = np.flatnonzero(testable[i])
        se = np.sqrt(np.maximum(var[i] + var[partners] - 2.0 * cov[i, partners], 0.0))
        t = buffer[: partners.size]
        np.subtract(z[_as_slice(partners)], z[i], out=t)
        np.abs(t, out=t)
        t /= se[:, None]
        np.maximum(biggest, t.max(axis=0), out=biggest)
    return float(np.quantile(biggest, family_level))


def _as_slice(indices: np.ndarray) -> slice | np.ndarray:
    """``indices`` (sorted, not empty) as a slice when they are consecutive."""
    first, last = int(indices[0]), int(indices[-1])
    return slice(first, last + 1) if last - first + 1 == indices.size else indices


def _holm(t: np.ndarray, testable: np.ndarray, alpha: float) -> tuple[np.ndarray, float]:
    """Holm's step-down over the testable pairs: ``above[i, j]`` (run ``j`` above run ``i``),
    and the level of the first step."""
    a, b = np.nonzero(testable)
    above = np.zeros(t.shape, dtype=bool)
    m = a.size
    if m == 0:
        return above, 1.0 - alpha
    p = 2.0 * stats.norm.sf(np.abs(t[a, b]))
    order = np.argsort(p, kind="stable")
    passed = p[order] <= alpha / (m - np.arange(m))
    rejected = order[: int(np.argmin(passed)) if not passed.all() else m]
    for pair in rejected:
        i, j = a[pair], b[pair]
        if t[i, j] > 0:  # run i above run j
            above[j, i] = True
        else:
            above[i, j] = True
    return above, 1.0 - alpha / m
