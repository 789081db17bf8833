"""Tests for evaluation.core.reference: the cluster-robust ratio on the reference sample."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluation.core.reference import ReferenceRatio, reference_ratio
from evaluation.core.state import ReferenceSample, TaskState


def sample(groups) -> ReferenceSample:
    groups = np.asarray(groups, dtype=np.int64)
    return ReferenceSample(np.arange(groups.size, dtype=np.int64), groups)


def docstring_variance(groups, numer, denom) -> float:
    """``G/(G-1) * sum_g (a_g - r b_g)^2 / (sum b)^2`` over groups with b_g > 0, by plain loops."""
    totals: dict[int, list[float]] = {}
    for g, a, b in zip(groups, numer, denom, strict=True):
        t = totals.setdefault(int(g), [0.0, 0.0])
        t[0] += float(a)
        t[1] += float(b)
    used = [(a, b) for a, b in totals.values() if b > 0]
    big_g = len(used)
    sum_a = sum(a for a, _ in used)
    sum_b = sum(b for _, b in used)
    r = sum_a / sum_b
    return big_g / (big_g - 1) * sum((a - r * b) ** 2 for a, b in used) / sum_b**2


@pytest.mark.parametrize(("k", "n"), [(0, 5), (3, 10), (7, 7), (1, 2), (13, 40)])
def test_singleton_groups_give_the_binomial_variance(k, n):
    numer = np.zeros(n, bool)
    numer[:k] = True
    res = reference_ratio(sample(np.arange(n)), numer)
    assert isinstance(res, ReferenceRatio)
    assert res.value == pytest.approx(k / n)
    assert res.variance == pytest.approx(res.value * (1 - res.value) / (n - 1), abs=1e-15)
    assert res.trials == n
    assert res.groups == n


def test_cluster_example_by_hand():
    # groups of sizes 2, 1, 3: a = (1, 1, 2), b = (2, 1, 3), r = 4/6 = 2/3,
    # residuals a - r b = (-1/3, 1/3, 0), sum of squares 2/9,
    # variance = 3/2 * (2/9) / 6^2 = 1/108.
    groups = [0, 0, 1, 2, 2, 2]
    numer = np.array([1, 0, 1, 1, 1, 0], bool)
    res = reference_ratio(sample(groups), numer)
    assert res.value == pytest.approx(2 / 3)
    assert res.variance == pytest.approx(1 / 108, rel=1e-12)
    assert res.variance == pytest.approx(docstring_variance(groups, numer, np.ones(6)))
    assert (res.trials, res.groups) == (6, 3)
    # the binomial variance that ignores the clusters would be different (2/3 * 1/3 / 5)
    assert res.variance != pytest.approx(2 / 3 * 1 / 3 / 5)


def test_group_labels_need_not_be_sorted_or_contiguous():
    # the same clusters as above, labelled 70 / 5 / 31 and interleaved
    groups = [31, 70, 5, 31, 70, 31]
    numer = np.array([1, 1, 1, 1, 0, 0], bool)
    res = reference_ratio(sample(groups), numer)
    assert res.value == pytest.approx(2 / 3)
    assert res.variance == pytest.approx(1 / 108, rel=1e-12)
    assert res.groups == 3


def test_denominator_subset():
    # denom keeps items 0, 1, 3, 4 (groups 0, 0, 2, 2); group 1 drops out (b = 0).
    # a = (1, -, 2), b = (2, -, 2), r = 3/4, residuals (-1/2, 1/2): variance = 2 * 0.5 / 16.
    groups = [0, 0, 1, 2, 2, 2]
    denom = np.array([1, 1, 0, 1, 1, 0], bool)
    numer = np.array([1, 0, 0, 1, 1, 0], bool)
    res = reference_ratio(sample(groups), numer, denom)
    assert res.value == pytest.approx(3 / 4)
    assert res.variance == pytest.approx(1 / 16, rel=1e-12)
    assert res.variance == pytest.approx(docstring_variance(groups, numer, denom))
    assert (res.trials, res.groups) == (4, 2)


def test_denominator_none_means_every_item():
    groups = [0, 0, 1, 2, 2, 2]
    numer = np.array([1, 0, 1, 1, 1, 0], bool)
    assert reference_ratio(sample(groups), numer) == reference_ratio(
        sample(groups), numer, np.ones(6, bool)
    )


def test_empty_denominator_is_nan_with_no_trials():
    res = reference_ratio(sample([0, 1, 2]), np.zeros(3, bool), np.zeros(3, bool))
    assert math.isnan(res.value)
    assert (res.variance, res.trials, res.groups) == (0.0, 0, 0)
    # and an empty reference sample
    res = reference_ratio(sample([]), np.zeros(0, bool))
    assert math.isnan(res.value)
    assert (res.variance, res.trials, res.groups) == (0.0, 0, 0)


def test_one_group_has_zero_variance():
    res = reference_ratio(sample([4, 4, 4, 4]), np.array([1, 1, 0, 1], bool))
    assert res == ReferenceRatio(0.75, 0.0, 4, 1)
    # one group carrying the denominator, others outside it
    res = reference_ratio(
        sample([0, 0, 1, 2]), np.array([1, 0, 0, 0], bool), np.array([1, 1, 0, 0], bool)
    )
    assert res == ReferenceRatio(0.5, 0.0, 2, 1)


def test_pure_sample_has_zero_variance():
    res = reference_ratio(sample([0, 0, 1, 2, 2]), np.ones(5, bool))
    assert (res.value, res.variance, res.trials, res.groups) == (1.0, 0.0, 5, 3)


def test_works_on_a_task_state_reference():
    state = TaskState(10)
    state.set_reference([9, 2, 5, 7], groups=[1, 1, 2, 2])
    res = reference_ratio(state.reference, np.array([1, 1, 1, 0], bool))
    # a = (2, 1), b = (2, 2), r = 3/4, residuals (1/2, -1/2): 2 * 0.5 / 16
    assert res.value == pytest.approx(0.75)
    assert res.variance == pytest.approx(1 / 16)


def test_cluster_variance_is_approximately_unbiased_under_group_resampling():
    """Draw G groups with replacement from a fixed population of clusters whose items are
    positively correlated (a group-level success rate), many times; the mean of the estimated
    variance must match the variance of the ratio across replicates.

    Tolerance: with R = 2000 replicates the relative Monte-Carlo standard error of the
    empirical variance is about sqrt((kurtosis - 1) / R) ~ 3.2% (measured below), that of the
    mean estimated variance about 0.5%; the linearised ratio variance has an O(1/G) bias
    (G = 40: a few percent low). We accept |ratio - 1| < 4 * MC se + 0.04. The naive binomial
    variance r(1 - r)/(n - 1), which ignores the clustering, is ~40% too small here and fails.
    """
    rng = np.random.default_rng(20240611)
    m_pop, g, reps = 300, 40, 2000
    sizes = rng.integers(1, 7, m_pop)
    successes = rng.binomial(sizes, rng.beta(2, 2, m_pop))
    values = np.empty(reps)
    var_hat = np.empty(reps)
    naive = np.empty(reps)
    for r in range(reps):
        pick = rng.integers(0, m_pop, g)
        s, k = sizes[pick], successes[pick]
        groups = np.repeat(np.arange(g), s)
        # within each group: the first k items are successes
        offset = np.arange(groups.size) - np.repeat(np.cumsum(s) - s, s)
        numer = offset < np.repeat(k, s)
        res = reference_ratio(sample(groups), numer)
        assert res.groups == g and res.trials == s.sum()
        values[r], var_hat[r] = res.value, res.variance
        naive[r] = res.value * (1 - res.value) / (res.trials - 1)
    v = values.var(ddof=1)
    centred = values - values.mean()
    kurtosis = np.mean(centred**4) / np.mean(centred**2) ** 2
    se_rel = math.sqrt((kurtosis - 1) / reps + (var_hat.std(ddof=1) / v) ** 2 / reps)
    assert 0.02 < se_rel < 0.05  # the Monte-Carlo error the tolerance is based on
    ratio = var_hat.mean() / v
    assert abs(ratio - 1) < 4 * se_rel + 0.04, (ratio, se_rel)
    assert naive.mean() / v < 0.75  # the test discriminates a clustering-blind variance
