"""A closed pool's totals: every run's true positives and false negatives, with variances, from
the cells' posterior rates and the shared labels (the estimation of :mod:`.adaptive`).

A run's true positives ``tp`` and false negatives ``fn`` (the positives among its
predicted positives and among its predicted negatives) are its verified positives there plus,
for every cell, the unverified items there times the cell's posterior mean rate. Their variance
is the Beta-binomial variance of those unverified items: ``u^2 var(rate) + u mean (1 - mean)``
per cell, summed. A cell where nothing has been verified keeps its prior's doubt, so F1 is always
defined and never over-sure. Every measure is a smooth function of ``(tp, fn)``
(:mod:`.measures`); its interval is the Beta-type interval of the delta-method variance on its
effective number of trials (:func:`..intervals.effective_binomial_interval`; MCC on
``(mcc + 1) / 2``), which keeps its coverage near 0 and 1.

References
----------
N. G. Marchant and B. I. P. Rubinstein, "Needle in a haystack: label-efficient evaluation under
extreme class imbalance", KDD 2021 (paper 000), §3.
W. J. Rogan and B. Gladen, "Estimating prevalence from the results of a screening test",
American Journal of Epidemiology 107(1):71-76, 1978.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import special

from .cells import CellRates, RankCells
from .label_noise import PoolLabels, RunLabelValues
from .state import PoolState

__all__ = [
    "DomainTotal",
    "PoolTotals",
    "domain_rates",
    "domain_total",
    "pool_totals",
    "prediction_totals",
    "totals_of",
    "verified_weights",
    "weighted_sums",
]


@dataclass(frozen=True, eq=False)
class PoolTotals:
    """Per run (arrays over runs): estimated ``tp`` and ``fn``, their variances, known ``pp``.

    The planner reads the model's variances; the intervals read ``tp_interval_variance`` and,
    for exact bounds, the upper rates (:func:`domain_total`)."""

    tp: npt.NDArray[np.float64]
    fn: npt.NDArray[np.float64]
    tp_variance: npt.NDArray[np.float64]
    fn_variance: npt.NDArray[np.float64]
    pp: npt.NDArray[np.float64]
    # ``tp``'s variance for the intervals: at least that of :func:`domain_total`'s doubt.
    tp_interval_variance: npt.NDArray[np.float64]
    tp_verified: npt.NDArray[np.float64]
    tp_unverified: npt.NDArray[np.float64]
    tp_rates: tuple[tuple[npt.NDArray[np.float64], ...], ...]
    tp_upper_rates: tuple[tuple[npt.NDArray[np.float64], ...], ...]
    # Whether every label is exact (no annotator error to carry): exact bounds need it.
    exact_labels: bool = True
    # The typical annotator's (sensitivity, specificity): precision's interval is drawn on the
    # scale of the answers (:func:`..intervals.misclassified_interval`). (1, 1) when exact.
    answer_shape: tuple[float, float] = (1.0, 1.0)
    # The part of ``tp``'s variance its verified items' labels carry (their doubt and the
    # annotator parameters'; :mod:`.label_noise`): 0 with exact labels. ``None``: all 0.
    tp_label_variance: npt.NDArray[np.float64] | None = None


def pool_totals(
    state: PoolState,
    cells: RankCells,
    rates: CellRates,
    inclusion: npt.ArrayLike,
    labels: PoolLabels | None = None,
) -> PoolTotals:
    """Every run's ``tp`` and ``fn`` with variances from the cells' posteriors (see the module);
    ``labels``: with fallible annotators, the labels corrected for their error
    (:mod:`.label_noise`)."""
    return prediction_totals(
        state, cells, rates, inclusion, [run.predictions for run in state.runs], labels
    )


def prediction_totals(
    state: PoolState,
    cells: RankCells,
    rates: CellRates,
    inclusion: npt.ArrayLike,
    masks: npt.ArrayLike,
    labels: PoolLabels | None = None,
) -> PoolTotals:
    """``tp`` and ``fn`` with their variances for the predictions ``masks`` (one row per set of
    predictions over the pool), as the design estimates a run's.

    A run's predicted positives in a cell, and its predicted negatives there, get rates of their
    own (:func:`domain_rates`): a cell mixes the items of precise and of sloppy runs. With
    ``labels`` (fallible annotators) each verified item counts for its label corrected for
    annotator error in those same domains, and the labels' uncertainty is added.
    """
    masks = np.atleast_2d(np.asarray(masks, dtype=bool))
    verified = state.labelled
    exact = (verified & (state.labels == 1)).astype(float)
    unverified = ~verified
    weight = verified_weights(state, inclusion)
    exact_sums = weighted_sums(cells, weight, exact)
    parts = []
    for predictions in masks:
        run = labels.for_run(predictions) if labels is not None else None
        value = run.value if run is not None else exact
        cell_sums = weighted_sums(cells, weight, value) if run is not None else exact_sums
        parts.append(
            [
                domain_total(
                    rates,
                    cell_sums,
                    weighted_sums(cells, np.where(domain, weight, 0.0), value),
                    cells.count(unverified & domain),
                    float(value[domain].sum()),
                    doubt=doubt,
                    labels=run,
                    side=side,
                    members=domain,
                )
                for domain, doubt, side in ((predictions, True, 1), (~predictions, False, 0))
            ]
        )
    return totals_of(
        parts,
        masks.sum(axis=1).astype(float),
        exact_labels=labels is None,
        answer_shape=(1.0, 1.0) if labels is None else labels.view.typical_annotator(),
    )


@dataclass(frozen=True, eq=False)
class DomainTotal:
    """The positives of a domain (a run's predicted positives, or negatives): ``total`` and its
    ``variance``, and the variance its interval is drawn with; the verified positives, and per
    cell the unverified items and their rate's posterior mean and variance, and the mean and
    variance its upper tail is drawn from (for exact bounds; :func:`domain_total`)."""

    total: float
    variance: float
    interval_variance: float
    verified_positives: float
    unverified: npt.NDArray[np.float64]
    rate_mean: npt.NDArray[np.float64]
    rate_variance: npt.NDArray[np.float64]
    upper_mean: npt.NDArray[np.float64]
    upper_variance: npt.NDArray[np.float64]
    label_variance: float = 0.0


# The first shape of Jeffreys' prior: below it, a rate's posterior rules out a positive among a
# run's unverified predictions more firmly than the cell's labels do.
FIRST_SHAPE_FLOOR = 0.5


def domain_total(
    rates: CellRates,
    cell_sums: npt.NDArray[np.float64],
    domain_sums: npt.NDArray[np.float64],
    unverified: npt.NDArray[np.float64],
    verified_positives: float,
    *,
    doubt: bool = False,
    labels: RunLabelValues | None = None,
    side: int = 1,
    members: npt.NDArray[np.bool_] | None = None,
) -> DomainTotal:
    """A domain's positives: the verified ones plus, per cell, its unverified items times their
    rate (:func:`domain_rates`), with the Beta-binomial variance of those.

    ``doubt`` (a run's predicted positives): where a cell's rate has a Beta posterior of first
    shape below :data:`FIRST_SHAPE_FLOOR`, the interval's variance is at least that of the
    Jeffreys posterior of the cell's verified items (:func:`_floored_first_shape`), and exact
    bounds draw their upper tail from the larger of the two. A run's rate in a cell rests on a
    prior of strength 2 around a small mean, so its first shape is far below 1 and the model
    rules out a positive among the run's last unverified items that the cell's labels do not
    (measured on abt-buy at 500 labels: a run of precision 0.265 with one positive among its 35
    unverified predictions, in a cell whose 25 weighted verified items were all negative,
    covered 0.845).
    The estimate and the planner's variance are unchanged: a floor on the mean puts phantom
    positives into every cell and biases a run with many unverified predictions (dblp-acm at 250
    labels: coverage 0.03), and planning on the floored variance moves labels to sloppy runs
    (abt-buy at 250 labels: lowest precision coverage 0.95 -> 0.90, 60 campaigns).

    ``labels`` (fallible annotators; the run's domains on ``side``, 1 its predicted positives,
    and the domain's items ``members``): each rate's variance is divided by ``(1 - gamma)^2``
    and the labels' own doubt and the annotator parameters' are added (:mod:`.label_noise`).
    """
    mean, var = domain_rates(rates, cell_sums, domain_sums)
    u = np.asarray(unverified, dtype=float)
    extra = 0.0
    if labels is not None:
        if members is None:
            raise ValueError("labels with annotator error need the domain's members")
        var = np.minimum(var * labels.inflation(side), mean * (1.0 - mean))
        extra = labels.extra_variance(members, u)
    variance = u * u * var + u * mean * (1.0 - mean)
    interval_variance = variance
    upper_mean, upper_var = mean, var
    if doubt:
        found, effective = _hajek(cell_sums)
        upper_mean, upper_var = _floored_first_shape(mean, var, effective - found)
        floored = u * u * upper_var + u * upper_mean * (1.0 - upper_mean)
        interval_variance = np.maximum(variance, floored)
    return DomainTotal(
        float(verified_positives + u @ mean),
        float(variance.sum() + extra),
        float(interval_variance.sum() + extra),
        float(verified_positives),
        u,
        mean,
        var,
        upper_mean,
        upper_var,
        float(extra),
    )


def _floored_first_shape(
    mean: npt.NDArray[np.float64],
    var: npt.NDArray[np.float64],
    negatives: npt.NDArray[np.float64] | float = 0.0,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Mean and variance of the rate each cell's upper tail is drawn from: where the rate's
    Beta(mean, var) has a first shape below :data:`FIRST_SHAPE_FLOOR` and a smaller mean than
    ``Beta(FIRST_SHAPE_FLOOR, 1/2 + negatives)`` (the Jeffreys posterior of a cell whose verified
    items, ``negatives`` weighted negatives, hold no positive), that Beta; otherwise its own. A
    run's own rate above its cell's (a precise run among another's false positives) keeps its
    posterior: doubt never lowers a rate."""
    m = np.clip(mean, 1e-12, 1.0 - 1e-12)
    with np.errstate(divide="ignore", invalid="ignore"):
        strength = np.where(var > 0, m * (1.0 - m) / np.where(var > 0, var, 1.0) - 1.0, np.inf)
    finite = np.isfinite(strength) & (strength > 0)
    a = FIRST_SHAPE_FLOOR
    b = 0.5 + np.maximum(np.asarray(negatives, dtype=float), 0.0)
    jeffreys_mean = a / (a + b)
    raised = finite & (m * strength < FIRST_SHAPE_FLOOR) & (jeffreys_mean > mean)
    floored_mean = np.where(raised, jeffreys_mean, mean)
    floored_var = np.where(raised, a * b / ((a + b) ** 2 * (a + b + 1.0)), var)
    return floored_mean, floored_var


def totals_of(
    parts: Sequence[Sequence[DomainTotal]],
    pp: npt.ArrayLike,
    *,
    exact_labels: bool = True,
    answer_shape: tuple[float, float] = (1.0, 1.0),
) -> PoolTotals:
    """:class:`PoolTotals` from each run's ``(predicted positives, predicted negatives)``."""
    tp = [p[0] for p in parts]
    fn = [p[1] for p in parts]
    return PoolTotals(
        np.array([d.total for d in tp]),
        np.array([d.total for d in fn]),
        np.array([d.variance for d in tp]),
        np.array([d.variance for d in fn]),
        np.asarray(pp, dtype=float),
        np.array([d.interval_variance for d in tp]),
        np.array([d.verified_positives for d in tp]),
        np.array([d.unverified.sum() for d in tp]),
        tuple((d.unverified, d.rate_mean, d.rate_variance) for d in tp),
        tuple((d.upper_mean, d.upper_variance) for d in tp),
        exact_labels,
        answer_shape,
        np.array([d.label_variance for d in tp]),
    )


def verified_weights(state: PoolState, inclusion: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Per item, ``1 / pi`` if verified, else 0."""
    pi = np.maximum(np.asarray(inclusion, dtype=float), 1e-12)
    weights: npt.NDArray[np.float64] = np.where(state.labelled, 1.0 / pi, 0.0)
    return weights


def weighted_sums(
    cells: RankCells, weight: npt.NDArray[np.float64], positive: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """Per cell ``(sum w, sum w^2, sum w y)`` over the verified items (a 3 x cells array;
    ``y`` a label in [0, 1])."""
    n = cells.n_cells
    return np.array(
        [
            np.bincount(cells.of_item, weights=weight, minlength=n),
            np.bincount(cells.of_item, weights=weight * weight, minlength=n),
            np.bincount(cells.of_item, weights=weight * positive, minlength=n),
        ]
    )


def _hajek(sums: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.float64], ...]:
    """Per cell, the positives found and the Kish effective size from weighted sums."""
    sum_w, sum_w2, sum_wy = np.maximum(sums, 0.0)
    seen = (sum_w > 1e-9) & (sum_w2 > 1e-12)
    effective = np.where(seen, sum_w * sum_w / np.where(seen, sum_w2, 1.0), 0.0)
    rate = np.clip(np.where(seen, sum_wy / np.where(seen, sum_w, 1.0), 0.0), 0.0, 1.0)
    return rate * effective, effective


def domain_rates(
    rates: CellRates, cell_sums: npt.NDArray[np.float64], domain_sums: npt.NDArray[np.float64]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Per cell, the posterior mean and variance of the rate of a domain's items there, from the
    weighted sums (:func:`weighted_sums`) of the cell's and of the domain's verified items.

    The prior of a domain's rate in a cell is the posterior of the cell's *other* items (its
    prior plus their labels), moved by one logit shift for the whole domain (a precise run's
    predictions are better than the other items of their cells alike), fitted to the domain's
    verified items under a ``N(0, RUN_SHIFT_SD^2)`` prior; the shift's uncertainty and that of
    the other items' rate enter the prior's variance. Where a domain is all of a cell, its prior
    is the cell's prior moved by the shift: its labels are not counted twice. Only voted cells
    (:mod:`.cells`) have a domain of their own: an unvoted item is a predicted negative of every
    run, and keeps its cell's posterior.
    """
    s = rates.prior_strength
    found, effective = _hajek(domain_sums)
    other_found, other_effective = _hajek(cell_sums - domain_sums)
    a0 = other_found + s * rates.prior_mean
    b0 = other_effective - other_found + s * (1.0 - rates.prior_mean)
    m = np.clip(a0 / (a0 + b0), 1e-9, 1.0 - 1e-9)
    m_var = a0 * b0 / ((a0 + b0) ** 2 * (a0 + b0 + 1.0))
    logit = np.log(m / (1.0 - m))
    voted = rates.voted
    shift, shift_var = _logit_shift(logit[voted], found[voted], effective[voted])
    prior = special.expit(logit + shift)
    slope = prior * (1.0 - prior)
    prior_var = slope * slope * (shift_var + m_var / (m * (1.0 - m)) ** 2)
    alpha = found + s * prior
    beta = effective - found + s * (1.0 - prior)
    total = alpha + beta
    mean = alpha / total
    shrink = s / total
    var = alpha * beta / (total * total * (total + 1.0)) + shrink * shrink * prior_var
    var = np.minimum(var, mean * (1.0 - mean))
    # Unvoted items are the same for every run (no run predicts them): their cells' own rates.
    return np.where(voted, mean, rates.mean), np.where(voted, var, rates.variance)


RUN_SHIFT_SD = 2.0


def _logit_shift(
    logit: npt.NDArray[np.float64],
    found: npt.NDArray[np.float64],
    effective: npt.NDArray[np.float64],
) -> tuple[float, float]:
    """Posterior mode and Laplace variance of one shift ``d`` with ``found ~ Bin(effective,
    expit(logit + d))`` per cell and ``d ~ N(0, RUN_SHIFT_SD^2)`` (Newton's method; concave)."""
    precision = 1.0 / RUN_SHIFT_SD**2
    used = effective > 0
    logit, found, effective = logit[used], found[used], effective[used]
    d = 0.0
    info = precision
    for _ in range(50):
        p = special.expit(logit + d)
        grad = float(found.sum() - (effective * p).sum()) - precision * d
        info = float((effective * p * (1.0 - p)).sum()) + precision
        step = grad / info
        d += step
        if abs(step) < 1e-8:
            break
    return d, 1.0 / info
