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
* **Recall** is ``theta * nu + rho`` (STATISTICS.md §1) over the part of the pool the verified
  sample speaks for (:func:`.pool.sampled_part`): ``theta`` is the reference sample's share in it,
  ``nu`` (the run's share of its correct items) is estimated twice, independently, from the
  verified items (Hajek ratios within pool cells, §3.2) and from the reference items inside it,
  combined with weights fixed by their effective sizes, and ``rho`` is the reference sample's
  share in the run's items outside it. **F1** is the plug-in value with a delta-method variance
  that bounds the precision-recall covariance by Cauchy-Schwarz (they share draws, §3.5), so its
  interval errs on the wide side.

* **Fallible annotators.** Labels are posteriors under a Dawid-Skene annotator model fitted to
  every judgment (:mod:`..annotators`, :mod:`..labels`), with the pool cells as prior classes;
  every interval adds the labels' and the annotator parameters' uncertainty. A round asks further
  judgments on verified items whose answers are a doubtful pattern in their cell's band, where a
  second look settles more than a new item would (:mod:`.second_looks`), and new items priced at
  the judgments they will need. The budget counts judgments. With exact labels (a perfect oracle)
  nothing of this changes a single estimate or plan.

Assumptions: annotators err independently given the true label, at rates that do not depend on
the item; the reference sample is a uniform (possibly cluster) sample of true items;
items requested but not yet answered are missing at random (estimates are then provisional).
The HT weights use the final ``pi``, which depends on earlier answers only through the planned
sample sizes; the bias this could cause is measured by simulation and is below Monte-Carlo error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..annotators import AnnotatorPrior
from ..labels import ItemLabels, item_labels
from ..reference import reference_ratio
from ..results import Plan, RunEstimate
from ..sorted_sets import contains, positions
from ..state import TaskState
from .common import (
    bisect_largest,
    bisect_smallest,
    f1_estimate,
    recall_from_parts,
    validate_common_options,
)
from .common import checked_level as _checked_level
from .pool import PoolCells, sampled_part
from .precision import PrecisionParts, predicted_half_width, stratified_precision
from .record import SamplingRecord, level_groups, score_strata
from .second_looks import (
    BAND_AFTER,
    bands_to_give,
    due_looks,
    noise_profile,
    patterns_to_switch_on,
    plausible_best,
)

__all__ = ["CoordinatedPoissonDesign", "score_strata"]

# Sampled items of a stratum after which its own answers tell its label noise.
_OWN_INFLATION_AFTER = 20


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
        Total judgments the task may ask for, gold answers included (``None``: unlimited).
    judgments_per_item : int
        Judgments a newly drawn item gets at first (more may follow where they pay).
    max_judgments_per_item : int
        Most judgments one item may get (at most the number of annotators: each judgment is by a
        different one).
    annotator_prior : AnnotatorPrior, optional
        Priors of the annotator model.
    """

    name = "default"

    def __init__(
        self,
        *,
        target_half_width: float = 0.05,
        confidence: float = 0.95,
        interval: str = "clopper-pearson",
        max_strata: int = 4,
        min_stratum_size: int = 50,
        min_batch: int = 16,
        growth: float = 2.0,
        take_all: float = 0.5,
        budget: int | None = None,
        judgments_per_item: int = 1,
        max_judgments_per_item: int = 5,
        annotator_prior: AnnotatorPrior | None = None,
    ):
        validate_common_options(target_half_width, confidence, interval, budget)
        if max_strata < 1 or min_stratum_size < 1 or min_batch < 1 or growth <= 1.0:
            raise ValueError("max_strata, min_stratum_size, min_batch must be >= 1; growth > 1")
        if not 0.0 < take_all <= 1.0:
            raise ValueError("take_all must lie in (0, 1]")
        if judgments_per_item < 1 or max_judgments_per_item < judgments_per_item:
            raise ValueError("judgments_per_item must be >= 1 and <= max_judgments_per_item")
        self.take_all = float(take_all)
        self.target_half_width = float(target_half_width)
        self.confidence = float(confidence)
        self.interval = interval
        self.max_strata = int(max_strata)
        self.min_stratum_size = int(min_stratum_size)
        self.min_batch = int(min_batch)
        self.growth = float(growth)
        self.budget = budget
        self.judgments_per_item = int(judgments_per_item)
        self.max_judgments_per_item = int(max_judgments_per_item)
        self.annotator_prior = annotator_prior

    # -- state ------------------------------------------------------------------------------
    def record(self, state: TaskState) -> SamplingRecord:
        """This design's sampling record in ``state`` (created empty on first use)."""
        rec = state.design_state.get(self.name)
        if rec is None:
            rec = SamplingRecord(np.zeros(state.n_items), np.zeros(state.n_items, bool))
            state.design_state[self.name] = rec
        if not isinstance(rec, SamplingRecord):
            raise ValueError("this task state was sampled by another design")
        rec.grow(state.n_items)
        for run in state.runs[len(rec.strata) :]:
            rec.add_run(
                run.items,
                score_strata(
                    run.scores, max_strata=self.max_strata, min_stratum_size=self.min_stratum_size
                ),
            )
        return rec

    def labels(self, state: TaskState, rec: SamplingRecord | None = None) -> ItemLabels:
        """Every item's label view: exact labels, or the annotator model fitted to the judgments
        with the pool cells as prior classes (cached until labels, judgments or runs change)."""
        rec = self.record(state) if rec is None else rec
        key = (state.labels_version, state.n_runs, state.n_items)
        if rec.labels_cache is None or rec.labels_cache[0] != key:
            rec.labels_cache = (
                key,
                item_labels(state, item_class=rec.cell, prior=self.annotator_prior),
            )
        return rec.labels_cache[1]

    def _precision(
        self,
        state: TaskState,
        rec: SamplingRecord,
        run: int,
        labels: ItemLabels,
        known: np.ndarray | None = None,
        *,
        level: float | None = None,
    ) -> PrecisionParts:
        """Precision of ``run`` (:func:`.precision.stratified_precision`); ``known``: per item,
        sampled and verified; ``level`` defaults to the design's confidence.

        With fallible annotators and banded cells, the post-strata are the (stratum, band)
        pieces (:meth:`.record.SamplingRecord.pieces`); the planner still sees one rate per stratum.
        """
        if known is None:
            known = rec.known(labels)
        items = state.runs[run].items
        strata, sizes = rec.strata[run], rec.stratum_sizes[run]
        pieces = labels.noisy and bool((rec.cell_band >= 0).any())
        blocks = None
        if pieces:
            strata, sizes = rec.pieces(run, items)
            blocks = np.arange(sizes.size) // 4
        parts = stratified_precision(
            items,
            strata,
            sizes,
            rec.inclusion,
            known,
            labels,
            covered=rec.is_covered(run, items),
            level=self.confidence if level is None else level,
            interval=self.interval,
            blocks=blocks,
        )
        if not pieces:
            return parts
        n_strata = rec.stratum_sizes[run].size
        piece_sizes = np.zeros(4 * n_strata)
        piece_sizes[: sizes.size] = sizes
        by_stratum = piece_sizes.reshape(n_strata, 4)
        rates = np.zeros(4 * n_strata)
        rates[: parts.stratum_rates.size] = parts.stratum_rates
        with np.errstate(invalid="ignore", divide="ignore"):
            planning = (by_stratum * rates.reshape(n_strata, 4)).sum(axis=1) / by_stratum.sum(1)
        return replace(parts, stratum_rates=np.nan_to_num(planning, nan=0.5))

    # -- planning ---------------------------------------------------------------------------
    def remaining_budget(self, state: TaskState, rec: SamplingRecord | None = None) -> float:
        """Judgments the budget still allows: asked for by the design, plus gold answers."""
        if self.budget is None:
            return math.inf
        rec = self.record(state) if rec is None else rec
        gold = state.gold
        spent_on_gold = (
            int(np.count_nonzero(contains(gold.items, state.judgments.items))) if gold.size else 0
        )
        return self.budget - rec.judgments_asked - spent_on_gold

    def plan(self, state: TaskState, run: int, *, rng: np.random.Generator) -> Plan:
        """Choose what ``run`` needs verified in its next round: new items, further looks.

        The levels per stratum are ``min(1, t * sqrt(r_h (1 - r_h)))`` (Neyman allocation on the
        predicted, Jeffreys-smoothed rate ``r_h`` of each stratum); bisection on ``t`` finds the
        smallest levels whose predicted half-width meets the target, and a second bisection caps
        the round at ``max(min_batch, (growth - 1) * labelled)`` expected judgments and at the
        remaining budget. Already-sampled items count for free; items of the run no earlier level
        reaches always get a positive level. With fallible annotators, the run's verified items
        first get their look probabilities (:func:`.second_looks.plan_looks`): a floor for
        every item, more where a look pays more than a new item; each stratum's predicted
        variance is inflated for the label noise new items bring
        (:func:`.second_looks.noise_profile`).
        """
        rec = self.record(state)
        labels = self.labels(state, rec)
        items = state.runs[run].items
        rec.rounds[run] += 1
        rnd = rec.rounds[run]
        parts = self._precision(state, rec, run, labels)
        current = parts.estimate.half_width
        empty = np.empty(0, np.int64)
        met = parts.covered and not parts.unsampled and current <= self.target_half_width
        unrequested = ~rec.requested[items]
        if not labels.noisy:
            if met:
                return Plan(run, rnd, empty, "met", current, current)
            if not unrequested.any():
                return Plan(run, rnd, empty, "exhausted", current, current)
        remaining = self.remaining_budget(state, rec)
        rates = np.clip(parts.stratum_rates, 1e-3, 1 - 1e-3)
        inflation, cost = self._noise(
            labels, rates, rec.look_patterns, parts, rec.strata[run], items
        )
        looks = _Looks.none()
        if labels.noisy and remaining >= 1:
            looks = self._looks(rec, parts, labels, met, unrequested, cost, remaining)
            if looks.patterns:
                inflation, cost = self._noise(
                    labels, rates, rec.look_patterns, parts, rec.strata[run], items
                )
        if met or (not unrequested.any() and looks.asked.size == 0):
            status = "sample" if looks.asked.size and not met else ("met" if met else "exhausted")
            return looks.plan(run, rnd, status, current, current)
        if remaining - looks.asked.size < 1:
            status = "sample" if looks.asked.size else "budget_exhausted"
            return looks.plan(run, rnd, status, current, current)
        if self._annotator_limited(parts):
            return looks.plan(
                run,
                rnd,
                "annotator_limited" if not looks.asked.size else "sample",
                current,
                current,
            )
        after = _scaled_half_width(current, parts.variance, parts.variance - looks.removed)
        enough = after <= self.target_half_width and parts.covered and not parts.unsampled
        if looks.asked.size and (enough or not unrequested.any()):
            return looks.plan(run, rnd, "sample", after, current)
        cap = min(
            max(self.min_batch, (self.growth - 1.0) * parts.estimate.labels_used),
            remaining - looks.asked.size,
        )
        return self._draw(
            state,
            rec,
            run,
            rnd,
            parts,
            rates,
            inflation,
            cost,
            cap,
            remaining - looks.asked.size,
            looks,
            rng,
        )

    def _annotator_limited(self, parts: PrecisionParts) -> bool:
        """The annotators' shared uncertainty keeps the interval wider than the target while the
        run's own part meets it, or is no larger than the shared part: more items of this run
        would buy little (the shared part does not shrink with them), judgments anywhere in the
        task narrow it (gold answers most)."""
        if not (parts.covered and not parts.unsampled and parts.parameter_variance > 0):
            return False
        own = parts.variance - parts.parameter_variance
        own_half_width = _scaled_half_width(parts.estimate.half_width, parts.variance, own)
        return own_half_width <= self.target_half_width or own <= parts.parameter_variance

    def _noise(
        self,
        labels: ItemLabels,
        rates: np.ndarray,
        patterns: tuple,
        parts: PrecisionParts,
        strata: np.ndarray,
        run_items: np.ndarray,
    ):
        """Per stratum: how much label noise inflates a new item's variance, and what a new
        item costs in judgments. A stratum with enough sampled items shows its inflation in its
        own answers (near 1 when they are all consistent); others get the inflation expected at
        the annotators' typical error rates."""
        # Planned at the best error rates the judgments still allow: the answers then show the
        # stratum's real noise, and a round that falls short is followed by another, while a
        # pessimistic plan over-asks for good (measured: 8-20% more judgments).
        se, sp = plausible_best(labels.model) if labels.noisy else (1.0, 1.0)
        inflation, cost = noise_profile(
            rates,
            sensitivity=se,
            specificity=sp,
            judgments=self.judgments_per_item,
            max_judgments=self.max_judgments_per_item,
            patterns=patterns,
        )
        if labels.noisy and parts.items.size:
            sampled = parts.inclusion < 1.0
            h = strata[positions(run_items, parts.items)][sampled]
            n = np.bincount(h, minlength=rates.size)
            seen = np.bincount(h, weights=np.sqrt(parts.inflation[sampled]), minlength=rates.size)
            enough = n >= _OWN_INFLATION_AFTER
            inflation = np.where(enough, seen / np.maximum(n, 1), inflation)
        return inflation, cost

    def _looks(self, rec, parts, labels, met, unrequested, cost, remaining) -> _Looks:
        """Give bands to the cells whose rate is now known and switch on the answer patterns
        doubtful in each band, then ask the look of every item of the task whose answers are a
        pattern switched on in its band (:mod:`.second_looks`)."""
        if self.max_judgments_per_item <= self.judgments_per_item:
            return _Looks.none()
        cells, bands = bands_to_give(labels, rec)
        rec.give_bands(cells, bands)
        switched = patterns_to_switch_on(
            labels,
            rec,
            judgments=self.judgments_per_item,
            max_judgments=self.max_judgments_per_item,
        )
        for band, patterns in switched:
            rec.switch_on(band, patterns)
        asked = due_looks(labels, rec, max_judgments=self.max_judgments_per_item)
        # The budget bounds even looks the rules owe (the items left without one are few).
        asked = asked[: int(min(asked.size, remaining))]
        rec.ask(asked)
        return _Looks((cells, bands), tuple(switched), asked, 0.0)

    def _draw(
        self, state, rec, run, rnd, parts, rates, inflation, cost, cap, remaining, looks, rng
    ) -> Plan:
        """Raise the run's levels so that its predicted half-width meets the target, within the
        round's cap, and draw the new items the raised levels select."""
        items = state.runs[run].items
        strata = rec.strata[run]
        current = parts.estimate.half_width
        pi = rec.inclusion[items]
        unrequested = ~rec.requested[items]
        shape_h = np.sqrt(rates * (1 - rates))
        t_max = 1.0 / shape_h.min()
        # The bisections only need, per (level, stratum, requested) group, how many items it
        # holds: a run's million items take a few hundred such values.
        g_pi, g_stratum, g_unreq, g_count = level_groups(pi, strata, unrequested, rates.size)
        g_shape = shape_h[g_stratum]
        g_gain_count = np.where(g_unreq, g_count * cost[g_stratum], 0.0)
        g_headroom = np.where(g_pi < 1.0, 1.0 - g_pi, 1.0)
        noisy = bool((inflation != 1.0).any())
        # The annotators' shared uncertainty is not this run's to reduce (judgments anywhere in
        # the task shrink it): plan as if it took at most half the target's variance.
        # The annotators' shared uncertainty is not this run's to reduce: judgments anywhere in
        # the task shrink it. The levels are planned for the run's own variance; a run whose own
        # part meets the target ends "annotator_limited" if the shared part keeps it wider
        # (planning for the shared part here cost 6-25% more judgments, measured on febrl4).

        def level_of(t: float, base: np.ndarray, shape: np.ndarray) -> np.ndarray:
            level = t * shape
            return np.maximum(base, np.where(level > self.take_all, 1.0, level))

        def half_width(t: float) -> float:
            return predicted_half_width(
                level_of(t, g_pi, g_shape),
                g_stratum,
                g_count,
                rates,
                inflation=inflation if noisy else None,
                level=self.confidence,
                interval=self.interval,
            )

        def expected_judgments(t: float) -> float:
            gain = (level_of(t, g_pi, g_shape) - g_pi) / g_headroom
            return float(gain @ g_gain_count)

        # The prediction uses expected sample sums; the realised sample can be less favourable.
        # Aim lower by the ratio of realised to predicted half-width at the current levels.
        goal = self.target_half_width
        predicted_now = half_width(0.0)
        if math.isfinite(current) and math.isfinite(predicted_now) and current > predicted_now:
            goal *= predicted_now / current
        t_need = bisect_smallest(lambda t: half_width(t) <= goal, 0.0, t_max)
        # Never a round that cannot move: ask for at least a small batch while unmet.
        floor = min(self.min_batch / 4.0, cap, float(np.count_nonzero(unrequested)))
        if expected_judgments(t_need) < floor:
            t_need = bisect_smallest(lambda s: expected_judgments(s) >= floor, t_need, t_max)
        t = t_need
        if expected_judgments(t_need) > cap:
            t = bisect_largest(lambda s: expected_judgments(s) <= cap, 0.0, t_need)
            # A round must move: the first positive level reaches every unreached item.
            t = max(t, t_need * 1e-6)
            if expected_judgments(t) < floor:
                # The cap fell just below a take-all jump: take the jump rather than stall (the
                # smallest step that moves, with fallible annotators, whose target may lie
                # beyond every item of the run).
                t = (
                    t_need
                    if not noisy
                    else bisect_smallest(lambda s: expected_judgments(s) >= floor, t, t_need)
                )
        new_pi = level_of(t, pi, shape_h[strata])
        seed = int(rng.integers(2**63 - 1))
        draw_rng = np.random.default_rng(seed)
        u = draw_rng.random(items.size)
        with np.errstate(invalid="ignore", divide="ignore"):
            top_up = np.where(pi < 1.0, (new_pi - pi) / (1.0 - pi), 0.0)
        chosen = items[unrequested & (u < top_up)]
        fraction = 1.0
        status = "sample"
        affordable = remaining // self.judgments_per_item
        if chosen.size > affordable:
            affordable = int(affordable)
            # The draw overshot the budget: keep a uniform subset of it, and raise the levels by
            # the same share (each drawn item stays with probability ``affordable / drawn``).
            fraction = float(affordable) / chosen.size
            keep = draw_rng.choice(chosen.size, size=affordable, replace=False)
            chosen = np.sort(chosen[keep])
            status = "budget_exhausted"
        # The level each stratum asked for this round, take-all rule included (for replay).
        level_by_stratum = level_of(t, np.zeros_like(shape_h), shape_h)
        rec.apply_levels(items, level_by_stratum[strata], fraction)
        rec.request(chosen, self.judgments_per_item)
        details = {
            "levels": level_by_stratum.tolist(),
            "fraction": fraction,
            "predicted_rates": rates.tolist(),
            "t": t,
            "t_needed": t_need,
            "cap": cap,
        }
        if noisy:
            details["inflation"] = inflation.tolist()
        rec.log.append(
            {
                "run": run,
                "round": rnd,
                "seed": seed,
                "n": int(chosen.size),
                "again": int(looks.asked.size),
                **details,
            }
        )
        predicted = half_width(t)
        expected = (expected_judgments(t) if t else 0.0) + looks.asked.size
        return Plan(
            run,
            rnd,
            chosen,
            status,
            predicted,
            current,
            expected,
            seed,
            details,
            again=looks.asked,
            bands=looks.bands,
            patterns=looks.patterns,
        )

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
            ``Plan.details``; ``None`` for rounds that drew nothing), the drawn items and the
            items asked for a further judgment (``Plan.again``).
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
                    raise ValueError(
                        f"run {r.run} round {r.round}: {levels.size} levels for "
                        f"{rec.stratum_sizes[r.run].size} strata"
                    )
                rec.apply_levels(items, levels[strata], float(r.fraction))
            drawn = np.asarray(r.items, dtype=np.int64)
            if drawn.size:
                if rec.requested[drawn].any():
                    raise ValueError(f"run {r.run} round {r.round} draws an item twice")
                rec.request(drawn, int(r.judgments))
            cells, bands = r.bands
            if len(cells):
                rec.give_bands(np.asarray(cells, dtype=np.int64), np.asarray(bands, np.int8))
            for band, patterns in r.patterns:
                rec.switch_on(band, patterns)
            again = np.asarray(r.again, dtype=np.int64)
            if again.size:
                if not rec.requested[again].all():
                    raise ValueError(
                        f"run {r.run} round {r.round} asks again for an item never drawn"
                    )
                rec.ask(again)
            rec.rounds[r.run] = max(rec.rounds[r.run], int(r.round))
            rec.log.append(
                {
                    "run": r.run,
                    "round": int(r.round),
                    "seed": r.seed,
                    "n": int(drawn.size),
                    "again": int(again.size),
                    "levels": r.levels,
                    "fraction": r.fraction,
                }
            )

    def inclusion(self, state: TaskState) -> np.ndarray:
        """Current inclusion probability of every item (read-only view)."""
        view = self.record(state).inclusion.view()
        view.setflags(write=False)
        return view

    # -- estimation -------------------------------------------------------------------------
    def estimate(
        self, state: TaskState, runs=None, *, level: float | None = None
    ) -> list[RunEstimate]:
        """Precision, recall and F1 with intervals for ``runs`` (default: every run).

        ``level`` overrides the confidence of every interval (default: the design's
        ``confidence``), e.g. the Bonferroni-adjusted level of :mod:`..ranking`.
        """
        level = self.confidence if level is None else _checked_level(level)
        rec = self.record(state)
        labels = self.labels(state, rec)
        runs = range(state.n_runs) if runs is None else runs
        known = rec.known(labels)
        known_items = np.flatnonzero(known)
        # Recall is theta * nu over the part of the pool the verified sample reaches (see
        # :mod:`.pool`), plus the share of the reference sample in the run's items outside it.
        pool = sampled_part(
            rec,
            state.in_pool & (rec.inclusion > 0),
            known_items,
            min_items=BAND_AFTER if labels.noisy else 1,
        )
        cells = PoolCells.build(rec, pool, known_items, labels)
        ref = state.reference
        ref_in_pool = pool[ref.items] if ref.size else np.zeros(0, bool)
        theta = reference_ratio(ref, ref_in_pool) if ref.size else None
        out = []
        for i in runs:
            parts = self._precision(state, rec, i, labels, known, level=level)
            run_items = state.runs[i].items
            nu_ver = cells.nu(parts) if parts.covered else None
            if ref.size:
                in_x = contains(run_items, ref.items)
                nu_ref = reference_ratio(ref, in_x & ref_in_pool, ref_in_pool)
                simple = reference_ratio(ref, in_x)
                outside = (
                    reference_ratio(ref, in_x & ~ref_in_pool) if not pool[run_items].all() else None
                )
            else:
                nu_ref = simple = outside = None
            recall = recall_from_parts(
                theta,
                nu_ver,
                nu_ref,
                simple,
                outside=outside,
                level=level,
                method=self.interval,
                labels=cells.n_true + ref.size,
            )
            f1 = f1_estimate(
                parts.estimate, parts.variance, recall, level=level, method=self.interval
            )
            out.append(RunEstimate(i, parts.estimate, recall.estimate, f1))
        return out


@dataclass(frozen=True)
class _Looks:
    """A round's looks: bands given, answer patterns switched on, looks asked."""

    bands: tuple
    patterns: tuple
    asked: np.ndarray
    removed: float

    @classmethod
    def none(cls) -> _Looks:
        return cls((np.empty(0, np.int64), np.empty(0, np.int8)), (), np.empty(0, np.int64), 0.0)

    def plan(self, run, rnd, status, predicted, current) -> Plan:
        """A round that asks only for these looks (or for nothing)."""
        return Plan(
            run,
            rnd,
            np.empty(0, np.int64),
            status,
            predicted,
            current,
            float(self.asked.size),
            details={"levels": None, "fraction": 1.0},
            again=self.asked,
            bands=self.bands,
            patterns=self.patterns,
        )


def _scaled_half_width(half_width: float, variance: float, new_variance: float) -> float:
    """A half-width scaled by the square root of a variance ratio (the normal approximation)."""
    if not (math.isfinite(half_width) and math.isfinite(variance)) or variance <= 0:
        return half_width
    return half_width * math.sqrt(max(new_variance, 0.0) / variance)
