"""Exact bounds of a closed-pool run's precision with fallible answers: the verified positives'
normal put on the integers, so that a bound is an integer count as the truth is."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from evaluation.core.closed_pool.precision_bounds import exact_precision_bounds
from evaluation.core.closed_pool.totals import PoolTotals


def _totals(verified, pp, cells, label_variance):
    """One run: ``verified`` positives (the labels' sum), ``pp`` predictions and its unverified
    ones as ``(count, rate mean, rate variance)`` per cell; ``label_variance`` ``None`` for
    exact labels."""
    counts, means, variances = (np.array(c, dtype=float) for c in zip(*cells, strict=True))
    unverified = float(counts @ means)
    one = lambda x: np.array([x])  # noqa: E731
    return PoolTotals(
        *(one(x) for x in (verified + unverified, 0.0, 0.0, 0.0, pp, 0.0, verified)),
        one(counts.sum()),
        tp_rates=((counts, means, variances),),
        tp_upper_rates=((means, variances),),
        exact_labels=label_variance is None,
        answer_shape=(1.0, 1.0) if label_variance is None else (0.95, 0.95),
        tp_label_variance=None if label_variance is None else one(label_variance),
    )


def test_a_truth_on_the_counts_edge_stays_inside_with_nearly_sure_labels():
    # Measured on abt-buy at 250 labels with 0.95x5 annotators (seed 2026 x 22, run logreg-c1,
    # precision 27/37): 27 verified positives whose labels sum to 27.0000002 with a standard
    # deviation of 0.003, two unverified predictions in cells of rates 0.857 and 0.801, both
    # negative. "None positive" has 2.8% of the posterior, the lower bound is that atom: 27/37.
    # A normal mixture put the bound at 27 + 1.2 sd, past the truth by 0.004 of an item.
    cells = [(1, 0.857, 0.0209), (1, 0.801, 0.0543)]
    exact = exact_precision_bounds(_totals(27.0, 37.0, cells, None), 0, 0.95)
    sure = exact_precision_bounds(_totals(27.0000002, 37.0, cells, 0.003**2), 0, 0.95)
    assert exact == (27 / 37, 29 / 37)
    assert sure == exact
    # The same at the top (seed 89): 23 verified, all 4 unverified predictions positive.
    cells = [(4, 0.388, 0.0257)]
    exact = exact_precision_bounds(_totals(23.0, 37.0, cells, None), 0, 0.95)
    sure = exact_precision_bounds(_totals(22.9999999, 37.0, cells, 0.0012**2), 0, 0.95)
    assert exact[1] == 27 / 37
    assert sure == exact


def test_nearly_sure_labels_give_the_bounds_of_exact_ones():
    # 200 random posteriors of 1 to 6 unverified predictions in 1 to 3 cells, the labels' sum
    # within 1e-6 of the integer and a standard deviation of 1e-4 to 1e-2: the bounds are the
    # exact labels' to the last digit.
    rng = np.random.default_rng(2026)
    for _ in range(200):
        cells = [
            (int(rng.integers(1, 3)), mean, mean * (1 - mean) * rng.uniform(0.02, 0.3))
            for mean in rng.uniform(0.05, 0.95, size=int(rng.integers(1, 4)))
        ]
        verified, pp = int(rng.integers(0, 30)), 40.0
        exact = exact_precision_bounds(_totals(float(verified), pp, cells, None), 0, 0.95)
        noisy = verified + rng.uniform(-1e-6, 1e-6)
        sd = 10 ** rng.uniform(-4, -2)
        assert exact_precision_bounds(_totals(noisy, pp, cells, sd**2), 0, 0.95) == exact


def test_doubtful_labels_widen_the_bounds_to_the_integer_counts_quantiles():
    # The verified positives 27 +- 2 (a normal on the integers: each its mass within 1/2),
    # convolved with two unverified predictions of rates near 0.8: the bounds are the integer
    # quantiles of the sum, P(X < low) <= 2.5% < P(X <= low) and likewise at the top.
    mean, variance = 0.8, 0.03
    strength = mean * (1 - mean) / variance - 1
    single = stats.betabinom.pmf([0, 1], 1, mean * strength, (1 - mean) * strength)
    count = np.convolve(single, single)
    verified = np.arange(0, 60)
    on_integers = stats.norm.cdf(verified + 0.5, 27, 2) - stats.norm.cdf(verified - 0.5, 27, 2)
    total = np.convolve(on_integers, count)
    cdf = np.cumsum(total) / total.sum()
    low, high = exact_precision_bounds(
        _totals(27.0, 37.0, [(1, mean, variance), (1, mean, variance)], 4.0), 0, 0.95
    )
    low_count, high_count = round(low * 37), round(high * 37)
    assert (low * 37, high * 37) == pytest.approx((low_count, high_count), abs=1e-9)
    assert cdf[low_count - 1] <= 0.025 < cdf[low_count]
    assert cdf[high_count - 1] < 0.975 <= cdf[high_count]
    assert low <= 25 / 37 and high >= 31 / 37
    # Wider with more doubt, never narrower than the count's own bounds.
    sure = exact_precision_bounds(
        _totals(27.0, 37.0, [(1, mean, variance), (1, mean, variance)], 1e-6), 0, 0.95
    )
    assert sure == (27 / 37, 29 / 37)
    assert low < sure[0] and high > sure[1]

    # Labels summing to 0.3 +- 1: no negative count is put inside, and precision stays in [0, 1].
    low, high = exact_precision_bounds(_totals(0.3, 5.0, [(2, 0.5, 0.05)], 1.0), 0, 0.95)
    assert low == 0.0 and 0.0 < high <= 1.0
