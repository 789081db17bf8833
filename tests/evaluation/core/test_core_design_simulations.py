"""Simulation checks of the designs: unbiasedness within Monte-Carlo error and interval coverage.

The synthetic task holds every edge case at once: precision near 1 (with constant and with
informative scores) and near 0, a run disjoint from all others with uninformative scores, an
identical copy, a nested run that brings no new item, runs of 1, 3 and 5 items, and true items no
run predicts (so ``theta < 1``). Runs arrive in a random order each repeat.
"""

from pathlib import Path

import numpy as np
import pytest

from evaluation.core.datasets import Dataset, System, load_dataset
from evaluation.core.designs import make_design
from evaluation.core.simulation import METRICS, run_repeat, simulate, true_scores

SLICE = Path(__file__).resolve().parents[2] / "data" / "febrl4_slice"


def synthetic_dataset(seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    n_true, n_extra, n_false = 2000, 300, 4000
    n_disjoint = 250
    total = n_true + n_extra + n_false + 2 * n_disjoint
    truth = np.zeros(total, bool)
    truth[: n_true + n_extra] = True
    true_ids = rng.permutation(n_true)
    false_ids = n_true + n_extra + rng.permutation(n_false)
    d_true = np.arange(total - 2 * n_disjoint, total - n_disjoint)
    d_false = np.arange(total - n_disjoint, total)
    truth[d_true] = True

    def scores(items, informative=True):
        if not informative:
            return rng.random(items.size)
        return np.where(truth[items], rng.beta(8, 2, items.size), rng.beta(2, 8, items.size))

    systems = {}
    near_one_const = np.concatenate([true_ids[:798], false_ids[:2]])
    systems["near_one_const"] = (near_one_const, np.full(800, 0.9))
    near_one = np.concatenate([true_ids[100:996], false_ids[2:6]])
    systems["near_one_scored"] = (near_one, scores(near_one))
    systems["identical"] = (near_one, systems["near_one_scored"][1])
    near_zero = np.concatenate([true_ids[1000:1012], false_ids[100:688]])
    systems["near_zero"] = (near_zero, scores(near_zero))
    disjoint = np.concatenate([d_true, d_false])
    systems["disjoint_uninformative"] = (disjoint, scores(disjoint, informative=False))
    systems["nested"] = (near_one_const[:300], np.full(300, 0.9))
    broad = np.concatenate([true_ids[500:1700], false_ids[600:900]])
    systems["broad"] = (broad, scores(broad))
    systems["tiny1"] = (true_ids[1990:1991], np.ones(1))
    systems["tiny3"] = (np.concatenate([true_ids[1991:1993], false_ids[3990:3991]]), np.ones(3))
    systems["tiny5"] = (np.concatenate([true_ids[1993:1994], false_ids[3991:3995]]),
                        np.linspace(0.2, 1, 5))
    built = tuple(System(name, np.asarray(items, np.int64), np.asarray(sc, float))
                  for name, (items, sc) in sorted(systems.items()))
    keys = np.array([f"item-{i}" for i in range(total)], dtype=object)
    return Dataset("synthetic", "", keys, truth, built, int(truth.sum()))


def campaigns(dataset, design_name, repeats, seed, reference_size=200, **options):
    """Estimates ``(repeats, systems, metric, value/low/high)`` and truths in dataset order."""
    truths = true_scores(dataset)
    k = len(dataset.systems)
    est = np.zeros((repeats, k, 3, 3))
    labels = np.zeros(repeats)
    for r in range(repeats):
        design = make_design(design_name, **options)
        out = run_repeat(dataset, design, n_systems=None, reference_size=reference_size,
                         rng=np.random.default_rng([seed, r]),
                         campaign_rng=np.random.default_rng([seed, r, 1]), truth_scores=truths)
        est[r, out.systems] = out.estimates
        labels[r] = out.labels
    return est, truths, labels


def check_unbiased_and_covering(est, truths, names, *, min_cover_all, min_cover_each,
                                bias_slack):
    value, low, high = est[..., 0], est[..., 1], est[..., 2]
    covered = (low - 1e-12 <= truths) & (truths <= high + 1e-12)
    problems = []
    for m, metric in enumerate(METRICS):
        overall = covered[:, :, m].mean()
        if overall < min_cover_all:
            problems.append(f"{metric}: overall coverage {overall:.3f} < {min_cover_all}")
        for k, name in enumerate(names):
            cov = covered[:, k, m].mean()
            if cov < min_cover_each:
                problems.append(f"{metric} {name}: coverage {cov:.3f} < {min_cover_each}")
            err = value[:, k, m] - truths[k, m]
            err = err[np.isfinite(err)]
            se = err.std(ddof=1) / np.sqrt(err.size) if err.size > 1 else 0.0
            if abs(err.mean()) > 4 * se + bias_slack:
                problems.append(f"{metric} {name}: bias {err.mean():+.4f} (se {se:.4f})")
    assert not problems, "\n".join(problems)


@pytest.fixture(scope="module")
def synthetic():
    return synthetic_dataset()


def test_default_design_is_unbiased_and_covers_on_edge_cases(synthetic):
    est, truths, _ = campaigns(synthetic, "default", repeats=80, seed=11)
    names = [s.name for s in synthetic.systems]
    check_unbiased_and_covering(est, truths, names, min_cover_all=0.93, min_cover_each=0.85,
                                bias_slack=0.004)


def test_default_design_meets_the_target_for_every_run(synthetic):
    est, _, _ = campaigns(synthetic, "default", repeats=30, seed=12)
    half = (est[:, :, 0, 2] - est[:, :, 0, 1]) / 2
    assert (half <= 0.05 + 1e-12).mean() >= 0.97


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
    check_unbiased_and_covering(est, truths, names, min_cover_all=0.94, min_cover_each=0.90,
                                bias_slack=0.002)


@pytest.mark.slow
@pytest.mark.parametrize("interval", ["jeffreys", "wilson"])
def test_other_interval_families_keep_coverage(synthetic, interval):
    est, truths, _ = campaigns(synthetic, "default", repeats=150, seed=31, interval=interval)
    names = [s.name for s in synthetic.systems]
    check_unbiased_and_covering(est, truths, names, min_cover_all=0.93, min_cover_each=0.85,
                                bias_slack=0.004)


@pytest.mark.parametrize("confidence", [0.8, 0.9])
def test_coverage_follows_the_requested_level(synthetic, confidence):
    est, truths, _ = campaigns(synthetic, "default", repeats=60, seed=41,
                               confidence=confidence)
    covered = (est[..., 1] - 1e-12 <= truths) & (truths <= est[..., 2] + 1e-12)
    inexact = est[..., 2] > est[..., 1]
    rate = covered[inexact].mean()
    assert confidence - 0.03 <= rate <= 0.995


def test_published_design_reproduces_its_baseline_behaviour(synthetic):
    est, truths, labels = campaigns(synthetic, "published", repeats=20, seed=51)
    # The paper's mixture estimator of precision is unbiased (draws are i.i.d.).
    err = est[:, :, 0, 0] - truths[:, 0]
    se = err.std(axis=0, ddof=1) / np.sqrt(err.shape[0])
    assert np.all(np.abs(err.mean(axis=0)) <= 4 * se + 0.01)
    _, _, default_labels = campaigns(synthetic, "default", repeats=20, seed=51)
    assert default_labels.mean() < 0.5 * labels.mean()


def test_febrl_slice_default_beats_published_and_covers():
    dataset = load_dataset(SLICE)
    base = simulate(dataset, design="published", systems=30, repeats=6, seed=5,
                    reference_size=150)
    ours = simulate(dataset, design="default", systems=30, repeats=6, seed=5,
                    reference_size=150)
    assert ours.labels_mean < 0.5 * base.labels_mean
    assert ours.target_met >= 0.95
    for metric in METRICS:
        assert ours.coverage[metric] >= 0.9
        assert abs(ours.bias[metric]) <= 4 * ours.bias_se[metric] + 0.005


@pytest.mark.slow
def test_febrl_slice_default_coverage_over_200_repeats():
    dataset = load_dataset(SLICE)
    ours = simulate(dataset, design="default", systems=30, repeats=200, seed=6,
                    reference_size=150)
    assert ours.target_met >= 0.95
    for metric in METRICS:
        assert ours.coverage[metric] >= 0.94, (metric, ours.coverage)
        assert abs(ours.bias[metric]) <= 4 * ours.bias_se[metric] + 0.003, (metric, ours.bias)
