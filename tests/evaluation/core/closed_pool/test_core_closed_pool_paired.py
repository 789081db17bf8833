"""Paired differences of a closed pool's runs (:mod:`evaluation.core.closed_pool.paired`).

The edge cases of issue 31 on a synthetic rare-positive pool, sampled by the adaptive design
with a perfect oracle: identical runs, disjoint runs, one run a subset of another, runs with
exactly tied true measures but different items, and a tiny run. Each pair's 95% difference
interval must cover the true difference in at least 94% of the campaigns (fixed seeds; with
160 campaigns the Monte-Carlo standard error of a coverage near 0.97 is 0.013).
"""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.core.closed_pool import AdaptivePoolDesign, PoolState, measure_value
from evaluation.core.closed_pool.paired import pool_paired_differences
from evaluation.core.ranking import paired_rank_intervals

MEASURES = ("precision", "recall", "f1")
N_ITEMS = 20000
POSITIVES = 60


def _edge_pool(seed: int = 7) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]:
    """``(truth, predictions by name, scores)``: runs built around one good run."""
    rng = np.random.default_rng(seed)
    truth = np.zeros(N_ITEMS, dtype=bool)
    truth[rng.choice(N_ITEMS, POSITIVES, replace=False)] = True
    scores = np.clip(np.where(truth, rng.beta(3, 2, N_ITEMS), rng.beta(1, 12, N_ITEMS)), 0, 1)
    good = scores > 0.35
    # Same true counts as ``good`` on other items: one true positive and one false positive
    # swapped for ones it does not predict.
    tie = good.copy()
    tie[np.flatnonzero(good & truth)[0]] = False
    tie[np.flatnonzero(~good & truth)[0]] = True
    tie[np.flatnonzero(good & ~truth)[0]] = False
    tie[np.flatnonzero(~good & ~truth & (scores > 0.2))[0]] = True
    subset = good & (scores > 0.6)
    disjoint = (scores > 0.15) & ~good
    tiny = np.zeros(N_ITEMS, dtype=bool)
    tiny[np.argsort(-scores)[:3]] = True
    runs = {
        "good": good,
        "copy": good.copy(),
        "tie": tie,
        "subset": subset,
        "disjoint": disjoint,
        "tiny": tiny,
    }
    return truth, runs, scores


def _truth(truth: np.ndarray, predictions: np.ndarray) -> np.ndarray:
    tp = np.count_nonzero(truth & predictions)
    fn = np.count_nonzero(truth & ~predictions)
    pp = np.count_nonzero(predictions)
    return np.array([float(measure_value(m, tp, fn, pp=pp, n=truth.size)) for m in MEASURES])


def _campaign(truth, runs, scores, *, budget: int, seed: int):
    design = AdaptivePoolDesign(targets=MEASURES)
    state = PoolState(truth.size)
    rng = np.random.default_rng([seed, 0])
    caps = np.rint(budget * np.arange(1, len(runs) + 1) / len(runs)).astype(int)
    for (name, predictions), cap in zip(runs.items(), caps, strict=True):
        run = state.add_run(scores, predictions, name=name)
        while (room := int(cap) - state.n_labelled) > 0:
            items = design.plan(state, run, budget=room, rng=rng)
            if items.size == 0:
                break
            state.set_labels(items, truth[items])
    estimates = design.estimate(state, level=0.95, measures=MEASURES)
    return design, state, estimates


def test_identical_runs_differ_by_exactly_zero_and_are_never_ordered():
    truth, runs, scores = _edge_pool()
    design, state, estimates = _campaign(truth, runs, scores, budget=200, seed=1)
    paired = pool_paired_differences(design, state, estimates, measures=MEASURES)
    for m in MEASURES:
        d = paired[m].difference(0, 1, level=0.95)
        assert (d.value, d.low, d.high) == (0.0, 0.0, 0.0)
        assert paired[m].identical[0, 1] and not paired[m].identical[0, 2]
        ranks = paired_rank_intervals(paired[m], family_level=0.95)
        assert ranks.of(0) == ranks.of(1)


def test_a_near_copys_difference_is_far_below_two_independent_runs():
    """A run and its near copy (two items swapped) differ with a standard error well below that
    of two independent runs of their variances (precision and F1; recall at 200 labels of a
    pool of 20,000 items is dominated by each run's own interval, whose excess over the
    linearised variance counts as independent), and the covariance is positive
    semi-definite."""
    truth, runs, scores = _edge_pool()
    design, state, estimates = _campaign(truth, runs, scores, budget=200, seed=1)
    paired = pool_paired_differences(design, state, estimates, measures=MEASURES)
    for m in MEASURES:
        cov = paired[m].covariance
        assert np.linalg.eigvalsh(cov).min() > -1e-12
    for m in ("precision", "f1"):
        own = np.sqrt(np.diag(paired[m].covariance))
        assert own[0] > 0 and own[2] > 0
        assert paired[m].standard_errors[0, 2] < 0.6 * np.hypot(own[0], own[2])


@pytest.mark.slow
def test_every_edge_case_pairs_difference_interval_covers_at_least_094():
    truth, runs, scores = _edge_pool()
    names = list(runs)
    true = np.array([_truth(truth, runs[name]) for name in names])
    pairs = [(0, j) for j in range(1, len(names))] + [(3, 4), (3, 5), (4, 5)]
    covered = np.zeros((len(pairs), len(MEASURES)))
    campaigns = 160
    for seed in range(campaigns):
        design, state, estimates = _campaign(truth, runs, scores, budget=250, seed=seed)
        paired = pool_paired_differences(design, state, estimates, measures=MEASURES)
        for p, (a, b) in enumerate(pairs):
            for k, m in enumerate(MEASURES):
                d = paired[m].difference(a, b, level=0.95)
                gap = true[a, k] - true[b, k]
                covered[p, k] += d.low - 1e-12 <= gap <= d.high + 1e-12
    coverage = covered / campaigns
    assert coverage.min() >= 0.94, {
        f"{names[a]}-{names[b]}": dict(zip(MEASURES, np.round(coverage[p], 3), strict=True))
        for p, (a, b) in enumerate(pairs)
    }
