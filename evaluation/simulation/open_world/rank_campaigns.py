"""Simulated campaigns scored on ranks and paired differences (issue 31).

One campaign is the one of :mod:`.campaigns` (systems chosen at random, arriving in random
order, each planned in rounds until the design stops, answered by a perfect oracle or a panel),
kept as a task state so that the joint estimates of the runs can be computed; then, per measure,
both rank methods (Bonferroni on the marginal intervals, and paired differences) and the
difference intervals are scored against the truth:

* ``family_coverage``: every run's true rank range ``[1 + #truly better, K - #truly worse]``
  lies in its rank interval;
* ``excess_width``: the rank interval's width minus the true range's width, per run;
* ``pairs_resolved``: share of the pairs whose true difference is at least ``resolve_gap`` that
  the rank intervals order (the runs' intervals do not overlap).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...core.designs import CoordinatedPoissonDesign
from ...core.measures import OPEN_MEASURES
from ...core.order_rounds import order_round
from ...core.paired import PairedDifferences, paired_differences
from ...core.ranking import (
    RankIntervals,
    bonferroni_level,
    paired_rank_intervals,
    rank_estimates,
)
from ...core.state import TaskState
from ..annotators import AnnotatorPanel, PerfectOracle, choose_gold
from ..campaigns import Annotators
from ..datasets import Dataset
from .campaigns import true_scores

__all__ = ["RankCampaign", "RankScores", "rank_campaign", "score_ranks", "true_rank_ranges"]

RANK_METHODS = ("paired", "bonferroni")


@dataclass(frozen=True)
class RankCampaign:
    """One finished campaign: its state, the design that sampled it, the systems in run order
    (``order[r]`` is the system of run ``r``) and the judgments (or labels) it took."""

    state: TaskState
    design: CoordinatedPoissonDesign
    order: np.ndarray
    judgments: int


@dataclass(frozen=True)
class RankScores:
    """How one method's rank intervals of one measure fared in one campaign."""

    covered: bool
    excess_width: float
    width: float
    pairs_resolved: float


def rank_campaign(
    dataset: Dataset,
    *,
    n_systems: int | None,
    reference_size: int,
    seed: Sequence[int],
    annotators: Annotators | None = None,
    design_options: dict | None = None,
    max_rounds: int = 200,
    order_share: float = 0.0,
    order_rounds: int = 3,
    order_options: dict | None = None,
) -> RankCampaign:
    """Play one campaign of the ``default`` design with the streams of
    :func:`.campaigns.simulate`'s repeat ``seed = [seed, r]``: the same systems, order,
    reference sample and draws.

    ``order_share > 0``: once every run is planned, the planner's order option
    (:func:`...core.order_rounds.order_round`) spends that share of the judgments taken so
    far more, in ``order_rounds`` rounds, on the items where unresolved neighbours disagree."""
    options = dict(design_options or {})
    if annotators is not None:
        options.setdefault("max_judgments_per_item", len(annotators.profiles))
    design = CoordinatedPoissonDesign(**options)
    rng = np.random.default_rng(list(seed))
    campaign_rng = np.random.default_rng([*seed, 1])
    total = len(dataset.systems)
    k = total if n_systems is None else min(n_systems, total)
    order = campaign_rng.permutation(total)[:k]
    truth_ids = np.flatnonzero(dataset.truth)
    ref = campaign_rng.choice(truth_ids, size=min(reference_size, truth_ids.size), replace=False)
    state = TaskState(len(dataset.keys))
    state.set_reference(np.sort(ref))
    answerer = _answerer(dataset, order, annotators, design, np.random.default_rng([*seed, 2]))
    if annotators is not None:
        state.set_gold(answerer.gold_items, dataset.truth[answerer.gold_items])
    for idx in order:
        system = dataset.systems[idx]
        run = state.add_run(system.items, system.scores, name=system.name)
        for _ in range(max_rounds):
            plan = design.plan(state, run, rng=rng)
            answerer.answer(state, plan)
            if plan.done:
                break
    if order_share > 0:
        _order_rounds(
            state, design, answerer, annotators, order_share, order_rounds, rng, order_options
        )
    judgments = answerer.judgments if annotators is not None else state.n_labelled
    return RankCampaign(state, design, order, int(judgments))


def _order_rounds(state, design, answerer, annotators, share, rounds, rng, options) -> None:
    spent = answerer.judgments if annotators is not None else state.n_labelled
    budget = share * spent
    for r in range(rounds):
        plan = order_round(
            design, state, judgments=budget / (rounds - r), rng=rng, **(options or {})
        )
        answerer.answer(state, plan)
        budget -= plan.expected_labels
        if plan.done:
            break


def _answerer(dataset, order, annotators, design, rng):
    if annotators is None:
        return PerfectOracle(dataset.truth)
    union = np.unique(np.concatenate([dataset.systems[i].items for i in order]))
    gold = choose_gold(dataset.truth, union, annotators.gold_items, rng)
    return AnnotatorPanel(
        annotators.profiles,
        dataset.truth,
        gold,
        annotators.gold_rate,
        design.judgments_per_item,
        rng,
    )


def true_rank_ranges(truth: np.ndarray, *, tol: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
    """``[1 + #truly better, K - #truly worse]`` per run from true values (ties share a range)."""
    better = (truth[None, :] > truth[:, None] + tol).sum(axis=1)
    worse = (truth[None, :] < truth[:, None] - tol).sum(axis=1)
    return 1 + better, truth.size - worse


def score_ranks(
    ranks: RankIntervals, truth: np.ndarray, *, resolve_gap: float = 0.02
) -> RankScores:
    """Score rank intervals of runs (in ``ranks.runs`` order) against their true values."""
    best = np.array([b if b is not None else 1 for b in ranks.best])
    worst = np.array([w if w is not None else truth.size for w in ranks.worst])
    lo, hi = true_rank_ranges(truth)
    covered = bool(((best <= lo) & (hi <= worst)).all())
    width = worst - best
    excess = width - (hi - lo)
    gap = truth[None, :] - truth[:, None]
    # Run j is ordered above run i when j's whole rank interval lies above i's.
    ordered = worst[None, :] < best[:, None]
    wide = gap >= resolve_gap
    resolved = float(ordered[wide].mean()) if wide.any() else float("nan")
    return RankScores(covered, float(excess.mean()), float(width.mean()), resolved)


def campaign_ranks(
    campaign: RankCampaign,
    *,
    family_level: float = 0.95,
    method: str = "max-t",
    rng_seed: int = 0,
    seconds: dict[str, float] | None = None,
) -> tuple[dict[str, RankIntervals], dict[str, RankIntervals], dict[str, PairedDifferences]]:
    """Per measure: Bonferroni's rank intervals, the paired ones, and the paired differences.

    ``seconds``, when given, accumulates the time of the estimates (``"estimate"``), of the
    paired differences (``"paired"``) and of the paired rank intervals (``"ranks"``)."""
    state, design = campaign.state, campaign.design
    k = state.n_runs
    clock = _Clock(seconds)
    estimates = design.estimate(state, level=bonferroni_level(family_level, k))
    clock("estimate")
    paired = paired_differences(design, state, estimates=estimates)
    clock("paired")
    bonferroni = {m: rank_estimates(estimates, m, family_level=family_level) for m in OPEN_MEASURES}
    clock(None)
    by_pairs = {
        m: paired_rank_intervals(
            paired[m],
            family_level=family_level,
            method=method,
            rng=np.random.default_rng(rng_seed),
        )
        for m in OPEN_MEASURES
    }
    clock("ranks")
    return bonferroni, by_pairs, paired


class _Clock:
    """Adds the time since the last call to ``seconds[name]`` (``None``: not counted)."""

    def __init__(self, seconds: dict[str, float] | None):
        self.seconds = seconds
        self.last = time.perf_counter()

    def __call__(self, name: str | None) -> None:
        now = time.perf_counter()
        if self.seconds is not None and name is not None:
            self.seconds[name] = self.seconds.get(name, 0.0) + now - self.last
        self.last = now


def campaign_truth(dataset: Dataset, campaign: RankCampaign) -> np.ndarray:
    """``(runs, 3)`` true precision, recall and F1 of the campaign's runs, in run order."""
    return true_scores(dataset)[campaign.order]
