"""A run's precision under the ``default`` design: post-stratified Hajek estimate and its interval.

Items sampled with ``pi = 1`` are a census; the others are a Poisson sample, weighted ``1 / pi``,
post-stratified by the run's score strata. Labels are the values of :class:`..labels.ItemLabels`
(exact, or the annotator model's posterior means); the variance is the design variance plus, when
labels are uncertain, the label and parameter terms of :mod:`..labels`. The interval is a
Beta-type interval on the effective number of trials of the sampled part, shifted by the census
part, so that it keeps its coverage at 0 and 1 (:func:`..intervals.effective_binomial_interval`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..intervals import (
    effective_binomial_interval,
    misclassified_interval,
    normal_quantile,
    smoothed_rate,
)
from ..labels import DomainLabels, ItemLabels
from ..results import IntervalEstimate
from .census_bounds import SMALL_CENSUS, small_census_bounds
from .run_labels import CENSUS_DOMAINS, RunLabels

__all__ = ["CENSUS_METHOD", "PrecisionParts", "predicted_half_width", "stratified_precision"]

# The method name of a census's precision (every item of the run verified).
CENSUS_METHOD = "exact-items"


@dataclass(frozen=True)
class PrecisionParts:
    """A run's precision estimate and the pieces the planner needs.

    ``items`` are the run's verified sampled items, ``values`` and ``variances`` their labels as
    the run sees them (:meth:`..labels.ItemLabels.in_domains`), ``coefficients`` the derivative of
    the estimate with respect to each label, ``inclusion`` their inclusion probabilities and
    ``inflation`` the factor ``1 / (1 - gamma)^2`` by which their stratum's variance grows for
    the labels' uncertainty, ``residuals`` each label minus its post-stratum's Hajek rate (0 for
    items sampled with certainty: the estimate's error is, to first order, the sum of
    ``coefficients * residuals``, which :mod:`..paired` correlates across runs).
    ``variance`` is the total; ``parameter_variance`` its part due to the annotators' estimated
    error rates (0 with exact labels), which more items do not reduce, and
    ``borrowed_variance`` its part due to post-strata with items but no sample, which take a
    neighbour's rate (rests on the run's unsampled items alone, not on any verified one).
    """

    estimate: IntervalEstimate
    variance: float
    covered: bool
    stratum_rates: np.ndarray
    stratum_trials: np.ndarray
    # Some score stratum of the run has unverified items but no sampled one: its rate is
    # borrowed from a neighbour, so the interval does not reflect it and the target cannot be
    # declared met yet.
    unsampled: bool = False
    items: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    values: np.ndarray = field(default_factory=lambda: np.empty(0))
    variances: np.ndarray = field(default_factory=lambda: np.empty(0))
    coefficients: np.ndarray = field(default_factory=lambda: np.empty(0))
    inclusion: np.ndarray = field(default_factory=lambda: np.empty(0))
    inflation: np.ndarray = field(default_factory=lambda: np.empty(0))
    parameter_variance: float = 0.0
    residuals: np.ndarray = field(default_factory=lambda: np.empty(0))
    borrowed_variance: float = 0.0

    @property
    def sampled(self) -> int:
        """Verified items of the run sampled with ``pi < 1`` (the part a new item adds to)."""
        return int(np.count_nonzero(self.inclusion < 1.0))


def stratified_precision(
    run_items: np.ndarray,
    strata: np.ndarray,
    stratum_sizes: np.ndarray,
    inclusion: np.ndarray,
    known: np.ndarray,
    labels: ItemLabels,
    *,
    covered: bool,
    level: float,
    interval: str,
    blocks: np.ndarray | None = None,
    census_groups: np.ndarray | None = None,
    merge: np.ndarray | None = None,
) -> PrecisionParts:
    """Post-stratified Hajek precision of a run with its interval.

    Parameters
    ----------
    run_items, strata : numpy.ndarray
        The run's sorted items and the score stratum of each.
    stratum_sizes : numpy.ndarray
        Items per stratum.
    inclusion : numpy.ndarray
        Inclusion probability of every item of the task.
    known : numpy.ndarray of bool
        Per item of the task: sampled and verified. Only the run's are read (one gather over
        its predictions, cheaper than a binary search of every verified item in them).
    labels : ItemLabels
    covered : bool
        Every item of the run has ``pi > 0``.
    level, interval
        Confidence level and Beta-type interval family.
    blocks : numpy.ndarray, optional
        When the strata are pieces of coarser strata (post-strata of score strata), the
        coarse stratum of each piece: a piece without a sample borrows its neighbour's rate,
        and only a coarse stratum without any sample keeps the target from being met.
    census_groups : numpy.ndarray, optional
        Per stratum, the census domain (0-3) of its items sampled with certainty: with bands,
        each band's census items were judged by different look rules (see :mod:`..labels`).
        One domain when omitted.
    merge : numpy.ndarray, optional
        When ``strata`` holds finer pieces, the stratum each piece is counted in (thin pieces
        joined to a neighbour); ``stratum_sizes`` are then those of the merged strata. Applied
        to the verified items only. The identity when omitted.

    Notes
    -----
    With fallible annotators each score stratum (and the census part) is a domain whose rate is
    estimated by maximum likelihood given the annotators' error rates, with its sandwich
    variance; the annotator parameters add ``g' Sigma g`` (:mod:`..labels`). The interval is
    drawn on the scale of the answers (:func:`..intervals.misclassified_interval`), where a
    rate of 1 is still an answer rate below 1.
    """
    n = run_items.size
    n_strata = stratum_sizes.size
    view, n_unc, census = _verified(
        run_items,
        strata,
        inclusion,
        known,
        labels,
        n_strata=n_strata,
        census_groups=census_groups,
        merge=merge,
    )
    if census:
        return _census(view, n, n_strata, covered, level, interval)
    fit = _sampled_strata(view, stratum_sizes, blocks)
    if fit is None:
        return _bounds_only(view, n, n_unc, n_strata, covered, level, interval)
    return _poststratified(view, fit, n, n_unc, covered, level=level, interval=interval)


def _verified(
    run_items: np.ndarray,
    strata: np.ndarray,
    inclusion: np.ndarray,
    known: np.ndarray,
    labels: ItemLabels,
    *,
    n_strata: int,
    census_groups: np.ndarray | None,
    merge: np.ndarray | None,
) -> tuple[RunLabels, int, bool]:
    """The run's verified items with their labels as the run sees them, how many of the run's
    items are not sampled with certainty, and whether every item counts once (a census)."""
    n = run_items.size
    pos = np.flatnonzero(known[run_items])
    k_items = run_items[pos]
    pi = inclusion[k_items]
    k_strata = strata[pos] if merge is None else merge[strata[pos]]
    certain = pi >= 1.0
    n_unc = n - int(np.count_nonzero(certain))
    used = int(pos.size)
    census = n_unc == 0 or used == n
    census_group = (
        census_groups[k_strata] if census_groups is not None else np.zeros(used, np.int64)
    )
    view = RunLabels.of(
        labels, k_items, pi, k_strata, certain, n_strata, census=census, census_group=census_group
    )
    return view, n_unc, census


def _bounds_only(
    view: RunLabels,
    n: int,
    n_unc: int,
    n_strata: int,
    covered: bool,
    level: float,
    interval: str,
) -> PrecisionParts:
    """No stratum has a sampled item: worst-case bounds and no value (:func:`_bounds`)."""
    used = view.items.size
    low, high = _bounds(view, n, n_unc, level, interval)
    est = IntervalEstimate(math.nan, low, high, level, "bounds-only", used)
    return _parts(
        view,
        est,
        math.inf,
        covered,
        np.full(n_strata, 0.5),
        np.zeros(n_strata),
        unsampled=True,
        coefficients=np.zeros(used),
    )


@dataclass(frozen=True)
class _SampledStrata:
    """Per score stratum, the part of a run sampled with ``pi < 1``: Hajek rate and variance.

    ``h`` and ``w`` are each sampled item's stratum and weight ``1 / pi``, ``sw`` their sums per
    stratum; ``size`` counts the stratum's items not sampled with certainty (an unsampled
    stratum's moved to its nearest sampled neighbour), ``unsampled`` marks strata with items but
    no sample (with pieces: no sample in their block either), and ``borrowed`` is the variance
    (times ``n^2``) the moved items add.
    """

    h: np.ndarray
    w: np.ndarray
    sw: np.ndarray
    size: np.ndarray
    has_sample: np.ndarray
    unsampled: np.ndarray
    rate: np.ndarray
    trials: np.ndarray
    smooth: np.ndarray
    variance: np.ndarray
    borrowed: float  # sum over unsampled strata of size^2 times their rate's mean square error


def _sampled_strata(
    view: RunLabels, stratum_sizes: np.ndarray, blocks: np.ndarray | None
) -> _SampledStrata | None:
    """Rate, effective trials and variance of each stratum's sampled items (``None``: none)."""
    n_strata = stratum_sizes.size
    certain = view.certain
    sample = ~certain
    size_h = stratum_sizes - np.bincount(view.strata[certain], minlength=n_strata)
    h = view.strata[sample]
    pi = view.inclusion[sample]
    w = 1.0 / pi
    f = view.z[sample]
    sw = np.bincount(h, weights=w, minlength=n_strata)
    if not (sw > 0).any():
        return None
    swf = np.bincount(h, weights=w * f, minlength=n_strata)
    sw2 = np.bincount(h, weights=w * w * (1.0 - pi), minlength=n_strata)
    has_sample = sw > 0
    unsampled = (size_h > 0) & ~has_sample
    donor = _donors(has_sample, unsampled)
    empty_size = np.where(unsampled, size_h, 0.0)
    size_h = np.bincount(donor, weights=size_h, minlength=n_strata)
    if blocks is not None:
        block_sampled = np.bincount(blocks, weights=has_sample, minlength=blocks.max() + 1) > 0
        unsampled = unsampled & ~block_sampled[blocks]
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(has_sample, swf / np.where(has_sample, sw, 1.0), 0.0)
        trials = np.where(has_sample & (sw2 > 0), sw * sw / np.where(sw2 > 0, sw2, 1.0), np.inf)
    smooth, var_h = _stratum_variances(rate, trials, h, w, f, pi, sw, has_sample, view.domains)
    # A stratum with items but no sample counts at its neighbour's rate ``r``: the mean square
    # error of that, for a rate about which nothing is known (Jeffreys' prior), is
    # 1/8 + (1/2 - r)^2. Without it a run's own items, unsampled in a stratum whose other items
    # were verified for other runs, counted as certain at their neighbours' rate (febrl4 slice,
    # a run of precision 0.808: coverage 0.88).
    borrowed = float(np.sum(empty_size**2 * (0.125 + (0.5 - rate[donor]) ** 2)))
    return _SampledStrata(
        h, w, sw, size_h, has_sample, unsampled, rate, trials, smooth, var_h, borrowed
    )


def _poststratified(
    view: RunLabels,
    fit: _SampledStrata,
    n: int,
    n_unc: int,
    covered: bool,
    *,
    level: float,
    interval: str,
) -> PrecisionParts:
    """The census part plus the post-stratified Hajek estimate of the sampled part, with the
    variance of both (design, labels, annotator parameters) and its interval."""
    weight = fit.size / n_unc
    rate_u = float(weight @ fit.rate)
    var_u = float(weight**2 @ fit.variance) + fit.borrowed / (n_unc * n_unc)
    smooth_u = float(weight @ fit.smooth)
    share = n_unc / n
    coefficients = _label_coefficients(view, fit, n)
    census_var = view.census_variance(n)
    param_var = view.parameter_variance(coefficients)
    var_u += (census_var + param_var) / (share * share)
    base = float(view.z[view.certain].sum()) / n
    value = base + share * rate_u
    low, high = _shifted_interval(
        view, value, base, share, rate_u, var_u, smooth_u, level=level, interval=interval
    )
    est = IntervalEstimate(
        value, low, high, level, f"poststratified-hajek/{interval}{view.suffix}", view.items.size
    )
    # The planner sees an unsampled stratum's rate as unknown (0.5: the most variable), so it
    # gets a real level next round instead of the near-zero one a borrowed rate of 0 gives.
    planning_rates = np.where(fit.unsampled, 0.5, fit.smooth)
    total = share * share * var_u
    return _parts(
        view,
        est,
        total,
        covered,
        planning_rates,
        fit.trials,
        unsampled=bool(fit.unsampled.any()),
        coefficients=coefficients,
        parameter_variance=param_var,
        residuals=_residuals(view, fit),
        borrowed_variance=fit.borrowed / (n * n),
    )


def _residuals(view: RunLabels, fit: _SampledStrata) -> np.ndarray:
    """Each verified item's label minus its post-stratum's Hajek rate (0 for certain items)."""
    out = np.zeros(view.items.size)
    out[~view.certain] = view.z[~view.certain] - fit.rate[fit.h]
    return out


def _label_coefficients(view: RunLabels, fit: _SampledStrata, n: int) -> np.ndarray:
    """The derivative of the estimate with respect to each verified item's label."""
    coefficients = np.full(view.items.size, 1.0 / n)
    h = fit.h
    with np.errstate(invalid="ignore", divide="ignore"):
        coefficients[~view.certain] = np.where(
            fit.has_sample[h], fit.size[h] / n * fit.w / fit.sw[h], 0.0
        )
    return coefficients


def _shifted_interval(
    view: RunLabels,
    value: float,
    base: float,
    share: float,
    rate_u: float,
    var_u: float,
    smooth_u: float,
    *,
    level: float,
    interval: str,
) -> tuple[float, float]:
    """The interval of ``value = base + share * rate_u`` (census part plus sampled part)."""
    if view.noisy:
        # Census items carry judgment noise too, so the whole precision is one uncertain rate:
        # ``base + share * [interval of the sampled part]`` would cap the upper bound at
        # ``base + share``, below 1 for a run whose every item is correct (measured: 24% of
        # such runs missed with annotators of 0.9).
        low, high = misclassified_interval(
            value,
            share * share * var_u,
            smoothed=base + share * smooth_u,
            shape=view.shape,
            level=level,
            method=interval,
        )
        return low, high
    lo_u, hi_u = misclassified_interval(
        rate_u, var_u, smoothed=smooth_u, level=level, method=interval
    )
    return base + share * lo_u, base + share * hi_u


def _parts(
    view: RunLabels,
    est: IntervalEstimate,
    variance: float,
    covered: bool,
    rates: np.ndarray,
    trials: np.ndarray,
    *,
    coefficients: np.ndarray,
    unsampled: bool = False,
    parameter_variance: float = 0.0,
    residuals: np.ndarray | None = None,
    borrowed_variance: float = 0.0,
) -> PrecisionParts:
    """The run's precision with the per-item pieces of ``view`` the planner reads."""
    return PrecisionParts(
        est,
        variance,
        covered,
        rates,
        trials,
        unsampled=unsampled,
        items=view.items,
        values=view.z,
        variances=view.v,
        coefficients=coefficients,
        inclusion=view.inclusion,
        inflation=view.item_inflation(),
        parameter_variance=parameter_variance,
        residuals=np.zeros(view.items.size) if residuals is None else residuals,
        borrowed_variance=borrowed_variance,
    )


def _census(
    view: RunLabels, n: int, n_strata: int, covered: bool, level: float, interval: str
) -> PrecisionParts:
    """Every item of the run is verified (or every one is sampled with certainty)."""
    used = view.items.size
    value = float(view.z.sum()) / n
    coefficients = np.full(used, 1.0 / n)
    label_var = 0.0
    dl = view.domains
    if dl is not None:  # noisy
        weight = np.bincount(view.domain, minlength=dl.rate.size).astype(float)
        label_var = float(dl.rate_variance(np.zeros(dl.rate.size)) @ weight**2) / (n * n)
    param_var = view.parameter_variance(coefficients)
    variance = label_var + param_var
    if variance > 0.0:
        low, high = misclassified_interval(
            value, variance, shape=view.shape, level=level, method=interval
        )
        if dl is not None and n <= SMALL_CENSUS:
            # A few items, mostly one answer each: the count is an integer the labels' variance
            # does not reach the edges of (:mod:`.census_bounds`).
            exact_low, exact_high = small_census_bounds(dl.evidence_of(view.items), level=level)
            low, high = min(low, exact_low), max(high, exact_high)
        est = IntervalEstimate(
            value, low, high, level, f"{CENSUS_METHOD}/{interval}{view.suffix}", used
        )
    else:
        est = IntervalEstimate(value, value, value, level, "exact", used)
    return _parts(
        view,
        est,
        variance,
        covered,
        np.full(n_strata, value),
        np.zeros(n_strata),
        coefficients=coefficients,
        parameter_variance=param_var,
    )


def _bounds(
    view: RunLabels, n: int, n_unc: int, level: float, interval: str
) -> tuple[float, float]:
    """Worst-case bounds of a run whose only verified items are sampled with certainty: the
    ``n_unc`` others may all be wrong or all right. With fallible annotators the verified part's
    correct count is itself uncertain, so its interval (label and annotator-parameter noise, on
    the answers' scale) replaces its point value; otherwise a run whose every item is correct
    gets an upper bound below 1 (measured in the annotator-error integration test)."""
    n_known = n - n_unc
    if not view.noisy or n_known == 0:
        base = float(view.z[view.certain].sum())
        return base / n, (base + n_unc) / n
    share = n_known / n
    rate = float(view.z[view.certain].sum()) / n_known
    coefficients = np.where(view.certain, 1.0 / n_known, 0.0)
    variance = view.census_variance(n_known) + view.parameter_variance(coefficients)
    lo, hi = misclassified_interval(rate, variance, shape=view.shape, level=level, method=interval)
    return share * lo, share * hi + n_unc / n


def _donors(has_sample: np.ndarray, unsampled: np.ndarray) -> np.ndarray:
    """Each stratum's donor: the nearest sampled neighbour of an ``unsampled`` one, else itself."""
    donor = np.arange(has_sample.size)
    sampled = np.flatnonzero(has_sample)
    for g in np.flatnonzero(unsampled):
        donor[g] = sampled[np.argmin(np.abs(sampled - g))]
    return donor


def _stratum_variances(
    rate: np.ndarray,
    trials: np.ndarray,
    h: np.ndarray,
    w: np.ndarray,
    f: np.ndarray,
    pi: np.ndarray,
    sw: np.ndarray,
    has_sample: np.ndarray,
    domains: DomainLabels | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per stratum: the Jeffreys-smoothed rate and the Hajek variance of the stratum mean,
    floored at the smoothed binomial variance on the Kish effective size (so that an
    all-correct stratum still carries the uncertainty its size implies).

    ``domains``: with fallible annotators, the strata's :class:`..labels.DomainLabels` (the
    sandwich variance of each stratum's rate, and a floor inflated by ``1 / (1 - gamma)``);
    ``None`` with exact labels.
    """
    resid = f - rate[h]
    lin = np.bincount(h, weights=w * w * (1.0 - pi) * resid * resid, minlength=rate.size)
    finite = np.isfinite(trials)
    smooth = np.where(finite, smoothed_rate(rate, np.where(finite, trials, 0.0)), rate)
    with np.errstate(invalid="ignore", divide="ignore"):
        design = lin / np.where(has_sample, sw * sw, 1.0)
        floor = np.where(finite, smooth * (1 - smooth) / np.where(finite, trials, 1.0), 0.0)
        if domains is not None:
            n_strata = rate.size
            design = domains.rate_variance(np.append(design, np.zeros(CENSUS_DOMAINS)))[:n_strata]
            floor = floor / (1.0 - domains.missing[:n_strata])
        var_h = np.where(has_sample, np.maximum(design, floor), 0.0)
    return smooth, var_h


def predicted_half_width(
    pi_new: np.ndarray,
    strata: np.ndarray,
    count: np.ndarray,
    rates: np.ndarray,
    *,
    inflation: np.ndarray | None = None,
    level: float,
    interval: str,
) -> float:
    """Precision half-width expected once every item drawn under ``pi_new`` is answered.

    Items come in groups: ``count[g]`` items of stratum ``strata[g]`` at level ``pi_new[g]``.
    ``inflation`` multiplies each stratum's variance for the labels' uncertainty (1 with exact
    labels).
    """
    n = float(count.sum())
    certain = pi_new >= 1.0
    n_unc = n - float(count[certain].sum())
    # Items verified outright still carry their labels' noise (none with exact labels).
    census = 0.0
    if inflation is not None and certain.any():
        r = rates[strata[certain]]
        census = float(np.sum(count[certain] * r * (1 - r) * (inflation[strata[certain]] - 1)))
        census /= n * n
    if n_unc == 0:
        total = census
        return normal_quantile(level) * math.sqrt(total) if total > 0 else 0.0
    unc = ~certain
    h = strata[unc]
    p = pi_new[unc]
    c = count[unc]
    n_strata = rates.size
    size_h = np.bincount(h, weights=c, minlength=n_strata)
    with np.errstate(divide="ignore"):
        inv = np.bincount(h, weights=c * (1.0 - p) / p, minlength=n_strata)
    if not np.isfinite(inv).all():
        return math.inf
    with np.errstate(invalid="ignore", divide="ignore"):
        trials = np.where(inv > 0, size_h**2 / np.where(inv > 0, inv, 1.0), np.inf)
    finite = np.isfinite(trials) & (size_h > 0)
    smooth = np.where(finite, smoothed_rate(rates, np.where(finite, trials, 0.0)), rates)
    var_h = np.where(finite, smooth * (1 - smooth) / np.where(finite, trials, 1.0), 0.0)
    if inflation is not None:
        var_h = var_h * inflation
    weight = size_h / n_unc
    share = n_unc / n
    rate_u = float(weight @ rates)
    var_u = float(weight**2 @ var_h) + census / (share * share)
    lo, hi, _ = effective_binomial_interval(
        rate_u, var_u, smoothed=float(weight @ smooth), level=level, method=interval
    )
    return share * (hi - lo) / 2.0
