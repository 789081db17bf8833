"""Rank intervals: the arithmetic on hand-made intervals, and family-wise coverage by simulation.

The simulation runs the real default design on a synthetic task whose runs share verified items
(near-identical runs, an identical copy, a run overlapping the leader with a close precision, a
disjoint run, a small run), lets them arrive in random order, re-estimates every run at the
Bonferroni-adjusted level and checks that *every* run's true rank lies in its rank interval in at
least the nominal share of repeats (minus Monte-Carlo error). Measured figures are printed
(``pytest -s``) and recorded in docs/STATISTICS.md.
"""

import math

import numpy as np
import pytest

from evaluation.core.designs import make_design
from evaluation.core.measures import OPEN_MEASURES
from evaluation.core.ranking import (
    RankIntervals,
    bonferroni_level,
    rank_estimates,
    rank_intervals,
)
from evaluation.core.results import IntervalEstimate, RunEstimate
from evaluation.core.state import TaskState
from evaluation.simulation.datasets import Dataset, System
from evaluation.simulation.open_world.campaigns import true_scores

from design_campaigns import plan_until_done, ranking_dataset

FAMILY = 0.95


# -- arithmetic ------------------------------------------------------------------------------


def test_bonferroni_level():
    assert bonferroni_level(0.95, 1) == 0.95
    assert bonferroni_level(0.95, 0) == 0.95
    assert bonferroni_level(0.95, 10) == pytest.approx(0.995)
    with pytest.raises(ValueError):
        bonferroni_level(1.0, 3)


def test_disjoint_intervals_give_exact_ranks_whatever_the_input_order():
    values = [0.5, 0.9, 0.1, 0.7]
    low = [0.45, 0.85, 0.05, 0.65]
    high = [0.55, 0.95, 0.15, 0.75]
    r = rank_intervals(
        values,
        low,
        high,
        family_level=FAMILY,
        level=bonferroni_level(FAMILY, 4),
        runs=["c", "a", "d", "b"],
    )
    assert r.best == (3, 1, 4, 2) and r.worst == (3, 1, 4, 2)
    assert r.ranked == 4 and r.level == pytest.approx(0.9875) and r.family_level == FAMILY
    assert r.of("a") == (1, 1) and not r.tied_for_first("a")
    assert r.method == "bonferroni-simultaneous-intervals"


def test_overlapping_intervals_tie():
    # a and b overlap (tied for 1st); c overlaps b only; d is below everything.
    values = [0.90, 0.86, 0.80, 0.30]
    low = [0.85, 0.79, 0.72, 0.25]
    high = [0.95, 0.92, 0.84, 0.35]
    r = rank_intervals(values, low, high, family_level=FAMILY, level=0.9875)
    assert list(zip(r.best, r.worst, strict=True)) == [(1, 2), (1, 3), (2, 3), (4, 4)]
    assert r.tied_for_first(0) and r.tied_for_first(1)
    assert not r.tied_for_first(2) and not r.tied_for_first(3)


def test_touching_intervals_do_not_separate():
    r = rank_intervals([0.6, 0.4], [0.5, 0.3], [0.7, 0.5], family_level=FAMILY, level=0.975)
    assert r.best == (1, 1) and r.worst == (2, 2)


def test_nan_values_are_unranked_and_not_counted():
    values = [0.9, math.nan, 0.2]
    low = [0.8, 0.0, 0.1]
    high = [0.95, 1.0, 0.3]
    r = rank_intervals(values, low, high, family_level=FAMILY, level=bonferroni_level(FAMILY, 2))
    assert r.ranked == 2
    assert r.best == (1, None, 2) and r.worst == (1, None, 2)
    assert r.of(1) == (None, None) and not r.tied_for_first(1)


def test_all_unranked_and_single_run():
    r = rank_intervals([math.nan], [0.0], [1.0], family_level=FAMILY, level=FAMILY)
    assert r.ranked == 0 and r.best == (None,)
    r = rank_intervals([0.3], [0.0], [1.0], family_level=FAMILY, level=FAMILY)
    assert r.best == (1,) and r.worst == (1,) and not r.tied_for_first(0)
    r = rank_intervals([], [], [], family_level=FAMILY, level=FAMILY)
    assert r.runs == () and r.ranked == 0


def test_identical_runs_share_their_rank_interval():
    r = rank_intervals(
        [0.7, 0.7, 0.2], [0.69, 0.69, 0.1], [0.71, 0.71, 0.3], family_level=FAMILY, level=0.99
    )
    assert r.of(0) == r.of(1) == (1, 2)
    assert r.of(2) == (3, 3)
    # Exact (zero-width) and equal: still tied, never separated.
    r = rank_intervals([0.5, 0.5], [0.5, 0.5], [0.5, 0.5], family_level=FAMILY, level=0.975)
    assert r.best == (1, 1) and r.worst == (2, 2)


def test_intervals_below_the_adjusted_level_are_refused():
    with pytest.raises(ValueError, match="level"):
        rank_intervals(
            [0.1, 0.2, 0.3], [0, 0.1, 0.2], [0.2, 0.3, 0.4], family_level=FAMILY, level=FAMILY
        )
    with pytest.raises(ValueError):
        rank_intervals([0.1, 0.2], [0, 0.1], [0.2], family_level=FAMILY, level=0.99)
    with pytest.raises(ValueError):
        rank_intervals([0.1, 0.2], [0, math.nan], [0.2, 0.3], family_level=FAMILY, level=0.99)


def test_rank_estimates_reads_one_metric_and_checks_the_level():
    def est(v, lo, hi, level):
        e = IntervalEstimate(v, lo, hi, level, "m", 10)
        return e

    level = bonferroni_level(FAMILY, 2)
    out = [
        RunEstimate(
            7, est(0.9, 0.8, 0.95, level), est(0.1, 0.0, 0.3, level), est(0.2, 0.1, 0.3, level)
        ),
        RunEstimate(
            9, est(0.5, 0.4, 0.6, level), est(0.2, 0.1, 0.4, level), est(0.3, 0.2, 0.4, level)
        ),
    ]
    p = rank_estimates(out, "precision", family_level=FAMILY)
    assert isinstance(p, RankIntervals)
    assert p.runs == (7, 9) and p.of(7) == (1, 1) and p.of(9) == (2, 2)
    assert rank_estimates(out, "recall", family_level=FAMILY).of(7) == (1, 2)
    with pytest.raises(ValueError):
        rank_estimates(out, "precision", family_level=0.99)  # 0.975 < 0.995 needed


# -- simulation ------------------------------------------------------------------------------


def true_rank_range(truth: np.ndarray):
    """Per run, the range of ranks it may hold in truth (ties give a range)."""
    better = (truth[None, :] > truth[:, None]).sum(axis=1)
    worse = (truth[None, :] < truth[:, None]).sum(axis=1)
    return 1 + better, truth.size - worse


def ranking_campaigns(
    dataset, repeats, seed, *, family_level=FAMILY, reference_size=250, **options
):
    """Per repeat and metric: rank intervals (dataset order), true ranks, simultaneous cover."""
    truths = true_scores(dataset)
    k = len(dataset.systems)
    out = {
        "best": np.zeros((repeats, 3, k)),
        "worst": np.zeros((repeats, 3, k)),
        "all_cover": np.zeros((repeats, 3), bool),
        "cover": np.zeros((repeats, 3, k), bool),
        "labels": np.zeros(repeats),
    }
    truth_ids = np.flatnonzero(dataset.truth)
    for r in range(repeats):
        design = make_design("default", **options)
        rng = np.random.default_rng([seed, r])
        campaign = np.random.default_rng([seed, r, 1])
        order = campaign.permutation(k)
        state = TaskState(len(dataset.keys))
        state.set_reference(np.sort(campaign.choice(truth_ids, reference_size, replace=False)))
        for idx in order:
            system = dataset.systems[idx]
            run = state.add_run(system.items, system.scores, name=system.name)
            plan_until_done(design, state, run, dataset.truth, rng)
        out["labels"][r] = state.n_labelled
        level = bonferroni_level(family_level, k)
        estimates = design.estimate(state, level=level)
        for m, metric in enumerate(OPEN_MEASURES):
            ranks = rank_estimates(estimates, metric, family_level=family_level, runs=order)
            assert ranks.ranked == k
            truth = truths[order, m]
            e = [x.metric(metric) for x in estimates]
            covered = np.array([x.covers(t) for x, t in zip(e, truth, strict=True)])
            out["best"][r, m, order] = ranks.best
            out["worst"][r, m, order] = ranks.worst
            out["all_cover"][r, m] = covered.all()
            out["cover"][r, m, order] = covered
    return out, truths


def family_coverage(result, truths):
    """Share of repeats where every run's true rank range lies in its rank interval, per metric.

    ``strict``: the whole true tie range inside ``[best, worst]`` (what the procedure promises);
    ``any``: some rank of the tie range inside it (the weaker reading).
    """
    strict, loose = [], []
    for m in range(3):
        lo, hi = true_rank_range(truths[:, m])
        best, worst = result["best"][:, m], result["worst"][:, m]
        strict.append(((best <= lo) & (worst >= hi)).all(axis=1).mean())
        loose.append(((best <= hi) & (worst >= lo)).all(axis=1).mean())
    return np.array(strict), np.array(loose)


def monte_carlo_floor(level, repeats, z=2.33):
    return level - z * math.sqrt(level * (1 - level) / repeats)


@pytest.fixture(scope="module")
def ranking_simulation():
    dataset = ranking_dataset()
    repeats = 120
    result, truths = ranking_campaigns(dataset, repeats, seed=2026)
    return dataset, result, truths, repeats


@pytest.mark.slow
def test_rank_intervals_hold_jointly_at_the_nominal_level(ranking_simulation):
    dataset, result, truths, repeats = ranking_simulation
    strict, loose = family_coverage(result, truths)
    simultaneous = result["all_cover"].mean(axis=0)
    marginal = result["cover"].mean(axis=(0, 2))
    width = (result["worst"] - result["best"]).mean(axis=(0, 2))
    exact = (result["worst"] == result["best"]).mean(axis=(0, 2))
    print(
        f"\nrepeats={repeats} runs={len(dataset.systems)} labels={result['labels'].mean():.0f}"
        f" level/interval={bonferroni_level(FAMILY, len(dataset.systems)):.5f}"
    )
    for m, metric in enumerate(OPEN_MEASURES):
        print(
            f"{metric:9s} family coverage {strict[m]:.3f} (any-rank {loose[m]:.3f}); "
            f"all intervals cover {simultaneous[m]:.3f}; marginal {marginal[m]:.4f}; "
            f"mean width {width[m]:.2f} ranks; exact ranks {exact[m]:.2f}"
        )
    floor = monte_carlo_floor(FAMILY, repeats)
    assert (strict >= floor).all(), (strict, floor)
    assert (loose >= strict).all()
    # The premise of Bonferroni: the adjusted intervals hold simultaneously.
    assert (simultaneous >= floor).all(), simultaneous
    # The rank intervals are informative, not vacuous: well under the full range of 7 ranks.
    assert (width < 3.5).all(), width
    # Identical runs always share their rank interval.
    names = [s.name for s in dataset.systems]
    mid, copy = names.index("mid"), names.index("mid_copy")
    assert np.array_equal(result["best"][:, :, mid], result["best"][:, :, copy])
    assert np.array_equal(result["worst"][:, :, mid], result["worst"][:, :, copy])


def separated_dataset(seed: int = 1) -> Dataset:
    """Four runs with precisions 0.95, 0.75, 0.5, 0.2 on overlapping items."""
    rng = np.random.default_rng(seed)
    n_true, n_false = 2000, 3000
    truth = np.zeros(n_true + n_false, bool)
    truth[:n_true] = True
    t, f = rng.permutation(n_true), n_true + rng.permutation(n_false)
    runs = {
        "a": np.concatenate([t[:950], f[:50]]),
        "b": np.concatenate([t[200:950], f[:250]]),
        "c": np.concatenate([t[400:900], f[100:600]]),
        "d": np.concatenate([t[900:1100], f[600:1400]]),
    }
    built = tuple(
        System(n, np.sort(i).astype(np.int64), np.full(i.size, 0.5))
        for n, i in sorted(runs.items())
    )
    keys = np.array([f"k{i}" for i in range(truth.size)], dtype=object)
    return Dataset("separated", "", keys, truth, built, int(truth.sum()))


def test_well_separated_runs_with_plenty_of_labels_get_exact_precision_ranks():
    dataset = separated_dataset()
    result, truths = ranking_campaigns(dataset, 6, seed=7, target_half_width=0.02)
    lo, hi = true_rank_range(truths[:, 0])
    assert np.array_equal(lo, [1, 2, 3, 4]) and np.array_equal(hi, lo)
    assert (result["best"][:, 0] == lo).all()
    assert (result["worst"][:, 0] == lo).all()


@pytest.mark.slow
def test_precision_intervals_reach_the_level_ranking_50_runs_needs():
    """A lone run's precision interval holds at the Bonferroni level for 50 runs (0.999).

    Guards the fix for a gap this test found: the design used to stop ('met') while a score
    stratum had no verified item, its rate borrowed from a neighbour with no extra variance
    (coverage 0.97-0.98 at nominal 0.999).
    """
    dataset = ranking_dataset()
    k = [s.name for s in dataset.systems].index("disjoint")
    system = dataset.systems[k]
    level = bonferroni_level(FAMILY, 50)
    truth = true_scores(dataset)[k, 0]
    covered = []
    for r in range(300):
        design = make_design("default")
        rng = np.random.default_rng([5, r])
        state = TaskState(len(dataset.keys))
        run = state.add_run(system.items, system.scores)
        plan_until_done(design, state, run, dataset.truth, rng)
        covered.append(design.estimate(state, level=level)[0].precision.covers(truth))
    rate = float(np.mean(covered))
    print(f"\nlone run precision coverage at {level:.5f}: {rate:.3f}")
    assert rate >= monte_carlo_floor(level, len(covered))
