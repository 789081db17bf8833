"""Simulation checks of the designs with a perfect oracle: unbiasedness within Monte-Carlo error
and interval coverage, on the synthetic task of every edge case (tests/support/design_campaigns.py)
and on the febrl4 slice."""

from pathlib import Path

import numpy as np
import pytest

from evaluation.core.measures import OPEN_MEASURES
from evaluation.simulation.datasets import load_dataset
from evaluation.simulation.open_world.campaigns import simulate

from design_campaigns import (
    campaigns,
    campaigns_at_stop,
    check_unbiased_and_covering,
    synthetic_dataset,
)

SLICE = Path(__file__).resolve().parents[2] / "data" / "febrl4_slice"


@pytest.fixture(scope="module")
def synthetic():
    return synthetic_dataset()


@pytest.mark.slow
def test_default_design_is_unbiased_and_covers_on_edge_cases(synthetic):
    est, truths, _ = campaigns(synthetic, "default", repeats=80, seed=11)
    names = [s.name for s in synthetic.systems]
    check_unbiased_and_covering(
        est, truths, names, min_cover_all=0.93, min_cover_each=0.85, bias_slack=0.004
    )


@pytest.mark.slow
def test_default_design_meets_the_target_for_every_run(synthetic):
    """When the planner declares a run done, its interval meets the target. Later runs can
    widen it a little: they refine its agreement post-strata (engine 1.6), which then carry
    their own floors (measured on this seed: 0.993 of runs within target at stop, 0.947 at the
    end, the widest 0.067; docs/STATISTICS.md)."""
    est, _, _, stop = campaigns_at_stop(synthetic, "default", repeats=30, seed=12)
    at_stop = (stop[:, :, 0, 2] - stop[:, :, 0, 1]) / 2
    assert (at_stop <= 0.05 + 1e-12).mean() >= 0.97
    final = (est[:, :, 0, 2] - est[:, :, 0, 1]) / 2
    assert (final <= 0.05 + 1e-12).mean() >= 0.9
    assert final.max() <= 0.075


def test_tiny_identical_and_nested_runs_cost_nothing_extra(synthetic):
    names = [s.name for s in synthetic.systems]
    est, truths, _ = campaigns(synthetic, "default", repeats=10, seed=13)
    for name in ("tiny1", "tiny3", "tiny5"):
        k = names.index(name)
        assert np.all(est[:, k, 0, 0] == truths[k, 0])  # exact
        assert np.all(est[:, k, 0, 1] == est[:, k, 0, 2])
    ident, orig = names.index("identical"), names.index("near_one_scored")
    assert np.array_equal(est[:, ident, 0], est[:, orig, 0])


@pytest.mark.slow
def test_default_design_coverage_and_bias_over_many_repeats(synthetic):
    est, truths, _ = campaigns(synthetic, "default", repeats=400, seed=21)
    names = [s.name for s in synthetic.systems]
    check_unbiased_and_covering(
        est, truths, names, min_cover_all=0.94, min_cover_each=0.90, bias_slack=0.002
    )


@pytest.mark.slow
@pytest.mark.parametrize(("interval", "min_cover_each"), [("jeffreys", 0.85), ("wilson", 0.84)])
def test_other_interval_families_keep_coverage(synthetic, interval, min_cover_each):
    """Wilson's upper bound stays below 1 while the estimate does, so it misses a precision of
    0.9975 (`near_one_const`) most: 128 of 150 on engine 1.6, 127 once unsampled post-strata
    carry their borrowed rate's error (the misses are the same campaigns, one more at 0.9975 vs
    an upper bound of 0.9972). Clopper-Pearson, the default, holds it at 0.90 per system."""
    est, truths, _ = campaigns(synthetic, "default", repeats=150, seed=31, interval=interval)
    names = [s.name for s in synthetic.systems]
    check_unbiased_and_covering(
        est, truths, names, min_cover_all=0.93, min_cover_each=min_cover_each, bias_slack=0.004
    )


@pytest.mark.slow
@pytest.mark.parametrize("confidence", [0.8, 0.9])
def test_coverage_follows_the_requested_level(synthetic, confidence):
    est, truths, _ = campaigns(synthetic, "default", repeats=60, seed=41, confidence=confidence)
    covered = (est[..., 1] - 1e-12 <= truths) & (truths <= est[..., 2] + 1e-12)
    inexact = est[..., 2] > est[..., 1]
    rate = covered[inexact].mean()
    assert confidence - 0.03 <= rate <= 0.995


@pytest.mark.slow
def test_published_design_reproduces_its_baseline_behaviour(synthetic):
    est, truths, labels = campaigns(synthetic, "published", repeats=20, seed=51)
    # The paper's mixture estimator of precision is unbiased (draws are i.i.d.).
    err = est[:, :, 0, 0] - truths[:, 0]
    se = err.std(axis=0, ddof=1) / np.sqrt(err.shape[0])
    assert np.all(np.abs(err.mean(axis=0)) <= 4 * se + 0.01)
    _, _, default_labels = campaigns(synthetic, "default", repeats=20, seed=51)
    assert default_labels.mean() < 0.5 * labels.mean()


@pytest.mark.slow
def test_febrl_slice_default_beats_published_and_covers():
    dataset = load_dataset(SLICE)
    base = simulate(dataset, design="published", systems=30, repeats=6, seed=5, reference_size=150)
    ours = simulate(dataset, design="default", systems=30, repeats=6, seed=5, reference_size=150)
    assert ours.labels_mean < 0.5 * base.labels_mean
    assert ours.target_met >= 0.95
    for metric in OPEN_MEASURES:
        assert ours.coverage[metric] >= 0.9
        assert abs(ours.bias[metric]) <= 4 * ours.bias_se[metric] + 0.005


@pytest.mark.slow
def test_febrl_slice_default_coverage_over_200_repeats():
    dataset = load_dataset(SLICE)
    ours = simulate(dataset, design="default", systems=30, repeats=200, seed=6, reference_size=150)
    assert ours.target_met >= 0.95
    for metric in OPEN_MEASURES:
        assert ours.coverage[metric] >= 0.94, (metric, ours.coverage)
        assert abs(ours.bias[metric]) <= 4 * ours.bias_se[metric] + 0.003, (metric, ours.bias)
