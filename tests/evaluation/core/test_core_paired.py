"""Paired differences: the joint covariance on hand-made states, and coverage by simulation.

The simulation plays the default design on the synthetic task of ``tests/support`` (precision
near 0 and near 1, a run disjoint from all others, an identical copy, a nested run, runs of 1,
3 and 5 items) and checks that every pair's 95% difference interval covers the true difference
and that the differences are unbiased, within Monte-Carlo error. Measured figures are printed
(``pytest -s``) and recorded in docs/STATISTICS.md.
"""

import math

import numpy as np
import pytest

from evaluation.core.designs import make_design
from evaluation.core.intervals import normal_quantile
from evaluation.core.measures import OPEN_MEASURES
from evaluation.core.paired import PairedDifferences, joint_covariance, paired_differences
from evaluation.core.state import TaskState
from evaluation.simulation.campaigns import Annotators
from evaluation.simulation.open_world.rank_campaigns import campaign_truth, rank_campaign

from design_campaigns import plan_until_done, synthetic_dataset

# -- arithmetic ------------------------------------------------------------------------------


def test_joint_covariance_raises_the_diagonal_to_the_marginal_variances():
    gram = np.array([[4.0, 2.0, 0.0], [2.0, 4.0, 0.0], [0.0, 0.0, 1.0]]) * 1e-4
    cov = joint_covariance(np.array([9e-4, 1e-4, math.nan]), gram)
    # Run 0's marginal variance exceeds its linearised one: the excess is its own; run 1 keeps
    # its linearised variance (the larger); an unranked run keeps the linearised one.
    assert np.allclose(np.diag(cov), [9e-4, 4e-4, 1e-4])
    assert cov[0, 1] == pytest.approx(2e-4) and cov[0, 2] == 0.0
    assert np.linalg.eigvalsh(cov).min() >= -1e-15


def test_difference_interval_and_identical_runs():
    cov = np.array([[0.0004, 0.0003], [0.0003, 0.0004]])
    paired = PairedDifferences(
        ("a", "b"), "precision", np.array([0.80, 0.75]), cov, np.eye(2, dtype=bool)
    )
    d = paired.difference("a", "b", level=0.95)
    se = math.sqrt(0.0004 + 0.0004 - 2 * 0.0003)
    assert d.value == pytest.approx(0.05)
    assert d.low == pytest.approx(0.05 - normal_quantile(0.95) * se)
    assert d.high == pytest.approx(0.05 + normal_quantile(0.95) * se)
    same = PairedDifferences(
        ("a", "b"), "precision", np.array([0.80, 0.79]), cov, np.ones((2, 2), bool)
    )
    d = same.difference("b", "a", level=0.95)
    assert (d.value, d.low, d.high) == (0.0, 0.0, 0.0)


# -- edge cases on a real design -------------------------------------------------------------


def planned_state(runs, truth, *, reference, seed=0, **options):
    """A state with ``runs`` (item arrays) planned until done by the default design."""
    design = make_design("default", **options)
    state = TaskState(truth.size)
    state.set_reference(reference)
    rng = np.random.default_rng(seed)
    for items in runs:
        plan_until_done(design, state, state.add_run(items), truth, rng)
    return design, state


@pytest.fixture(scope="module")
def edge_world():
    rng = np.random.default_rng(3)
    truth = np.zeros(6000, bool)
    truth[rng.choice(6000, 3600, replace=False)] = True
    t, f = np.flatnonzero(truth), np.flatnonzero(~truth)
    runs = [
        np.sort(np.concatenate([t[:1500], f[:500]])),  # 0: a 0.75 run
        None,  # 1: its identical copy
        np.sort(np.concatenate([t[:1500], f[:500]]))[::2],  # 2: a subset of run 0
        np.sort(np.concatenate([t[2000:2800], f[1000:1200]])),  # 3: disjoint from 0
        np.sort(np.concatenate([t[2800:2803]])),  # 4: a tiny run, precision 1
        np.sort(np.concatenate([f[2000:2400], t[3000:3004]])),  # 5: precision near 0
    ]
    runs[1] = runs[0].copy()
    reference = np.sort(rng.choice(t, 300, replace=False))
    design, state = planned_state(runs, truth, reference=reference)
    return design, state, paired_differences(design, state)


def test_identical_runs_differ_by_exactly_zero(edge_world):
    _, _, paired = edge_world
    for m in OPEN_MEASURES:
        d = paired[m].difference(0, 1, level=0.95)
        assert (d.value, d.low, d.high) == (0.0, 0.0, 0.0), m


def test_disjoint_runs_are_uncorrelated_on_precision(edge_world):
    design, state, paired = edge_world
    assert paired["precision"].covariance[0, 3] == 0.0
    se = paired["precision"].standard_errors[0, 3]
    # Nothing shared: the difference's variance is the sum of the two runs' own variances,
    # the estimator's (at least its linearised part).
    parts = design.precision_parts(state, [0, 3])
    var = np.diag(paired["precision"].covariance)
    assert var[0] >= parts[0].variance and var[3] >= parts[1].variance
    assert se == pytest.approx(math.sqrt(var[0] + var[3]))


def test_the_former_model_stays_available_and_is_wider(edge_world):
    design, state, paired = edge_world
    old = paired_differences(design, state, precision_variance="interval", recall_model="reference")
    # Precision: each run's variance is the larger of the estimator's and its interval's.
    var, old_var = np.diag(paired["precision"].covariance), np.diag(old["precision"].covariance)
    parts = design.precision_parts(state)
    assert (var >= old_var - 1e-15).all()
    assert (var >= np.array([p.variance for p in parts]) - 1e-15).all()
    for m in ("recall", "f1"):
        assert paired[m].standard_errors.mean() < old[m].standard_errors.mean(), m
    # The recall of a subset differs from its superset's only where the verified items of
    # the half it lacks say: sharper than the 300 reference items.
    assert paired["recall"].standard_errors[0, 2] < 0.8 * old["recall"].standard_errors[0, 2]
    with pytest.raises(ValueError, match="precision variance"):
        paired_differences(design, state, precision_variance="pooled")
    with pytest.raises(ValueError, match="recall model"):
        paired_differences(design, state, recall_model="union")


def test_a_subset_is_positively_correlated_and_shares_its_reference_items(edge_world):
    _, _, paired = edge_world
    for m in OPEN_MEASURES:
        cov = paired[m].covariance
        assert cov[0, 2] > 0, m
        var = np.diag(cov)
        assert paired[m].standard_errors[0, 2] ** 2 < var[0] + var[2], m


def test_every_covariance_is_positive_semi_definite(edge_world):
    _, _, paired = edge_world
    for m in OPEN_MEASURES:
        cov = paired[m].covariance
        assert np.allclose(cov, cov.T)
        assert np.linalg.eigvalsh(cov).min() >= -1e-12 * max(np.abs(cov).max(), 1e-300), m


def test_tiny_and_extreme_runs_get_finite_differences(edge_world):
    _, _, paired = edge_world
    p = paired["precision"]
    assert p.values[4] == 1.0 and p.values[5] < 0.05
    d = p.difference(4, 5, level=0.95)
    assert d.low > 0.5 and d.high <= 1.0
    assert np.isfinite(p.standard_errors).all()


def test_no_reference_sample_leaves_recall_uncorrelated():
    truth = np.zeros(200, bool)
    truth[:120] = True
    design, state = planned_state(
        [np.arange(0, 150), np.arange(50, 200)], truth, reference=np.empty(0, np.int64)
    )
    paired = paired_differences(design, state)
    assert np.isnan(paired["recall"].values).all()
    d = paired["recall"].difference(0, 1, level=0.95)
    assert math.isnan(d.value) and (d.low, d.high) == (-1.0, 1.0)


def test_one_estimate_per_run_is_needed(edge_world):
    design, state, _ = edge_world
    with pytest.raises(ValueError):
        paired_differences(design, state, [0, 1], estimates=design.estimate(state, [0]))


# -- simulation ------------------------------------------------------------------------------

REPEATS = 200
# Per pair and measure, the share of repeats whose 95% interval covers the true difference must
# be at least PAIR_FLOOR. Measured (seed 2031, 200 repeats, a perfect oracle): every pair of the
# 45 >= 0.960 on precision, >= 0.980 on recall, >= 0.975 on F1 (mean 0.996 / 0.990 / 0.993;
# engine 1.x's reference-share recall: 0.935 / 0.940, seed 5 0.935 / 0.930; the F1 pair of a
# 5-item run and a run of precision 0.02 covered 0.75 before F1 was made linear in the
# precision, see paired._f1_through_precision). A pair whose true coverage is 0.935 falls below
# 0.85 in P(Bin(200, 0.935) < 170) = 6.5e-6 of seeds; over the 135 pairs and measures, by the
# union bound, the assertion fails in at most 9e-4 of seeds.
PAIR_FLOOR = 0.85
# The mean coverage over the pairs of a measure must reach MEAN_FLOOR: taking the 200 repeats
# as the only independent units, the standard error of a mean near 0.96 is at most
# sqrt(0.06 * 0.94 / 200) = 0.017, and 0.90 lies 3.5 of them below the measured 0.965
# (2e-4 of seeds, per measure).
MEAN_FLOOR = 0.90


def pair_campaigns(repeats, seed, annotators=None):
    dataset = synthetic_dataset()
    k = len(dataset.systems)
    z = normal_quantile(0.95)
    covered = np.zeros((repeats, 3, k, k), bool)
    error = np.zeros((repeats, 3, k, k))
    for r in range(repeats):
        c = rank_campaign(
            dataset, n_systems=None, reference_size=200, seed=[seed, r], annotators=annotators
        )
        paired = paired_differences(c.design, c.state)
        truth = campaign_truth(dataset, c)
        o = np.ix_(c.order, c.order)
        for m, measure in enumerate(OPEN_MEASURES):
            d, se = paired[measure].differences, paired[measure].standard_errors
            true_d = truth[:, m][:, None] - truth[:, m][None, :]
            covered[r, m][o] = np.abs(d - true_d) <= z * se + 1e-9
            error[r, m][o] = d - true_d
    return dataset, covered, error


@pytest.mark.slow
def test_difference_intervals_cover_in_every_edge_case():
    dataset, covered, error = pair_campaigns(REPEATS, seed=2031)
    k = len(dataset.systems)
    off = ~np.eye(k, dtype=bool)
    rate = covered.mean(axis=0)  # (measure, k, k)
    for m, measure in enumerate(OPEN_MEASURES):
        print(
            f"\n{measure:9s} pair coverage min {rate[m][off].min():.3f} "
            f"mean {rate[m][off].mean():.3f}"
        )
        assert rate[m][off].min() >= PAIR_FLOOR, (measure, rate[m])
        assert rate[m][off].mean() >= MEAN_FLOOR, measure
    # Unbiased within Monte-Carlo error: the mean error of each difference within 5 of its
    # standard errors (135 differences: 135 * 5.7e-7 = 8e-5 of seeds), plus 0.005 for the
    # marginal estimators' own bias (measured below 0.005, docs/STATISTICS.md).
    mean = error.mean(axis=0)
    se = error.std(axis=0, ddof=1) / math.sqrt(REPEATS)
    assert (np.abs(mean) <= 5 * se + 0.005).all(), np.abs(mean).max()


@pytest.mark.slow
def test_difference_intervals_cover_in_every_edge_case_with_fallible_annotators():
    """Five 95%-accurate annotators with gold items. Measured (seed 2031, 200 repeats): every
    pair >= 0.940 on precision, >= 0.970 on recall, >= 0.965 on F1 (means 0.979 / 0.990 /
    0.990). Before the small censuses' exact bounds the pairs of the runs of 3 and 5 items
    covered 0.83-0.89 on precision (every other pair and measure as now). The floors and their
    failure rates are those of the perfect oracle's test above."""
    dataset, covered, _ = pair_campaigns(REPEATS, seed=2031, annotators=Annotators("0.95x5"))
    k = len(dataset.systems)
    off = ~np.eye(k, dtype=bool)
    rate = covered.mean(axis=0)
    for m, measure in enumerate(OPEN_MEASURES):
        assert rate[m][off].min() >= PAIR_FLOOR, (measure, rate[m][off].min())
        assert rate[m][off].mean() >= MEAN_FLOOR, measure
