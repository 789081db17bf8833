"""Rank intervals per run from simultaneous (Bonferroni) confidence intervals.

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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .results import RunEstimate

__all__ = ["RankIntervals", "bonferroni_level", "rank_estimates", "rank_intervals"]

METHOD = "bonferroni-simultaneous-intervals"


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
        Confidence level of each interval the ranks rest on (``1 - alpha / K`` or higher).
    family_level : float
        Probability, at least, that every ranked run's true rank lies in its rank interval.
    method : str
        The procedure, ``"bonferroni-simultaneous-intervals"``.
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
    better = (lo[None, :] > hi[:, None]).sum(axis=1)  # row i: runs j with low_j > high_i
    worse = (hi[None, :] < lo[:, None]).sum(axis=1)  # row i: runs j with high_j < low_i
    best: list[int | None] = [None] * values.size
    worst: list[int | None] = [None] * values.size
    for pos, i in enumerate(np.flatnonzero(ranked)):
        best[i] = int(1 + better[pos])
        worst[i] = int(k - worse[pos])
    return RankIntervals(runs, tuple(best), tuple(worst), k, float(level), float(family_level))


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
