"""The ``default`` design: coordinated Poisson sampling, score strata, planning in rounds.

Why this design (the numbers are in docs/STATISTICS.md and docs/BENCHMARKS.md):

* **One sample for all runs.** Every item ``x`` of the pool carries one inclusion probability
  ``pi(x)``: the largest level any run has asked for it. Raising a level from ``a`` to ``b`` draws
  each not-yet-sampled item with probability ``(b - a) / (1 - a)``, which is the same as keeping
  a permanent uniform number ``u(x)`` per item and sampling it when ``u(x) < pi(x)`` (coordinated
  "permanent random number" sampling, Ohlsson 1995). The verified items are therefore a single
  Poisson sample of the pool with known ``pi``; *every* run uses *every* verified item it contains,
  weighted by ``1 / pi``. A run identical to an earlier one needs nothing new; a run that overlaps
  earlier ones only pays for the part the earlier levels do not reach (the deterministic-mixture
  idea of STATISTICS.md §4, for sampling without replacement).
* **Finite populations, exact credit.** Items sampled with ``pi = 1`` are known exactly and carry
  no uncertainty; the variance of every estimator has the finite-population factor ``1 - pi``, so
  a fully verified run has a zero-width interval at its exact precision.
* **Score strata.** Each run's predictions are cut into up to ``max_strata`` strata by score
  quantiles (no labels involved). Precision is the post-stratified Hajek estimator, and the planner
  allocates levels across strata by Neyman allocation on the predicted correctness rate of each
  stratum (paper 001's water-filling and paper 002's variance-optimal designs in their simplest,
  robust form): confident strata that are all correct (or all wrong) need few labels, uncertain
  strata get more. Runs with a constant score form one stratum and lose nothing.
* **Rounds.** The planner asks for a batch (at most doubling the run's labelled sample, at least
  ``min_batch``), re-estimates from the answers and asks again only while the run's precision
  interval is wider than the target, within the label budget. Stopping depends on the data; the
  coverage this leaves is measured by simulation (tests and docs/BENCHMARKS.md).
* **Support.** Every item of a planned run gets ``pi > 0`` (the predicted variance is infinite
  otherwise), so no item can become unreachable (STATISTICS.md §3.1).
* **Intervals that hold at 0 and 1.** The stratified estimate and its variance (per-stratum
  variances floored at the Jeffreys-smoothed binomial value) are turned into an effective number of
  trials and a Clopper-Pearson interval (:func:`..intervals.effective_binomial_interval`), so an
  all-correct sample gives ``[1 - ~3.7/n, 1]`` rather than ``[1, 1]``.
* **Recall** is ``theta * nu`` (STATISTICS.md §1) with ``theta`` from the reference sample and
  ``nu`` (the run's share of the correct items of the pool) estimated twice, independently: from the
  verified items (Horvitz-Thompson ratio over one proposal covering the whole pool, §3.2) and from
  the reference items inside the pool; the two are combined with weights fixed by their effective
  sizes. **F1** is the plug-in value with a delta-method variance that bounds the precision-recall
  covariance by Cauchy-Schwarz (they share draws, §3.5), so its interval errs on the wide side.

Assumptions: a label, once verified, is correct (aggregation of redundant judgments happens
before the engine); the reference sample is a uniform (possibly cluster) sample of true items;
items requested but not yet answered are missing at random (estimates are then provisional).
The HT weights use the final ``pi``, which depends on earlier answers only through the planned
sample sizes; the bias this could cause is measured by simulation and is below Monte-Carlo error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..intervals import effective_binomial_interval, smoothed_rate
from ..reference import reference_ratio
from ..results import Estimate, Plan, RunEstimate
from ..state import TaskState
from .common import checked_level as _checked_level
from .common import f1_estimate, recall_from_parts, validate_common_options

__all__ = ["CoordinatedPoissonDesign", "score_strata"]


def score_strata(scores: np.ndarray, *, max_strata: int, min_stratum_size: int) -> np.ndarray:
    """Cut a run into score strata of roughly equal size; ties never straddle a boundary.

    Returns an ``int8`` stratum index per prediction, ``0`` for the lowest scores.
    """
    n = scores.size
    n_strata = min(max_strata, n // max(min_stratum_size, 1))
    uniq, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    if n_strata <= 1 or uniq.size <= 1:
        return np.zeros(n, dtype=np.int8)
    cumulative = np.cumsum(counts)
    targets = np.arange(1, n_strata) * (n / n_strata)
    cuts = np.unique(np.searchsorted(cumulative, targets))
    cuts = cuts[cuts < uniq.size - 1]
    stratum_of_value = np.searchsorted(cuts, np.arange(uniq.size), side="left")
    _, dense = np.unique(stratum_of_value, return_inverse=True)
    return dense[inverse].astype(np.int8)


@dataclass
class _SamplingRecord:
    """What the design has done in one task: inclusion probabilities, requests, strata, rounds."""

    inclusion: np.ndarray
    requested: np.ndarray
    strata: list = field(default_factory=list)
    rounds: list = field(default_factory=list)
    log: list = field(default_factory=list)
    # Pool cell of each item: (first run that predicted it, its stratum there), -1 outside the pool.
    cell: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    n_cells: int = 0
    stratum_sizes: list = field(default_factory=list)
    covered: list = field(default_factory=list)
    run_cells: list = field(default_factory=list)

    def grow(self, n_items: int) -> None:
        extra = n_items - self.inclusion.size
        if extra > 0:
            self.inclusion = np.concatenate([self.inclusion, np.zeros(extra)])
            self.requested = np.concatenate([self.requested, np.zeros(extra, bool)])
        extra = n_items - self.cell.size
        if extra > 0:
            self.cell = np.concatenate([self.cell, np.full(extra, -1, np.int64)])

    def add_run(self, items: np.ndarray, strata: np.ndarray) -> None:
        self.strata.append(strata)
        self.stratum_sizes.append(np.bincount(strata).astype(float))
        self.rounds.append(0)
        self.covered.append(False)
        new = self.cell[items] < 0
        self.cell[items[new]] = self.n_cells + strata[new].astype(np.int64)
        self.n_cells += int(strata.max()) + 1
        # An item's cell is fixed when it first arrives, so a run's cell histogram never changes.
        cells, counts = np.unique(self.cell[items], return_counts=True)
        self.run_cells.append((cells, counts.astype(float)))

    def copy(self) -> _SamplingRecord:
        """A copy whose mutable parts are independent; per-run strata, fixed once a run is
        added, are shared."""
        return _SamplingRecord(
            inclusion=self.inclusion.copy(), requested=self.requested.copy(),
            strata=list(self.strata), rounds=list(self.rounds), log=list(self.log),
            cell=self.cell.copy(), n_cells=self.n_cells, stratum_sizes=list(self.stratum_sizes),
            covered=list(self.covered), run_cells=list(self.run_cells))

    def apply_levels(self, items: np.ndarray, levels: np.ndarray, fraction: float) -> None:
        """Raise the inclusion of ``items`` to ``levels`` (``fraction`` of the way there)."""
        pi = self.inclusion[items]
        target = np.maximum(pi, levels)
        self.inclusion[items] = target if fraction == 1.0 else pi + (target - pi) * fraction

    def known_items(self, state: TaskState) -> np.ndarray:
        """Sorted ids of sampled items whose label is known."""
        return np.flatnonzero(self.requested & (state.labels >= 0))

    def is_covered(self, run: int, items: np.ndarray) -> bool:
        """Whether every item of ``run`` has ``pi > 0`` (cached: levels only ever rise)."""
        if not self.covered[run]:
            self.covered[run] = bool((self.inclusion[items] > 0).all())
        return self.covered[run]

    @property
    def n_requested(self) -> int:
        return int(np.count_nonzero(self.requested))


@dataclass(frozen=True)
class _PrecisionParts:
    """Intermediate quantities of one run's precision estimate (also used by the planner)."""

    estimate: Estimate
    variance: float
    covered: bool
    stratum_rates: np.ndarray
    stratum_trials: np.ndarray
    # Some score stratum of the run has unverified items but no sampled one: its rate is
    # borrowed from a neighbour, so the interval does not reflect it and the target cannot be
    # declared met yet.
    unsampled: bool = False


class CoordinatedPoissonDesign:
    """Coordinated Poisson sampling with score strata and planning in rounds (``default``).

    Parameters
    ----------
    target_half_width : float
        Precision half-width ``(high - low) / 2`` each run should reach.
    confidence : float
        Confidence level of every interval.
    interval : {"clopper-pearson", "jeffreys", "wilson"}
        Beta-type interval applied to the effective number of trials.
    max_strata, min_stratum_size : int
        Score strata per run, and the smallest stratum worth forming.
    min_batch : int
        Smallest expected batch of a round (unless the target needs fewer).
    growth : float
        A round at most multiplies the run's labelled sample by this factor.
    take_all : float
        A planned level above this becomes 1: those items are verified outright ("take-all").
        Costs at most ``1 / take_all`` times their labels and removes their variance; without it
        a small stratum at level 0.99 with one item left unsampled would get a near-zero-width
        interval that can exclude the truth.
    budget : int or None
        Total labels the task may request (``None``: unlimited).
    """

    name = "default"

    def __init__(self, *, target_half_width: float = 0.05, confidence: float = 0.95,
                 interval: str = "clopper-pearson", max_strata: int = 4,
                 min_stratum_size: int = 50, min_batch: int = 16, growth: float = 2.0,
                 take_all: float = 0.5, budget: int | None = None):
        validate_common_options(target_half_width, confidence, interval, budget)
        if max_strata < 1 or min_stratum_size < 1 or min_batch < 1 or growth <= 1.0:
            raise ValueError("max_strata, min_stratum_size, min_batch must be >= 1; growth > 1")
        if not 0.0 < take_all <= 1.0:
            raise ValueError("take_all must lie in (0, 1]")
        self.take_all = float(take_all)
        self.target_half_width = float(target_half_width)
        self.confidence = float(confidence)
        self.interval = interval
        self.max_strata = int(max_strata)
        self.min_stratum_size = int(min_stratum_size)
        self.min_batch = int(min_batch)
        self.growth = float(growth)
        self.budget = budget

    # -- state ------------------------------------------------------------------------------
    def record(self, state: TaskState) -> _SamplingRecord:
        """This design's sampling record in ``state`` (created empty on first use)."""
        rec = state.design_state.get(self.name)
        if rec is None:
            rec = _SamplingRecord(np.zeros(state.n_items), np.zeros(state.n_items, bool))
            state.design_state[self.name] = rec
        if not isinstance(rec, _SamplingRecord):
            raise ValueError("this task state was sampled by another design")
        rec.grow(state.n_items)
        for run in state.runs[len(rec.strata):]:
            rec.add_run(run.items, score_strata(run.scores, max_strata=self.max_strata,
                                                min_stratum_size=self.min_stratum_size))
        return rec

    # -- precision --------------------------------------------------------------------------
    def _precision(self, state: TaskState, rec: _SamplingRecord, run: int,
                   known_items: np.ndarray | None = None, *,
                   level: float | None = None) -> _PrecisionParts:
        """Post-stratified Hajek precision of ``run``; ``known_items``: every labelled sampled item.

        Only the run's verified items are touched (found by binary search), so the cost grows with
        the labels, not with the run's size. ``level``: the interval's confidence (default: the
        design's ``confidence``; planning always uses the default).
        """
        level = self.confidence if level is None else level
        if known_items is None:
            known_items = rec.known_items(state)
        items = state.runs[run].items
        n = items.size
        strata = rec.strata[run]
        n_strata = rec.stratum_sizes[run].size
        pos = _positions(items, known_items)
        k_items = items[pos]
        pi = rec.inclusion[k_items]
        labels = state.labels[k_items]
        k_strata = strata[pos]
        certain = pi >= 1.0
        correct_certain = int(np.count_nonzero(labels[certain] == 1))
        n_unc = n - int(np.count_nonzero(certain))
        used = int(pos.size)
        covered = rec.is_covered(run, items)
        if n_unc == 0 or used == n:
            # Every item is known: the precision is exact whatever the inclusion probabilities.
            value = float(np.count_nonzero(labels == 1)) / n
            est = Estimate(value, value, value, level, "exact", used)
            return _PrecisionParts(est, 0.0, covered, np.full(n_strata, value), np.zeros(n_strata))

        sample = ~certain
        size_h = rec.stratum_sizes[run] - np.bincount(k_strata[certain], minlength=n_strata)
        h = k_strata[sample]
        w = 1.0 / pi[sample]
        f = (labels[sample] == 1).astype(float)
        fpc = 1.0 - pi[sample]
        sw = np.bincount(h, weights=w, minlength=n_strata)
        swf = np.bincount(h, weights=w * f, minlength=n_strata)
        sw2 = np.bincount(h, weights=w * w * fpc, minlength=n_strata)
        # Strata with items but no sample borrow the sample of their nearest neighbour.
        has_items = size_h > 0
        has_sample = sw > 0
        if not has_sample.any():
            low = correct_certain / n
            high = (correct_certain + n_unc) / n
            est = Estimate(math.nan, low, high, level, "bounds-only", used)
            return _PrecisionParts(est, math.inf, covered, np.full(n_strata, 0.5),
                                   np.zeros(n_strata), unsampled=True)
        donor = np.arange(n_strata)
        unsampled = has_items & ~has_sample
        if unsampled.any():
            sampled = np.flatnonzero(has_sample)
            for g in np.flatnonzero(~has_sample):
                donor[g] = sampled[np.argmin(np.abs(sampled - g))]
            size_h = np.bincount(donor, weights=size_h, minlength=n_strata)
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = np.where(has_sample, swf / np.where(has_sample, sw, 1.0), 0.0)
            trials = np.where(has_sample & (sw2 > 0), sw * sw / np.where(sw2 > 0, sw2, 1.0),
                              np.inf)
        resid = f - rate[h]
        lin = np.bincount(h, weights=w * w * fpc * resid * resid, minlength=n_strata)
        finite = np.isfinite(trials)
        smooth = np.where(finite, smoothed_rate(rate, np.where(finite, trials, 0.0)), rate)
        with np.errstate(invalid="ignore", divide="ignore"):
            var_h = np.where(has_sample, np.maximum(
                lin / np.where(has_sample, sw * sw, 1.0),
                np.where(finite, smooth * (1 - smooth) / np.where(finite, trials, 1.0), 0.0)),
                0.0)
        weight = size_h / n_unc
        rate_u = float(weight @ rate)
        var_u = float(weight**2 @ var_h)
        smooth_u = float(weight @ smooth)
        lo_u, hi_u, _ = effective_binomial_interval(rate_u, var_u, smoothed=smooth_u,
                                                    level=level, method=self.interval)
        share = n_unc / n
        value = correct_certain / n + share * rate_u
        low = correct_certain / n + share * lo_u
        high = correct_certain / n + share * hi_u
        est = Estimate(value, low, high, level,
                       f"poststratified-hajek/{self.interval}", used)
        # The planner sees an unsampled stratum's rate as unknown (0.5: the most variable), so it
        # gets a real level next round instead of the near-zero one a borrowed rate of 0 gives.
        planning_rates = np.where(unsampled, 0.5, smooth)
        return _PrecisionParts(est, share * share * var_u, covered, planning_rates, trials,
                               unsampled=bool(unsampled.any()))

    # -- planning ---------------------------------------------------------------------------
    def _predicted_half_width(self, pi_new: np.ndarray, strata: np.ndarray, count: np.ndarray,
                              rates: np.ndarray) -> float:
        """Precision half-width expected once every item drawn under ``pi_new`` is answered.

        Items come in groups: ``count[g]`` items of stratum ``strata[g]`` at level ``pi_new[g]``.
        """
        n = float(count.sum())
        certain = pi_new >= 1.0
        n_unc = n - float(count[certain].sum())
        if n_unc == 0:
            return 0.0
        unc = ~certain
        h = strata[unc]
        p = pi_new[unc]
        c = count[unc]
        n_strata = rates.size
        size_h = np.bincount(h, weights=c, minlength=n_strata)
        with np.errstate(divide="ignore"):
            inv = np.bincount(h, weights=c * (1.0 - p) / p, minlength=n_strata)
        if not np.isfinite(inv).all():
            return math.inf
        with np.errstate(invalid="ignore", divide="ignore"):
            trials = np.where(inv > 0, size_h**2 / np.where(inv > 0, inv, 1.0), np.inf)
        finite = np.isfinite(trials) & (size_h > 0)
        smooth = np.where(finite, smoothed_rate(rates, np.where(finite, trials, 0.0)), rates)
        var_h = np.where(finite, smooth * (1 - smooth) / np.where(finite, trials, 1.0), 0.0)
        weight = size_h / n_unc
        rate_u = float(weight @ rates)
        var_u = float(weight**2 @ var_h)
        lo, hi, _ = effective_binomial_interval(rate_u, var_u, smoothed=float(weight @ smooth),
                                                level=self.confidence, method=self.interval)
        return (n_unc / n) * (hi - lo) / 2.0

    def plan(self, state: TaskState, run: int, *, rng: np.random.Generator) -> Plan:
        """Choose the items of ``run`` to verify in its next round.

        The levels per stratum are ``min(1, t * sqrt(r_h (1 - r_h)))`` (Neyman allocation on the
        predicted, Jeffreys-smoothed rate ``r_h`` of each stratum); bisection on ``t`` finds the
        smallest levels whose predicted half-width meets the target, and a second bisection caps
        the round at ``max(min_batch, (growth - 1) * labelled)`` expected new labels and at the
        remaining budget. Already-sampled items count for free; items of the run no earlier level
        reaches always get a positive level.
        """
        rec = self.record(state)
        items = state.runs[run].items
        strata = rec.strata[run]
        rec.rounds[run] += 1
        rnd = rec.rounds[run]
        parts = self._precision(state, rec, run)
        current = parts.estimate.half_width
        if parts.covered and not parts.unsampled and current <= self.target_half_width:
            return Plan(run, rnd, np.empty(0, np.int64), "met", current, current)
        pi = rec.inclusion[items]
        unrequested = ~rec.requested[items]
        if not unrequested.any():
            return Plan(run, rnd, np.empty(0, np.int64), "exhausted", current, current)
        remaining = math.inf if self.budget is None else self.budget - rec.n_requested
        if remaining < 1:
            return Plan(run, rnd, np.empty(0, np.int64), "budget_exhausted", current, current)

        rates = np.clip(parts.stratum_rates, 1e-3, 1 - 1e-3)
        shape_h = np.sqrt(rates * (1 - rates))
        t_max = 1.0 / shape_h.min()
        # The bisections only need, per (level, stratum, requested) group, how many items it
        # holds: a run's million items take a few hundred such values.
        g_pi, g_stratum, g_unreq, g_count = _groups(pi, strata, unrequested, rates.size)
        g_shape = shape_h[g_stratum]
        g_gain_count = np.where(g_unreq, g_count, 0.0)
        g_headroom = np.where(g_pi < 1.0, 1.0 - g_pi, 1.0)

        def level_of(t: float, base: np.ndarray, shape: np.ndarray) -> np.ndarray:
            level = t * shape
            return np.maximum(base, np.where(level > self.take_all, 1.0, level))

        def half_width(t: float) -> float:
            return self._predicted_half_width(level_of(t, g_pi, g_shape), g_stratum, g_count,
                                              rates)

        def expected_new(t: float) -> float:
            gain = (level_of(t, g_pi, g_shape) - g_pi) / g_headroom
            return float(gain @ g_gain_count)

        # The prediction uses expected sample sums; the realised sample can be less favourable.
        # Aim lower by the ratio of realised to predicted half-width at the current levels.
        goal = self.target_half_width
        predicted_now = half_width(0.0)
        if math.isfinite(current) and math.isfinite(predicted_now) and current > predicted_now:
            goal *= predicted_now / current
        t_need = _bisect_smallest(lambda t: half_width(t) <= goal, 0.0, t_max)
        labelled = parts.estimate.labels_used
        cap = min(max(self.min_batch, (self.growth - 1.0) * labelled), remaining)
        # Never a round that cannot move: ask for at least a small batch while unmet.
        floor = min(self.min_batch / 4.0, cap, float(np.count_nonzero(unrequested)))
        if expected_new(t_need) < floor:
            t_need = _bisect_smallest(lambda s: expected_new(s) >= floor, t_need, t_max)
        t = t_need
        if expected_new(t_need) > cap:
            t = _bisect_largest(lambda s: expected_new(s) <= cap, 0.0, t_need)
            # A round must move: the first positive level reaches every unreached item.
            t = max(t, t_need * 1e-6)
            if expected_new(t) < floor:
                # The cap fell just below a take-all jump: take the jump rather than stall.
                t = t_need
        new_pi = level_of(t, pi, shape_h[strata])
        seed = int(rng.integers(2**63 - 1))
        draw_rng = np.random.default_rng(seed)
        u = draw_rng.random(items.size)
        with np.errstate(invalid="ignore", divide="ignore"):
            top_up = np.where(pi < 1.0, (new_pi - pi) / (1.0 - pi), 0.0)
        take = unrequested & (u < top_up)
        chosen = items[take]
        fraction = 1.0
        status = "sample"
        if chosen.size > remaining:
            # The draw overshot the budget: keep a uniform subset of it, and raise the levels by
            # the same share (each drawn item stays with probability ``remaining / drawn``).
            fraction = float(remaining) / chosen.size
            keep = draw_rng.choice(chosen.size, size=int(remaining), replace=False)
            chosen = np.sort(chosen[keep])
            status = "budget_exhausted"
        # The level each stratum asked for this round, take-all rule included (for replay).
        level_by_stratum = level_of(t, np.zeros_like(shape_h), shape_h)
        rec.apply_levels(items, level_by_stratum[strata], fraction)
        rec.requested[chosen] = True
        details = {"levels": level_by_stratum.tolist(), "fraction": fraction,
                   "predicted_rates": rates.tolist(), "t": t, "t_needed": t_need, "cap": cap}
        rec.log.append({"run": run, "round": rnd, "seed": seed, "n": int(chosen.size), **details})
        predicted = half_width(t)
        return Plan(run, rnd, chosen, status, predicted, current, expected_new(t) if t else 0.0,
                    seed, details)

    # -- persistence ------------------------------------------------------------------------
    def replay(self, state: TaskState, rounds, *, extend: bool = False) -> None:
        """Rebuild this design's sampling record in ``state`` from its rounds, in planning order.

        Parameters
        ----------
        state : TaskState
            A state with every run and label, but no sampling record of this design yet
            (unless ``extend``).
        rounds : iterable of RoundRecord
            Every round :meth:`plan` returned for the task, in the order they were planned:
            the run, the round number, the per-stratum ``levels`` and ``fraction`` (from
            ``Plan.details``; ``None`` for rounds that drew nothing) and the drawn items.
        extend : bool, optional
            Apply ``rounds`` after the ones ``state``'s record already holds: the rounds planned
            since it was replayed, in order. Replaying rounds in two parts gives the same
            record, bit for bit, as replaying them all at once.

        Notes
        -----
        Inclusion probabilities are recomputed with the same floating-point operations as
        :meth:`plan`, so a replayed state estimates and plans bit-for-bit like the original: a
        service can keep only these rounds (not the per-item probabilities) and re-create the
        engine state in any process.
        """
        if self.name in state.design_state and not extend:
            raise ValueError("replay needs a state with no sampling record of this design yet")
        rec = self.record(state)
        for r in rounds:
            if not 0 <= r.run < state.n_runs:
                raise ValueError(f"round for unknown run {r.run}")
            items = state.runs[r.run].items
            if r.levels is not None:
                levels = np.asarray(r.levels, dtype=float)
                strata = rec.strata[r.run]
                if levels.size != rec.stratum_sizes[r.run].size:
                    raise ValueError(f"run {r.run} round {r.round}: {levels.size} levels for "
                                     f"{rec.stratum_sizes[r.run].size} strata")
                rec.apply_levels(items, levels[strata], float(r.fraction))
            drawn = np.asarray(r.items, dtype=np.int64)
            if drawn.size:
                if rec.requested[drawn].any():
                    raise ValueError(f"run {r.run} round {r.round} draws an item twice")
                rec.requested[drawn] = True
            rec.rounds[r.run] = max(rec.rounds[r.run], int(r.round))
            rec.log.append({"run": r.run, "round": int(r.round), "seed": r.seed,
                            "n": int(drawn.size), "levels": r.levels, "fraction": r.fraction})

    def inclusion(self, state: TaskState) -> np.ndarray:
        """Current inclusion probability of every item (read-only view)."""
        view = self.record(state).inclusion.view()
        view.setflags(write=False)
        return view

    # -- estimation -------------------------------------------------------------------------
    def estimate(self, state: TaskState, runs=None, *,
                 level: float | None = None) -> list[RunEstimate]:
        """Precision, recall and F1 with intervals for ``runs`` (default: every run).

        ``level`` overrides the confidence of every interval (default: the design's
        ``confidence``), e.g. the Bonferroni-adjusted level of :mod:`..ranking`.
        """
        level = self.confidence if level is None else _checked_level(level)
        rec = self.record(state)
        runs = range(state.n_runs) if runs is None else runs
        reached = rec.inclusion > 0
        pool = state.in_pool & reached
        known_items = rec.known_items(state)
        cells = _PoolCells.build(state, rec, pool, known_items)
        ref = state.reference
        ref_in_pool = pool[ref.items] if ref.size else np.zeros(0, bool)
        theta = reference_ratio(ref, ref_in_pool) if ref.size else None
        out = []
        for i in runs:
            parts = self._precision(state, rec, i, known_items, level=level)
            run_items = state.runs[i].items
            nu_ver = cells.nu(run_items, rec.run_cells[i]) if parts.covered else None
            if ref.size:
                in_x = _contains(run_items, ref.items)
                nu_ref = reference_ratio(ref, in_x & ref_in_pool, ref_in_pool)
                simple = reference_ratio(ref, in_x)
            else:
                nu_ref = simple = None
            recall = recall_from_parts(theta, nu_ver, nu_ref, simple,
                                       level=level, method=self.interval,
                                       labels=cells.n_true + ref.size)
            f1 = f1_estimate(parts.estimate, parts.variance, recall, level=level,
                             method=self.interval)
            out.append(RunEstimate(i, parts.estimate, recall.estimate, f1))
        return out


@dataclass(frozen=True)
class _PoolCells:
    """The verified sample of the pool, post-stratified by cell (first run, stratum).

    ``nu`` of a run is the share of the pool's correct items inside it. Within a cell every item
    was first reached by one run's level, so Hajek ratios within cells do not depend on how high
    the (answer-driven) levels were set; totals across cells use the known cell sizes. Plain
    Horvitz-Thompson totals across cells let those levels leak into the weights (measured:
    recall biased by +0.02 on febrl4).
    """

    size: np.ndarray        # pool items per cell
    weight: np.ndarray      # sum of 1/pi over the cell's sampled items
    rate: np.ndarray        # Hajek share correct per cell (a donor rate where unsampled)
    w2_incorrect: np.ndarray  # sum of w^2 (1 - pi) over the cell's sampled incorrect items
    cell: np.ndarray        # cell of every item (-1 outside the pool)
    t_items: np.ndarray     # sampled correct items (sorted) ...
    t_cell: np.ndarray      # ... their cells, weights 1/pi and 1 - pi
    t_w: np.ndarray
    t_fpc: np.ndarray
    total: float            # estimated correct items in the pool

    @property
    def n_true(self) -> int:
        return int(self.t_items.size)

    @classmethod
    def build(cls, state: TaskState, rec: _SamplingRecord, pool: np.ndarray,
              known_items: np.ndarray) -> _PoolCells:
        n_cells = max(rec.n_cells, 1)
        cell = np.where(pool, rec.cell, -1)
        size = np.bincount(cell[pool], minlength=n_cells).astype(float)
        idx = known_items[pool[known_items]]
        pi = rec.inclusion[idx]
        w = 1.0 / pi
        f = state.labels[idx] == 1
        c = cell[idx]
        weight = np.bincount(c, weights=w, minlength=n_cells)
        correct = np.bincount(c, weights=w * f, minlength=n_cells)
        w2_incorrect = np.bincount(c, weights=w * w * (1 - pi) * ~f, minlength=n_cells)
        sampled = weight > 0
        rate = np.where(sampled, correct / np.where(sampled, weight, 1.0), np.nan)
        if not sampled.all():
            rate = _borrow_stratum_rates(state, rec, rate, sampled, correct, weight, known_items)
        total = float(size @ rate)
        return cls(size, weight, rate, w2_incorrect, cell, idx[f], c[f], w[f], 1.0 - pi[f], total)

    def nu(self, run_items: np.ndarray, run_cells: tuple):
        """``(value, variance, effective trials)`` of ``nu`` for a run, or ``None``.

        ``run_cells`` is the run's cell histogram ``(cells, counts)``.
        """
        if self.total <= 0 or self.t_items.size == 0:
            return None
        g = _contains(run_items, self.t_items).astype(float)
        n_cells = self.size.size
        sampled = self.weight > 0
        safe_weight = np.where(sampled, self.weight, 1.0)
        share = np.bincount(self.t_cell, weights=self.t_w * g, minlength=n_cells) / safe_weight
        if not sampled.all():
            cells, counts = run_cells
            keep = cells >= 0
            inside = np.bincount(cells[keep], weights=counts[keep], minlength=n_cells)
            share = np.where(sampled, share, self.rate * inside / np.maximum(self.size, 1))
        value = min(max(float(self.size @ share) / self.total, 0.0), 1.0)
        # Linearisation: a sampled item x of cell c has influence N_c / (W_c T) (e(x) - e_c)
        # with e = f (g - nu) and e_c its cell mean; incorrect items have e = 0.
        scale = np.where(sampled, self.size / safe_weight, 0.0) / self.total
        e_mean = np.where(sampled, share - value * self.rate, 0.0)
        omega = scale[self.t_cell]
        resid = (g - value) - e_mean[self.t_cell]
        var = float(np.sum(self.t_w**2 * self.t_fpc * (omega * resid) ** 2))
        var += float(np.sum(self.w2_incorrect * (scale * e_mean) ** 2))
        ow = omega * self.t_w
        denom = float(np.sum(ow**2 * self.t_fpc))
        trials = float(ow.sum()) ** 2 / denom if denom > 0 else math.inf
        return value, var, trials


def _borrow_stratum_rates(state: TaskState, rec: _SamplingRecord, rate: np.ndarray,
                          sampled: np.ndarray, correct: np.ndarray, weight: np.ndarray,
                          known_items: np.ndarray):
    """Rates for cells without a sampled item: the Hajek rate of the same run's whole stratum.

    A cell holds the items a run brought to the pool first in one stratum; a late run's cell can
    be a handful of items none of which was drawn (each has ``pi > 0``). Its stratum, which also
    holds items shared with earlier runs, is always sampled once the run is planned.
    """
    rate = rate.copy()
    first = 0
    for j, strata in enumerate(rec.strata):
        n_strata = int(strata.max()) + 1
        cells = slice(first, first + n_strata)
        first += n_strata
        if sampled[cells].all():
            continue
        items = state.runs[j].items
        pos = _positions(items, known_items)
        w = 1.0 / rec.inclusion[items[pos]]
        h = strata[pos]
        f = state.labels[items[pos]] == 1
        sw = np.bincount(h, weights=w, minlength=n_strata)
        sf = np.bincount(h, weights=w * f, minlength=n_strata)
        fallback = sf.sum() / sw.sum() if sw.sum() > 0 else 0.5
        donor = np.where(sw > 0, sf / np.where(sw > 0, sw, 1.0), fallback)
        rate[cells] = np.where(sampled[cells], rate[cells], donor)
    overall = float(correct.sum() / weight.sum()) if weight.sum() > 0 else 0.5
    return np.where(np.isnan(rate), overall, rate)


def _contains(sorted_items: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Whether each of ``values`` is in the sorted array ``sorted_items`` (binary search)."""
    if sorted_items.size == 0 or values.size == 0:
        return np.zeros(values.size, bool)
    pos = np.searchsorted(sorted_items, values)
    pos[pos >= sorted_items.size] = 0
    return sorted_items[pos] == values


def _positions(sorted_items: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Positions in ``sorted_items`` of those ``values`` it contains."""
    if sorted_items.size == 0 or values.size == 0:
        return np.zeros(0, np.int64)
    pos = np.searchsorted(sorted_items, values)
    pos[pos >= sorted_items.size] = 0
    return pos[sorted_items[pos] == values]


def _groups(pi: np.ndarray, strata: np.ndarray, unrequested: np.ndarray, n_strata: int):
    """Compress items to groups of equal (level, stratum, requested): values and counts."""
    levels, level_index = np.unique(pi, return_inverse=True)
    key = (level_index * n_strata + strata) * 2 + unrequested
    counts = np.bincount(key)
    present = np.flatnonzero(counts)
    return (levels[present // 2 // n_strata], (present // 2) % n_strata, present % 2 == 1,
            counts[present].astype(float))


def _bisect(flips, lo: float, hi: float, iterations: int = 60) -> tuple[float, float]:
    """Narrow ``[lo, hi]`` around where a monotone predicate turns true (false at ``lo``)."""
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if flips(mid):
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-9 * max(hi, 1e-12):
            break
    return lo, hi


def _bisect_smallest(ok, lo: float, hi: float) -> float:
    """Smallest ``t`` in ``[lo, hi]`` with ``ok(t)`` for a predicate true from some point on."""
    return lo if ok(lo) else _bisect(ok, lo, hi)[1]


def _bisect_largest(ok, lo: float, hi: float) -> float:
    """Largest ``t`` in ``[lo, hi]`` with ``ok(t)`` for a predicate true up to some point."""
    return _bisect(lambda t: not ok(t), lo, hi)[0]
