"""Tests for evaluation.core.intervals: binomial and effective-sample-size intervals.

Exact values come from closed forms (Clopper-Pearson at x = 0 and x = n), from
``scipy.stats.beta.ppf`` (an implementation independent of the ``special.betaincinv`` calls the
library makes) and from the textbook Wilson formula. Coverage is computed exactly by enumerating
the binomial distribution, so these tests carry no Monte-Carlo error.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from evaluation.core.intervals import (
    INTERVAL_METHODS,
    binomial_interval,
    effective_binomial_interval,
    normal_quantile,
    proportion_interval,
    smoothed_rate,
    wald_interval,
)

Z95 = 1.959963984540054  # scipy.stats.norm.ppf(0.975)

SIZES = (1, 2, 5, 10, 30, 100)
# The grid of the coverage checks: the points near the boundary the engine cares about, a few
# interior points, and 0 and 1 exactly.
GRID = (0.0, 0.001, 0.01, 0.05, 0.2, 0.5, 0.8, 0.95, 0.99, 0.999, 1.0)
INTERIOR_GRID = tuple(p for p in GRID if 0.0 < p < 1.0)


def coverage_curve(method: str, n: int, ps, level: float = 0.95) -> np.ndarray:
    """Exact coverage at each ``p``: the binomial mass of the outcomes whose interval holds it."""
    ps = np.asarray(ps, dtype=float)[:, None]
    x = np.arange(n + 1)
    low, high = binomial_interval(x, n, level=level, method=method)
    inside = (low <= ps) & (ps <= high)
    return (stats.binom.pmf(x, n, ps) * inside).sum(axis=1)


def coverage(method: str, n: int, p: float, level: float = 0.95) -> float:
    return float(coverage_curve(method, n, [p], level)[0])


def wilson_textbook(x: float, n: float, level: float = 0.95) -> tuple[float, float]:
    z = stats.norm.ppf(0.5 + level / 2)
    p = x / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


# --------------------------------------------------------------------------- helpers


def test_normal_quantile_values():
    assert normal_quantile(0.95) == pytest.approx(1.959964, abs=1e-6)
    assert normal_quantile(0.95) == pytest.approx(Z95, rel=1e-12)
    assert normal_quantile(0.90) == pytest.approx(1.6448536269514722, rel=1e-12)
    assert normal_quantile(0.99) == pytest.approx(2.5758293035489004, rel=1e-12)


@pytest.mark.parametrize("level", [0.0, 1.0, -0.5, 1.5, float("nan")])
def test_normal_quantile_rejects_bad_level(level):
    with pytest.raises(ValueError, match="confidence level"):
        normal_quantile(level)


def test_smoothed_rate_hand_values():
    # (n p + 0.5) / (n + 1)
    assert smoothed_rate(0.0, 10) == pytest.approx(0.5 / 11)
    assert smoothed_rate(1.0, 10) == pytest.approx(10.5 / 11)
    assert smoothed_rate(0.3, 10) == pytest.approx(3.5 / 11)
    assert smoothed_rate(0.25, 4) == pytest.approx(1.5 / 5)
    assert smoothed_rate(0.7, 0) == pytest.approx(0.5)  # no trials: the prior mean
    out = smoothed_rate([0.0, 0.5, 1.0], [1, 2, 3])
    np.testing.assert_allclose(out, [0.5 / 2, 1.5 / 3, 3.5 / 4])


# --------------------------------------------------------------------------- Clopper-Pearson


@pytest.mark.parametrize("n", [1, 5, 10, 37, 1000])
def test_clopper_pearson_closed_forms_at_the_boundary(n):
    # x = 0: (0, 1 - (alpha/2)^(1/n));  x = n: ((alpha/2)^(1/n), 1)
    low, high = binomial_interval(0, n)
    assert low == 0.0
    assert high == pytest.approx(1 - 0.025 ** (1 / n), rel=1e-12)
    low, high = binomial_interval(n, n)
    assert low == pytest.approx(0.025 ** (1 / n), rel=1e-12)
    assert high == 1.0


def test_clopper_pearson_x0_n10_literal():
    low, high = binomial_interval(0, 10)
    assert (low, high) == (0.0, pytest.approx(0.30849710781876083, rel=1e-12))


@pytest.mark.parametrize(
    ("x", "n", "level"),
    [(3, 10, 0.95), (1, 2, 0.95), (17, 40, 0.9), (99, 100, 0.99), (2.5, 7.25, 0.95)],
)
def test_clopper_pearson_matches_scipy_beta(x, n, level):
    alpha = 1 - level
    low, high = binomial_interval(x, n, level=level, method="clopper-pearson")
    assert low == pytest.approx(stats.beta.ppf(alpha / 2, x, n - x + 1), rel=1e-9)
    assert high == pytest.approx(stats.beta.ppf(1 - alpha / 2, x + 1, n - x), rel=1e-9)


def test_clopper_pearson_textbook_value_3_of_10():
    low, high = binomial_interval(3, 10)
    assert low == pytest.approx(0.0667, abs=5e-5)
    assert high == pytest.approx(0.6525, abs=5e-5)


# --------------------------------------------------------------------------- Jeffreys


@pytest.mark.parametrize("n", [1, 4, 10, 50])
def test_jeffreys_matches_beta_quantiles_with_boundary_convention(n):
    for x in range(n + 1):
        low, high = binomial_interval(x, n, method="jeffreys")
        b = stats.beta(x + 0.5, n - x + 0.5)
        if x == 0:
            assert low == 0.0
        else:
            assert low == pytest.approx(b.ppf(0.025), rel=1e-9)
        if x == n:
            assert high == 1.0
        else:
            assert high == pytest.approx(b.ppf(0.975), rel=1e-9)


def test_jeffreys_literal_value():
    low, high = binomial_interval(3, 10, method="jeffreys", level=0.9)
    assert low == pytest.approx(stats.beta.ppf(0.05, 3.5, 7.5), rel=1e-9)
    assert high == pytest.approx(stats.beta.ppf(0.95, 3.5, 7.5), rel=1e-9)
    # Jeffreys is narrower than Clopper-Pearson
    cp_low, cp_high = binomial_interval(3, 10, method="clopper-pearson", level=0.9)
    assert cp_low < low < high < cp_high


# --------------------------------------------------------------------------- Wilson


@pytest.mark.parametrize(
    ("x", "n", "level"),
    [(3, 10, 0.95), (1, 1, 0.95), (12, 30, 0.9), (50, 100, 0.99), (1, 100, 0.95)],
)
def test_wilson_matches_textbook_formula(x, n, level):
    low, high = binomial_interval(x, n, level=level, method="wilson")
    ref_low, ref_high = wilson_textbook(x, n, level)
    assert low == pytest.approx(ref_low, rel=1e-12, abs=1e-15)
    assert high == pytest.approx(ref_high, rel=1e-12, abs=1e-15)


def test_wilson_textbook_value_3_of_10():
    low, high = binomial_interval(3, 10, method="wilson")
    assert low == pytest.approx(0.1078, abs=5e-5)
    assert high == pytest.approx(0.6032, abs=5e-5)


@pytest.mark.parametrize("n", [3, 7, 10, 30, 100])
def test_wilson_all_failures_or_all_successes_reach_the_boundary(n):
    assert binomial_interval(0, n, method="wilson")[0] == 0.0
    assert binomial_interval(n, n, method="wilson")[1] == 1.0


# --------------------------------------------------------------------------- common behaviour


@pytest.mark.parametrize("method", INTERVAL_METHODS)
def test_zero_trials_give_the_unit_interval(method):
    assert binomial_interval(0, 0, method=method) == (0.0, 1.0)
    low, high = binomial_interval([0, 2, 0], [0, 4, 0], method=method)
    assert low[0] == 0.0 and high[0] == 1.0
    assert low[2] == 0.0 and high[2] == 1.0
    assert 0.0 < low[1] < 0.5 < high[1] < 1.0


@pytest.mark.parametrize("method", INTERVAL_METHODS)
def test_vectorised_input_equals_scalar_calls(method):
    xs = np.array([0, 1, 3, 9, 10])
    low, high = binomial_interval(xs, 10, method=method, level=0.9)
    assert isinstance(low, np.ndarray) and low.shape == (5,)
    for i, x in enumerate(xs):
        s_low, s_high = binomial_interval(int(x), 10, method=method, level=0.9)
        assert isinstance(s_low, float) and isinstance(s_high, float)
        assert low[i] == pytest.approx(s_low, abs=1e-15)
        assert high[i] == pytest.approx(s_high, abs=1e-15)
    # broadcasting of successes against trials
    low2, high2 = binomial_interval(np.array([[1], [2]]), np.array([4, 8, 16]), method=method)
    assert low2.shape == high2.shape == (2, 3)
    assert low2[1, 2] == pytest.approx(binomial_interval(2, 16, method=method)[0], abs=1e-15)


def test_unknown_method_raises():
    with pytest.raises(ValueError, match="unknown interval method"):
        binomial_interval(1, 2, method="agresti-coull")


@pytest.mark.parametrize("level", [0.0, 1.0, -0.1, 1.01])
@pytest.mark.parametrize("method", INTERVAL_METHODS)
def test_level_outside_unit_interval_raises(level, method):
    with pytest.raises(ValueError, match="confidence level"):
        binomial_interval(1, 2, level=level, method=method)


@pytest.mark.parametrize("method", INTERVAL_METHODS)
def test_wider_level_gives_wider_interval(method):
    low90, high90 = binomial_interval(7, 20, level=0.9, method=method)
    low99, high99 = binomial_interval(7, 20, level=0.99, method=method)
    assert low99 < low90 < 7 / 20 < high90 < high99


# --------------------------------------------------------------------------- coverage (exact)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("level", [0.9, 0.95])
def test_clopper_pearson_coverage_is_at_least_level(n, level):
    # Guaranteed for every p: the exact interval is conservative.
    for p in GRID:
        assert coverage("clopper-pearson", n, p, level) >= level - 1e-12, p
    # and also on a fine grid (the infimum sits just beside the interval endpoints)
    fine = coverage_curve("clopper-pearson", n, np.linspace(0.0005, 0.9995, 2000), level)
    assert fine.min() >= level - 1e-12


def test_clopper_pearson_coverage_at_exact_boundary_is_one():
    for n in SIZES:
        assert coverage("clopper-pearson", n, 0.0) == pytest.approx(1.0)
        assert coverage("clopper-pearson", n, 1.0) == pytest.approx(1.0)


def test_coverage_helper_is_discriminating():
    # Sanity check of the enumeration: the Wald interval at x = 0 is the point {0}, so for
    # p = 0.01, n = 100 only x = 1, 2 (and 0 never) can cover; its coverage is far below 95%.
    n, p = 100, 0.01
    x = np.arange(n + 1)
    half = Z95 * np.sqrt(x / n * (1 - x / n) / n)
    inside = (x / n - half <= p) & (p <= x / n + half)
    assert stats.binom.pmf(x, n, p)[inside].sum() < 0.70


@pytest.mark.parametrize("n", SIZES)
def test_jeffreys_coverage_on_the_grid(n):
    # Jeffreys is not conservative: its coverage oscillates around the level ("fluctuates
    # around level", module docstring; Brown, Cai and DasGupta 2001). At 95% and n <= 100 its
    # exact infimum over p is about 0.853 (n = 1, next test), reached only just beside an
    # interval endpoint; on the fixed grid below, which includes the near-boundary points
    # 0.001 / 0.01 / 0.99 / 0.999, every value is >= 0.90.
    for p in GRID:
        assert coverage("jeffreys", n, p) >= 0.90, p


def test_jeffreys_coverage_infimum_and_mean():
    # n = 1: x = 0 gives (0, U) with U = Beta(0.5, 1.5).ppf(0.975); x = 1 gives (1 - U, 1).
    # For p just above U only x = 1 covers, with probability p -> the infimum is U = 0.8533.
    u = stats.beta.ppf(0.975, 0.5, 1.5)
    assert u == pytest.approx(0.8533, abs=1e-4)
    assert coverage("jeffreys", 1, u + 1e-9) == pytest.approx(u, abs=1e-8)
    fine = np.linspace(0.0005, 0.9995, 2000)
    for n in SIZES:
        cov = coverage_curve("jeffreys", n, fine)
        assert cov.min() >= u - 1e-6
        if n >= 10:
            # it fluctuates *around* the level: the average over p is close to 0.95
            assert abs(cov.mean() - 0.95) < 0.01


@pytest.mark.parametrize("n", [n for n in SIZES if n > 1])
def test_wilson_coverage_on_the_interior_grid(n):
    # The Wilson score interval has a known coverage dip for p within about 1/n of 0 or 1
    # (Brown, Cai and DasGupta 2001): its infimum is about 0.835 for n >= 10, so 0.85 is the
    # looser bound that holds at the fixed grid points, not everywhere (n = 1 is worse, see the
    # next test; p = 0 and 1 exactly are in the boundary test below).
    for p in INTERIOR_GRID:
        assert coverage("wilson", n, p) >= 0.85, p


def test_wilson_coverage_for_one_trial_closed_form():
    # n = 1: x = 0 gives (0, z^2/(1+z^2)), x = 1 gives (1/(1+z^2), 1). So the coverage is 1 - p
    # below 1/(1+z^2), 1 in the middle and p above z^2/(1+z^2): its infimum z^2/(1+z^2) = 0.7934
    # is far below 0.85, which is why n = 1 is excluded from the grid bound above.
    z2 = Z95 * Z95
    assert binomial_interval(0, 1, method="wilson") == (0.0, pytest.approx(z2 / (1 + z2)))
    assert binomial_interval(1, 1, method="wilson") == (pytest.approx(1 / (1 + z2)), 1.0)
    for p in (0.001, 0.01, 0.2):
        assert coverage("wilson", 1, p) == pytest.approx(1 - p)
    assert coverage("wilson", 1, 0.5) == pytest.approx(1.0)
    for p in (0.8, 0.99, 0.999):
        assert coverage("wilson", 1, p) == pytest.approx(p)


def test_wilson_coverage_mean_is_near_level():
    fine = np.linspace(0.0005, 0.9995, 2000)
    for n in (10, 30, 100):
        cov = coverage_curve("wilson", n, fine)
        assert cov.min() > 0.83
        assert abs(cov.mean() - 0.95) < 0.01


@pytest.mark.parametrize("n", [10, 30, 100])
def test_wilson_coverage_at_exact_boundary(n):
    # (for n = 1, 2, 5 the rounding happens to land on 0 and 1 exactly; for 83 of the sizes
    # 1..199 it does not)
    assert coverage("wilson", n, 0.0) >= 0.85
    assert coverage("wilson", n, 1.0) >= 0.85


@pytest.mark.parametrize("n", SIZES)
def test_jeffreys_coverage_at_exact_boundary_is_one(n):
    assert coverage("jeffreys", n, 0.0) == pytest.approx(1.0)
    assert coverage("jeffreys", n, 1.0) == pytest.approx(1.0)


# --------------------------------------------------------------------------- effective n


@pytest.mark.parametrize("method", INTERVAL_METHODS)
def test_effective_interval_zero_variance_collapses(method):
    assert effective_binomial_interval(0.37, 0.0, method=method) == (0.37, 0.37, math.inf)
    assert effective_binomial_interval(1.0, 0.0, method=method) == (1.0, 1.0, math.inf)
    assert effective_binomial_interval(0.2, -1e-3, method=method) == (0.2, 0.2, math.inf)


@pytest.mark.parametrize("estimate", [float("nan"), float("inf"), -float("inf")])
def test_effective_interval_non_finite_estimate(estimate):
    assert effective_binomial_interval(estimate, 0.01) == (0.0, 1.0, 0.0)
    assert effective_binomial_interval(estimate, 0.0) == (0.0, 1.0, 0.0)


@pytest.mark.parametrize("n", [1, 2, 5, 10, 30, 100])
@pytest.mark.parametrize("method", ["clopper-pearson", "jeffreys"])
def test_effective_interval_of_a_simple_random_sample_is_its_binomial_interval(n, method):
    for x in range(n + 1):
        est = x / n
        s = float(smoothed_rate(est, n))
        var = s * (1 - s) / n
        low, high, n_eff = effective_binomial_interval(est, var, smoothed=s, method=method)
        assert n_eff == pytest.approx(n, rel=1e-12)
        ref_low, ref_high = binomial_interval(x, n, method=method)
        assert low == pytest.approx(ref_low, rel=1e-9, abs=1e-15), x
        assert high == pytest.approx(ref_high, rel=1e-9, abs=1e-15), x


def test_effective_interval_srs_literal_clopper_pearson():
    # 0 of 10 correct: the interval is exactly (0, 1 - 0.025^(1/10)).
    s = 0.5 / 11
    low, high, n_eff = effective_binomial_interval(0.0, s * (1 - s) / 10, smoothed=s)
    assert n_eff == pytest.approx(10.0, rel=1e-12)
    assert low == 0.0
    assert high == pytest.approx(1 - 0.025**0.1, rel=1e-9)


def test_effective_interval_default_smoothing_and_cap():
    # Without `smoothed`, n_eff = p (1 - p) / v with p the (clipped) estimate.
    low, high, n_eff = effective_binomial_interval(0.25, 0.25 * 0.75 / 40)
    assert n_eff == pytest.approx(40.0, rel=1e-12)
    ref = binomial_interval(10, 40)
    assert (low, high) == (pytest.approx(ref[0], rel=1e-9), pytest.approx(ref[1], rel=1e-9))
    # a negligible variance is capped at max_trials
    _, _, n_eff = effective_binomial_interval(0.5, 1e-30, max_trials=1e6)
    assert n_eff == 1e6
    # an estimate outside [0, 1] is clipped before anything else
    assert effective_binomial_interval(1.2, 0.0) == (1.0, 1.0, math.inf)


@pytest.mark.parametrize("method", INTERVAL_METHODS)
def test_effective_interval_always_contains_the_estimate(method):
    rng = np.random.default_rng(7)
    estimates = np.concatenate([[0.0, 1.0, 1e-6, 1 - 1e-6], rng.uniform(0, 1, 300)])
    variances = np.concatenate([[1e-2, 1e-2, 1e-4, 1e-4], 10 ** rng.uniform(-8, -0.5, 300)])
    for est, var in zip(estimates, variances, strict=True):
        low, high, n_eff = effective_binomial_interval(float(est), float(var), method=method)
        assert 0.0 <= low <= est <= high <= 1.0
        assert n_eff > 0


def test_proportion_interval_wald_equals_wald_interval():
    for est, var, level in [
        (0.5, 0.01, 0.95),
        (0.02, 0.001, 0.9),
        (0.99, 0.0004, 0.99),
        (float("nan"), 0.01, 0.95),
        (0.3, 0.0, 0.95),
    ]:
        assert proportion_interval(est, var, level=level, method="wald") == wald_interval(
            est, var, level=level
        )
    # hand value: 0.5 +- 1.959964 * 0.1, and clipping at the boundary
    low, high = wald_interval(0.5, 0.01)
    assert (low, high) == (pytest.approx(0.5 - Z95 * 0.1), pytest.approx(0.5 + Z95 * 0.1))
    assert wald_interval(0.02, 0.01) == (0.0, pytest.approx(0.02 + Z95 * 0.1))
    assert wald_interval(float("nan"), 0.01) == (0.0, 1.0)


def test_proportion_interval_beta_equals_effective_interval():
    low, high = proportion_interval(0.3, 0.004, smoothed=0.31, level=0.9, method="jeffreys")
    ref = effective_binomial_interval(0.3, 0.004, smoothed=0.31, level=0.9, method="jeffreys")
    assert (low, high) == ref[:2]


def test_misclassified_interval_is_the_plain_one_for_exact_labels():
    from evaluation.core.intervals import effective_binomial_interval, misclassified_interval

    for est, var in ((0.3, 0.001), (1.0, 0.0004), (0.0, 0.0002)):
        assert (
            misclassified_interval(est, var, shape=(1.0, 1.0), level=0.95)
            == effective_binomial_interval(est, var, level=0.95)[:2]
        )


@pytest.mark.parametrize("rate", [0.5, 0.9, 0.99, 1.0, 0.0])
def test_misclassified_interval_covers_a_rate_corrected_for_misclassification(rate):
    # One answer per item from annotators of known sensitivity and specificity: the rate
    # corrected for misclassification (Rogan-Gladen) with its variance. The interval reaches 1
    # (or 0) when the truth may be there, which a Beta shape on the rate itself would not.
    from evaluation.core.intervals import misclassified_interval

    se, sp, n = 0.95, 0.9, 300
    rng = np.random.default_rng(int(rate * 1000))
    covered = 0
    repeats = 2000
    for _ in range(repeats):
        q_true = rate * se + (1 - rate) * (1 - sp)
        q = rng.binomial(n, q_true) / n
        estimate = min(max((q - (1 - sp)) / (se + sp - 1), 0.0), 1.0)
        var = max(q * (1 - q), 0.25 / n) / (n * (se + sp - 1) ** 2)
        low, high = misclassified_interval(estimate, var, shape=(se, sp), level=0.95)
        covered += low - 1e-12 <= rate <= high + 1e-12
    assert covered / repeats >= 0.94
