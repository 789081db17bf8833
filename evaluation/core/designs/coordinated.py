"""The ``default`` design: coordinated Poisson sampling, score strata, planning in rounds.

Why this design (the numbers are in docs/STATISTICS.md and docs/BENCHMARKS.md):

* **One sample for all runs.** Every item ``x`` of the union carries one inclusion probability
  ``pi(x)``: the largest level any run has asked for it. Raising a level from ``a`` to ``b`` draws
  each not-yet-sampled item with probability ``(b - a) / (1 - a)``, which is the same as keeping
  a permanent uniform number ``u(x)`` per item and sampling it when ``u(x) < pi(x)`` (coordinated
  "permanent random number" sampling, Ohlsson 1995). The verified items are therefore a single
  Poisson sample of the union with known ``pi``; *every* run uses *every* verified item it contains,
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
* **Recall** is ``theta * nu + rho`` (STATISTICS.md §1) over the part of the union the verified
  sample speaks for (:func:`.union.sampled_part`): ``theta`` is the reference sample's share in it,
  ``nu`` (the run's share of its correct items) is estimated twice, independently, from the
  verified items (Hajek ratios within union cells, §3.2) and from the reference items inside it,
  combined with weights fixed by their effective sizes, and ``rho`` is the reference sample's
  share in the run's items outside it. **F1** is the plug-in value with a delta-method variance
  that bounds the precision-recall covariance by Cauchy-Schwarz (they share draws, §3.5), so its
  interval errs on the wide side.

* **Fallible annotators.** Labels are posteriors under a Dawid-Skene annotator model fitted to
  every judgment (:mod:`..annotators`, :mod:`..labels`), with the union cells as prior classes;
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
from collections.abc import Iterable, Sequence
from dataclasses import replace

import numpy as np

from ..annotators import AnnotatorPrior
from ..labels import ItemLabels, item_labels
from ..reference import ReferenceRatio, reference_ratio
from ..results import Plan, RoundRecord, RunEstimate
from ..sorted_sets import contains
from ..state import TaskState
from .common import checked_level as _checked_level
from .common import f1_estimate, recall_from_parts, validate_common_options
from .precision import PrecisionParts, stratified_precision
from .record import SamplingRecord, score_strata
from .rounds import Looks, ask_looks, draw_round, new_item_noise, scaled_half_width
from .second_looks import BAND_AFTER
from .union import UnionCells, sampled_part

__all__ = ["CoordinatedPoissonDesign", "score_strata"]


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
        with the union cells as prior classes (cached until labels, judgments or runs change)."""
        rec = self.record(state) if rec is None else rec
        key = (state.labels_version, state.n_runs, state.n_items)
        if rec.labels_cache is None or rec.labels_cache[0] != key:
            rec.labels_cache = (
                key,
                item_labels(state, item_class=rec.cell, prior=self.annotator_prior),
            )
        return rec.labels_cache[1]

    def prepare(self, state: TaskState, run: int) -> None:
        """The label view and ``run``'s post-strata pieces (:meth:`_pieces`), cached on the
        record: planning a first round of a million predictions spends a fifth of its time
        there, which a service can spend before the task's engine lease."""
        rec = self.record(state)
        self._pieces(rec, run, state.runs[run].items, self.labels(state, rec))

    def _pieces(
        self, rec: SamplingRecord, run: int, items: np.ndarray, labels: ItemLabels
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``run``'s post-strata (:meth:`.record.SamplingRecord.post_strata`), banded with
        fallible annotators once any cell has a band."""
        banded = labels.noisy and bool((rec.cell_band >= 0).any())
        return rec.post_strata(run, items, banded=banded)

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

        The post-strata split each score stratum by agreement and, with fallible annotators and
        banded cells, by band (:meth:`.record.SamplingRecord.post_strata`); the planner still
        sees one rate per score stratum.
        """
        if known is None:
            known = rec.known(labels)
        items = state.runs[run].items
        pieces, merge, sizes = self._pieces(rec, run, items, labels)
        blocks, census_groups = rec.post_stratum_parts(sizes.size)
        parts = stratified_precision(
            items,
            pieces,
            sizes,
            rec.inclusion,
            known,
            labels,
            covered=rec.is_covered(run, items),
            level=self.confidence if level is None else level,
            interval=self.interval,
            blocks=blocks,
            census_groups=census_groups,
            merge=merge,
        )
        n_strata = rec.stratum_sizes[run].size
        by_stratum = sizes.reshape(n_strata, -1)
        rates = parts.stratum_rates.reshape(n_strata, -1)
        with np.errstate(invalid="ignore", divide="ignore"):
            planning = (by_stratum * rates).sum(axis=1) / by_stratum.sum(1)
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
        reaches always get a positive level. With fallible annotators, the round first asks the
        looks the rules of :mod:`.second_looks` owe (:func:`.rounds.ask_looks`); each stratum's
        predicted variance is inflated for the label noise new items bring
        (:func:`.second_looks.noise_profile`). The steps are in :mod:`.rounds`.
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
        looks, inflation, cost = self._looks_and_noise(
            rec, run, items, parts, labels, rates, remaining=remaining
        )
        without_new_items = self._looks_only(
            run, rnd, parts, looks, met=met, unrequested=unrequested, remaining=remaining
        )
        if without_new_items is not None:
            return without_new_items
        return draw_round(
            rec,
            items,
            run,
            rnd,
            parts,
            looks,
            self,
            rates=rates,
            inflation=inflation,
            cost=cost,
            remaining=remaining - looks.asked.size,
            rng=rng,
        )

    def _looks_and_noise(
        self,
        rec: SamplingRecord,
        run: int,
        items: np.ndarray,
        parts: PrecisionParts,
        labels: ItemLabels,
        rates: np.ndarray,
        *,
        remaining: float,
    ) -> tuple[Looks, np.ndarray, np.ndarray]:
        """The round's looks (fallible annotators, budget left) and, per stratum, a new item's
        noise inflation and judgment cost under the answer patterns switched on by then."""

        def noise() -> tuple[np.ndarray, np.ndarray]:
            return new_item_noise(
                labels,
                rates,
                rec.look_patterns,
                parts,
                rec.strata[run],
                items,
                judgments=self.judgments_per_item,
                max_judgments=self.max_judgments_per_item,
            )

        inflation, cost = noise()
        looks = Looks.none()
        if labels.noisy and remaining >= 1:
            looks = ask_looks(
                rec,
                labels,
                judgments=self.judgments_per_item,
                max_judgments=self.max_judgments_per_item,
                remaining=remaining,
            )
            if looks.patterns:
                inflation, cost = noise()
        return looks, inflation, cost

    def _looks_only(
        self,
        run: int,
        rnd: int,
        parts: PrecisionParts,
        looks: Looks,
        *,
        met: bool,
        unrequested: np.ndarray,
        remaining: float,
    ) -> Plan | None:
        """The round when it draws no new item (target met, run exhausted, budget spent, the
        annotators' uncertainty in the way, or the looks enough); ``None`` when it draws."""
        current = parts.estimate.half_width
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
        after = scaled_half_width(current, parts.variance, parts.variance - looks.removed)
        enough = after <= self.target_half_width and parts.covered and not parts.unsampled
        if looks.asked.size and (enough or not unrequested.any()):
            return looks.plan(run, rnd, "sample", after, current)
        return None

    def _annotator_limited(self, parts: PrecisionParts) -> bool:
        """The annotators' shared uncertainty keeps the interval wider than the target while the
        run's own part meets it, or is no larger than the shared part: more items of this run
        would buy little (the shared part does not shrink with them), judgments anywhere in the
        task narrow it (gold answers most)."""
        if not (parts.covered and not parts.unsampled and parts.parameter_variance > 0):
            return False
        own = parts.variance - parts.parameter_variance
        own_half_width = scaled_half_width(parts.estimate.half_width, parts.variance, own)
        return own_half_width <= self.target_half_width or own <= parts.parameter_variance

    # -- persistence ------------------------------------------------------------------------
    def replay(
        self, state: TaskState, rounds: Iterable[RoundRecord], *, extend: bool = False
    ) -> None:
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
    def precision_parts(
        self, state: TaskState, runs: Sequence[int] | None = None
    ) -> list[PrecisionParts]:
        """Each run's precision with its per-item pieces (verified items, coefficients,
        residuals, inclusion probabilities), as :meth:`estimate` computes it (and keeps in each
        ``RunEstimate.precision_parts``): what :mod:`..paired` correlates across runs."""
        rec = self.record(state)
        labels = self.labels(state, rec)
        known = rec.known(labels)
        runs = range(state.n_runs) if runs is None else runs
        return [self._precision(state, rec, i, labels, known) for i in runs]

    def estimate(
        self, state: TaskState, runs: Sequence[int] | None = None, *, level: float | None = None
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
        # Recall is theta * nu over the part of the union the verified sample reaches (see
        # :mod:`.union`), plus the share of the reference sample in the run's items outside it.
        union = sampled_part(
            rec,
            state.in_union & (rec.inclusion > 0),
            known_items,
            min_items=BAND_AFTER if labels.noisy else 1,
        )
        cells = UnionCells.build(rec, union, known_items, labels)
        ref = state.reference
        ref_in_union = union[ref.items] if ref.size else np.zeros(0, bool)
        theta = reference_ratio(ref, ref_in_union) if ref.size else None
        out = []
        for i in runs:
            parts = self._precision(state, rec, i, labels, known, level=level)
            run_items = state.runs[i].items
            nu_ver = cells.nu(parts) if parts.covered else None
            nu_ref: ReferenceRatio | None
            simple: ReferenceRatio | None
            outside: ReferenceRatio | None
            if ref.size:
                in_x = contains(run_items, ref.items)
                nu_ref = reference_ratio(ref, in_x & ref_in_union, ref_in_union)
                simple = reference_ratio(ref, in_x)
                outside = (
                    reference_ratio(ref, in_x & ~ref_in_union)
                    if not cells.holds(rec, i, run_items)
                    else None
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
            out.append(RunEstimate(i, parts.estimate, recall.estimate, f1, parts))
        return out
