"""Confidence intervals for proportions that keep their coverage near 0 and 1.

Every interval here is for a quantity in ``[0, 1]`` (a precision, a recall, an F1, a rate). The
Wald interval ``p ± z·se`` collapses to a point when a sample is all-correct or all-wrong and
covers far less than its nominal level near the boundary (STATISTICS.md §3.3: 78% for a
nominal 90% on febrl4). The engine therefore reports Beta-based intervals on an *effective
number of trials*: a weighted or stratified estimate ``p`` with variance ``v`` behaves like a
binomial proportion of ``n_eff = p~(1 - p~) / v`` trials (Korn and Graubard 1998), where ``p~``
is the estimate smoothed with half a success and half a failure, so that an all-correct sample
still yields a variance and a non-degenerate interval.
"""

from __future__ import annotations

import math
from typing import overload

import numpy as np
import numpy.typing as npt
from scipy import special, stats

__all__ = [
    "INTERVAL_METHODS",
    "binomial_interval",
    "effective_binomial_interval",
    "misclassified_interval",
    "normal_quantile",
    "proportion_interval",
    "smoothed_rate",
    "wald_interval",
]

INTERVAL_METHODS = ("clopper-pearson", "jeffreys", "wilson")


def normal_quantile(level: float) -> float:
    """Two-sided standard normal quantile for a confidence ``level`` (1.959964 for 0.95)."""
    _check_level(level)
    return float(stats.norm.ppf(0.5 + level / 2.0))


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must lie strictly between 0 and 1, got {level!r}")


def smoothed_rate(rate: npt.ArrayLike, trials: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Rate shrunk by half a success and half a failure: ``(n·p + 0.5) / (n + 1)``.

    This is the Jeffreys posterior mean. It keeps ``p~(1 - p~)`` positive, so a pure sample
    (all correct or all wrong) still carries the uncertainty its size implies.
    """
    rate = np.asarray(rate, dtype=float)
    trials = np.asarray(trials, dtype=float)
    smoothed: npt.NDArray[np.float64] = (trials * rate + 0.5) / (trials + 1.0)
    return smoothed


@overload
def binomial_interval(
    successes: float, trials: float, *, level: float = ..., method: str = ...
) -> tuple[float, float]: ...
@overload
def binomial_interval(
    successes: npt.ArrayLike, trials: npt.ArrayLike, *, level: float = ..., method: str = ...
) -> tuple[float, float] | tuple[np.ndarray, np.ndarray]: ...
def binomial_interval(
    successes: npt.ArrayLike,
    trials: npt.ArrayLike,
    *,
    level: float = 0.95,
    method: str = "clopper-pearson",
) -> tuple[float, float] | tuple[np.ndarray, np.ndarray]:
    """Two-sided interval for a binomial proportion; ``successes`` and ``trials`` may be fractional.

    Parameters
    ----------
    successes, trials : float or array_like
        Observed (effective) successes and trials, ``0 <= successes <= trials``. Fractional values
        come from effective sample sizes; the Beta-function forms below accept them.
    level : float
        Confidence level.
    method : {"clopper-pearson", "jeffreys", "wilson"}
        ``clopper-pearson`` is the exact (conservative) interval: coverage at least ``level`` for
        integer trials. ``jeffreys`` is the equal-tailed Beta(x+1/2, n-x+1/2) posterior interval,
        with the bound at 0 or 1 when ``x`` is 0 or ``n`` (Brown, Cai and DasGupta 2001); its
        coverage fluctuates around ``level``. ``wilson`` is the score interval.

    Returns
    -------
    (low, high) : tuple of float or of numpy.ndarray
        ``(0, 1)`` where ``trials`` is 0.
    """
    _check_level(level)
    x = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    x, n = np.broadcast_arrays(x, n)
    x = np.clip(x, 0.0, n)
    alpha = 1.0 - level
    low = np.zeros(x.shape)
    high = np.ones(x.shape)
    ok = n > 0
    if method == "clopper-pearson":
        with np.errstate(invalid="ignore", divide="ignore"):
            lo = special.betaincinv(np.where(x > 0, x, 1.0), n - x + 1.0, alpha / 2.0)
            hi = special.betaincinv(x + 1.0, np.where(x < n, n - x, 1.0), 1.0 - alpha / 2.0)
        low = np.where(ok & (x > 0), lo, 0.0)
        high = np.where(ok & (x < n), hi, 1.0)
    elif method == "jeffreys":
        with np.errstate(invalid="ignore", divide="ignore"):
            lo = special.betaincinv(x + 0.5, n - x + 0.5, alpha / 2.0)
            hi = special.betaincinv(x + 0.5, n - x + 0.5, 1.0 - alpha / 2.0)
        low = np.where(ok & (x > 0), lo, 0.0)
        high = np.where(ok & (x < n), hi, 1.0)
    elif method == "wilson":
        z = normal_quantile(level)
        with np.errstate(invalid="ignore", divide="ignore"):
            p = np.where(ok, x / np.where(ok, n, 1.0), 0.5)
            denom = 1.0 + z * z / np.where(ok, n, 1.0)
            centre = (p + z * z / (2.0 * np.where(ok, n, 1.0))) / denom
            half = (
                z
                * np.sqrt(
                    p * (1 - p) / np.where(ok, n, 1.0) + z * z / (4.0 * np.where(ok, n, 1.0) ** 2)
                )
                / denom
            )
        low = np.where(ok & (x > 0), np.clip(centre - half, 0.0, 1.0), 0.0)
        high = np.where(ok & (x < n), np.clip(centre + half, 0.0, 1.0), 1.0)
    else:
        raise ValueError(f"unknown interval method {method!r}; choose one of {INTERVAL_METHODS}")
    if low.ndim == 0:
        return float(low), float(high)
    return low, high


def effective_binomial_interval(
    estimate: float,
    variance: float,
    *,
    smoothed: float | None = None,
    level: float = 0.95,
    method: str = "clopper-pearson",
    max_trials: float = 1e9,
) -> tuple[float, float, float]:
    """Interval for a proportion estimated with known variance, as a binomial on ``n_eff`` trials.

    Parameters
    ----------
    estimate : float
        Point estimate in ``[0, 1]``.
    variance : float
        Its (estimated) variance. ``0`` means the value is known exactly: the interval collapses.
    smoothed : float, optional
        The smoothed proportion ``p~`` used to turn ``variance`` into trials,
        ``n_eff = p~(1 - p~) / variance``; defaults to ``estimate`` clipped away from 0 and 1.
        Pass the Jeffreys-smoothed rate when ``variance`` was computed from it, so that a single
        simple random sample gives back exactly its own size.
    level, method
        As in :func:`binomial_interval`.
    max_trials : float
        Cap on ``n_eff`` (large values only arise when the variance is negligible).

    Returns
    -------
    (low, high, n_eff) : tuple of float
    """
    if not math.isfinite(estimate):
        return 0.0, 1.0, 0.0
    estimate = min(max(estimate, 0.0), 1.0)
    if variance <= 0.0:
        return estimate, estimate, math.inf
    p = estimate if smoothed is None else smoothed
    p = min(max(p, 1e-9), 1.0 - 1e-9)
    n_eff = min(p * (1.0 - p) / variance, max_trials)
    low, high = binomial_interval(estimate * n_eff, n_eff, level=level, method=method)
    # The Beta bounds are for a proportion of n_eff trials; keep the point estimate inside.
    return min(low, estimate), max(high, estimate), n_eff


def misclassified_interval(
    estimate: float,
    variance: float,
    *,
    smoothed: float | None = None,
    shape: tuple[float, float] = (1.0, 1.0),
    level: float = 0.95,
    method: str = "clopper-pearson",
) -> tuple[float, float]:
    """Interval for a rate estimated from fallible answers, drawn on the scale of the answers.

    A rate ``r`` seen through answers of sensitivity ``se`` and specificity ``sp`` shows as the
    answer rate ``q = (1 - sp) + (se + sp - 1) r``. The estimate's uncertainty does not vanish
    at ``r = 1`` (some correct items are still called incorrect), so the Beta shape of
    :func:`effective_binomial_interval`, which narrows to nothing at 0 and 1, is applied to
    ``q`` and mapped back (Rogan and Gladen 1978): the exact misclassified-binomial interval for
    one answer per item. ``shape = (se, sp)``; ``(1, 1)`` (exact labels) gives
    :func:`effective_binomial_interval` itself.
    """
    se, sp = shape
    if se + sp >= 2.0 - 1e-12:
        low, high, _ = effective_binomial_interval(
            estimate, variance, smoothed=smoothed, level=level, method=method
        )
        return low, high
    if not math.isfinite(estimate):
        return 0.0, 1.0
    b = max(se + sp - 1.0, 0.05)
    a = min(max(1.0 - sp, 0.0), 1.0 - b)
    centre = a + b * min(max(estimate, 0.0), 1.0)
    smooth = None if smoothed is None else a + b * smoothed
    lo, hi, _ = effective_binomial_interval(
        centre, b * b * variance, smoothed=smooth, level=level, method=method
    )
    low = min(max((lo - a) / b, 0.0), 1.0)
    high = min(max((hi - a) / b, 0.0), 1.0)
    return min(low, estimate), max(high, estimate)


def wald_interval(estimate: float, variance: float, *, level: float = 0.95) -> tuple[float, float]:
    """The normal-theory interval ``estimate ± z·sqrt(variance)``, clipped to ``[0, 1]``.

    Kept for the ``published`` design, which uses it; it is known to under-cover near 0 and 1.
    """
    if not math.isfinite(estimate):
        return 0.0, 1.0
    half = normal_quantile(level) * math.sqrt(max(variance, 0.0))
    return max(0.0, estimate - half), min(1.0, estimate + half)


def proportion_interval(
    estimate: float,
    variance: float,
    *,
    smoothed: float | None = None,
    level: float = 0.95,
    method: str = "clopper-pearson",
) -> tuple[float, float]:
    """``(low, high)`` for a proportion with known variance: ``method="wald"`` or a Beta type."""
    if method == "wald":
        return wald_interval(estimate, variance, level=level)
    low, high, _ = effective_binomial_interval(
        estimate, variance, smoothed=smoothed, level=level, method=method
    )
    return low, high
