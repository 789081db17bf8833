"""Shared by the designs: option checks, recall from its parts, F1 from P and R, bisection."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from ..intervals import INTERVAL_METHODS, proportion_interval, smoothed_rate
from ..reference import ReferenceRatio
from ..results import IntervalEstimate

__all__ = [
    "RecallParts",
    "bisect",
    "bisect_largest",
    "bisect_smallest",
    "checked_level",
    "f1_estimate",
    "recall_from_parts",
    "validate_common_options",
]


def validate_common_options(
    target_half_width: float, confidence: float, interval: str, budget: int | None
) -> None:
    """Raise :class:`ValueError` for options no design accepts."""
    if not 0.0 < target_half_width < 0.5:
        raise ValueError(f"target half-width must lie in (0, 0.5), got {target_half_width!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    if interval not in (*INTERVAL_METHODS, "wald"):
        raise ValueError(f"unknown interval method {interval!r}; choose one of {INTERVAL_METHODS}")
    if budget is not None and budget < 0:
        raise ValueError("budget must be >= 0")


def checked_level(level: float) -> float:
    """``level`` as a float in ``(0, 1)``, or :class:`ValueError` (for ``estimate(level=...)``)."""
    value = float(level)
    if not 0.0 < value < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    return value


@dataclass(frozen=True)
class RecallParts:
    """A recall estimate with the variance used to combine it into F1."""

    estimate: IntervalEstimate
    variance: float


def _floored(value: float, variance: float, trials: float) -> float:
    """Variance floored at the Jeffreys-smoothed binomial value for ``trials`` trials."""
    if not math.isfinite(trials) or trials <= 0:
        return variance
    s = float(smoothed_rate(value, trials))
    return max(variance, s * (1.0 - s) / trials)


def recall_from_parts(
    theta: ReferenceRatio | None,
    nu_verified: tuple[float, float, float] | None,
    nu_reference: ReferenceRatio | None,
    simple: ReferenceRatio | None,
    *,
    outside: ReferenceRatio | None = None,
    level: float,
    method: str,
    labels: int,
) -> RecallParts:
    """Recall ``theta * nu + rho`` with ``nu`` combined from verified items and reference items.

    Parameters
    ----------
    theta : ReferenceRatio or None
        Share of the reference sample inside the (reached) union; ``None`` without a reference
        sample.
    nu_verified : tuple (value, variance, trials) or None
        ``nu`` from the verified items (Horvitz-Thompson ratio); ``None`` when unavailable (no
        correct verified item, or the run is not fully reached by the sample yet).
    nu_reference : ReferenceRatio or None
        ``nu`` from the reference items inside the union.
    simple : ReferenceRatio or None
        Share of the reference sample inside the run: the fallback when ``nu`` is unavailable.
    outside : ReferenceRatio or None
        ``rho``: share of the reference sample among the run's items outside the union that
        ``theta`` and ``nu`` refer to (``None``: the run lies inside it).

    Notes
    -----
    The two ``nu`` estimates are independent given the union (one rests on verification draws,
    the other on the reference sample). They are averaged with weights proportional to their
    effective trials, which do not depend on the estimated values, so the weighting adds no bias.
    ``Var(theta nu) = theta^2 Var nu + nu^2 Var theta + Var theta Var nu`` (STATISTICS.md §3.4).
    ``rho`` counts the run's true items in the part of the union no verified item speaks for; its
    variance is added as if independent (its covariance with ``theta nu``, through the shared
    reference sample, is negative: multinomial cells).
    Without a reference sample recall is not identifiable: the value is ``nan`` and the interval
    ``[0, upper bound of nu]`` (recall never exceeds ``nu``).
    """
    parts = _nu_estimates(nu_verified, nu_reference)
    if theta is None or theta.trials == 0:
        return _not_identifiable(parts, level=level, method=method, labels=labels)
    if not parts:
        assert simple is not None  # there is a reference sample (theta)
        return _reference_share(simple, level=level, method=method, labels=labels)
    nu, var_nu = _combined_nu(parts)
    th = theta.value
    var_th = _floored(th, theta.variance, theta.trials)
    value = th * nu
    var = th * th * var_nu + nu * nu * var_th + var_th * var_nu
    if outside is not None and outside.trials > 0:
        value += outside.value
        var += _floored(outside.value, outside.variance, outside.trials)
    low, high = proportion_interval(value, var, level=level, method=method)
    return RecallParts(IntervalEstimate(value, low, high, level, f"theta-nu/{method}", labels), var)


def _nu_estimates(
    nu_verified: tuple[float, float, float] | None, nu_reference: ReferenceRatio | None
) -> list[tuple[float, float, float]]:
    """The estimates of ``nu`` available, as ``(value, floored variance, trials)``."""
    parts: list[tuple[float, float, float]] = []
    if nu_verified is not None:
        v, var, trials = nu_verified
        parts.append((v, _floored(v, var, trials), trials))
    if nu_reference is not None and nu_reference.trials > 0:
        v = nu_reference.value
        parts.append(
            (v, _floored(v, nu_reference.variance, nu_reference.trials), float(nu_reference.trials))
        )
    return parts


def _not_identifiable(
    parts: list[tuple[float, float, float]], *, level: float, method: str, labels: int
) -> RecallParts:
    """Recall without a reference sample: no value, the interval ``[0, upper bound of nu]``."""
    if parts:
        v, var, _ = parts[0]
        _, high = proportion_interval(v, var, level=level, method=method)
    else:
        high = 1.0
    est = IntervalEstimate(
        math.nan, 0.0, high, level, "not-identifiable(no reference sample)", labels
    )
    return RecallParts(est, math.inf)


def _reference_share(
    simple: ReferenceRatio, *, level: float, method: str, labels: int
) -> RecallParts:
    """Recall as the share of the reference sample inside the run (no estimate of ``nu``)."""
    v = simple.value
    var = _floored(v, simple.variance, simple.trials)
    low, high = proportion_interval(v, var, level=level, method=method)
    return RecallParts(
        IntervalEstimate(v, low, high, level, f"reference-sample/{method}", labels), var
    )


def _combined_nu(parts: list[tuple[float, float, float]]) -> tuple[float, float]:
    """``nu`` and its variance: the estimates averaged with weights by their effective trials."""
    if len(parts) == 1:
        nu, var_nu, _ = parts[0]
        return nu, var_nu
    (a, va, na), (b, vb, nb) = parts
    wa = na / (na + nb) if math.isfinite(na) else 1.0
    nu = wa * a + (1.0 - wa) * b
    var_nu = wa * wa * va + (1.0 - wa) ** 2 * vb
    return nu, var_nu


def f1_estimate(
    precision: IntervalEstimate,
    precision_variance: float,
    recall: RecallParts,
    *,
    level: float,
    method: str,
    covariance: str = "bound",
) -> IntervalEstimate:
    """F1 from precision and recall, with a delta-method interval.

    ``covariance="bound"`` bounds ``Cov(P, R)`` by ``sd_P sd_R`` (Cauchy-Schwarz): precision
    and recall share draws, the bound can only widen the interval; the interval is then widened
    to include ``[F1(P_low, R_low), F1(P_high, R_high)]``, which F1's monotonicity in P and R
    implies. ``covariance="zero"`` assumes independence and reports the plain delta-method Wald
    interval (what the published design implies).
    """
    p, r = precision.value, recall.estimate.value
    labels = max(precision.labels_used, recall.estimate.labels_used)
    if not (math.isfinite(p) and math.isfinite(r)):
        high = _f1(precision.high, recall.estimate.high)
        low = _f1(precision.low, recall.estimate.low)
        return IntervalEstimate(math.nan, low, high, level, "bounds-only", labels)
    if p + r == 0:
        value, dp, dr = 0.0, 0.0, 0.0
    else:
        value = 2 * p * r / (p + r)
        dp = 2 * r * r / (p + r) ** 2
        dr = 2 * p * p / (p + r) ** 2
    sp = math.sqrt(max(precision_variance, 0.0)) if math.isfinite(precision_variance) else 1.0
    sr = math.sqrt(max(recall.variance, 0.0)) if math.isfinite(recall.variance) else 1.0
    cross = 2 * dp * sp * dr * sr if covariance == "bound" else 0.0
    var = (dp * sp) ** 2 + (dr * sr) ** 2 + cross
    low, high = proportion_interval(value, var, level=level, method=method)
    if covariance == "bound":
        # F1 increases in P and R, so the P and R bounds imply an F1 interval too. Near 0 the
        # delta method is poor (measured: 0.887 coverage for a run with F1 = 0.008); the union
        # covers whenever either interval does.
        low = min(low, _f1(precision.low, recall.estimate.low))
        high = max(high, _f1(precision.high, recall.estimate.high))
    return IntervalEstimate(value, low, high, level, f"delta-{covariance}/{method}", labels)


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def bisect(
    flips: Callable[[float], bool], lo: float, hi: float, iterations: int = 60
) -> tuple[float, float]:
    """Narrow ``[lo, hi]`` around where a monotone predicate turns true (false at ``lo``)."""
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if flips(mid):
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-9 * max(hi, 1e-12):
            break
    return lo, hi


def bisect_smallest(ok: Callable[[float], bool], lo: float, hi: float) -> float:
    """Smallest ``t`` in ``[lo, hi]`` with ``ok(t)`` for a predicate true from some point on."""
    return lo if ok(lo) else bisect(ok, lo, hi)[1]


def bisect_largest(ok: Callable[[float], bool], lo: float, hi: float) -> float:
    """Largest ``t`` in ``[lo, hi]`` with ``ok(t)`` for a predicate true up to some point."""
    return bisect(lambda t: not ok(t), lo, hi)[0]
