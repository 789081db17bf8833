"""``adaptive``: one adaptive proposal over a closed pool for every run, every label shared.

Sampling. Every item ``i`` holds a permanent uniform number ``u_i``; it is verified once its
inclusion probability ``pi_i`` exceeds ``u_i`` (coordinated Poisson sampling, paper 001). A round
raises ``pi`` towards paper 000's asymptotically optimal proposal for the runs' targeted
measures, ``pi_i`` proportional to ``sqrt(p_i)`` times the root of the measures' weighted squared
gradients at the item (Prop. 2 with ``sqrt(p_i)`` for ``sqrt(p_i (1 - p_i) + ...)`` at rare
positives), where ``p_i`` is its cell's posterior rate (:mod:`.cells`). A run whose interval is
further from the target weighs more (the square of the ratio of its half-width to the target), so
a round serves the runs that need it most, not only the newest. Every unverified item also gets a
defensive share of the round, spread uniformly, so every item keeps support and a run arriving
later is still served. ``pi`` never decreases: every label ever taken is re-used by every run.
A round takes exactly its size: the smallest scaling of the proposal at which that many new items
fall under it (sequential Poisson sampling, an order sampling; Ohlsson 1998), so ``pi`` is the
probability the design aimed at, up to that rounding.

Estimation. A run's true positives ``tp`` and false negatives ``fn`` (the positives among its
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
extreme class imbalance", KDD 2021 (paper 000), §3-4 and Prop. 2.
E. Ohlsson, "Sequential Poisson sampling", Journal of Official Statistics 14(2):149-162, 1998.
Y. Tillé, *Sampling Algorithms*, Springer, 2006, ch. 4 (Poisson sampling; paper 001).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import numpy.typing as npt
from scipy import special, stats

from ..intervals import effective_binomial_interval
from ..results import IntervalEstimate
from .cells import CellRates, RankCells, cell_rates, rank_cells
from .interface import MeasureEstimates
from .label_noise import PoolLabels, RunLabelValues, looks_due, pool_labels
from .measures import MEASURES, measure_beta, measure_gradient, measure_range, measure_value
from .state import PoolState

__all__ = ["AdaptivePoolDesign", "PoolSampling", "PoolTotals", "pool_totals"]

METHOD = "cell-posterior"


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
    return totals_of(parts, masks.sum(axis=1).astype(float), exact_labels=labels is None)


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
    parts: Sequence[Sequence[DomainTotal]], pp: npt.ArrayLike, *, exact_labels: bool = True
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
# Up to this many unverified predicted items, a run's precision gets the exact bounds of its
# posterior (:func:`_exact_precision_bounds`): the Beta-type interval treats the count of
# positives among them as continuous and cannot reach 1 while one is unverified. Beyond it the
# Beta-type interval holds better (measured: a run of 300 random predictions of precision 0.01
# on a 3,000-item pool covered 0.74 with exact bounds from the cells' model, 0.95 without).
EXACT_UP_TO = 30


def _exact_precision_bounds(t: PoolTotals, r: int, level: float) -> tuple[float, float]:
    """Equal-tailed bounds of a run's precision from the posterior of the positives among its
    unverified predicted items: per cell a beta-binomial with the cell's own rate's mean and
    variance, convolved over cells. Exact under the model, where the Beta-type interval of a
    few unverified items (two, say, each positive with odds near even) cannot reach 1."""
    counts, means, variances = t.tp_rates[r]
    upper_means, upper_variances = t.tp_upper_rates[r]
    tail = (1.0 - level) / 2.0
    low_cdf = _positives_cdf(counts, means, variances)
    high_cdf = _positives_cdf(counts, upper_means, upper_variances)
    low = int(np.searchsorted(low_cdf, tail - 1e-12))
    high = min(int(np.searchsorted(high_cdf, 1.0 - tail - 1e-12)), high_cdf.size - 1)
    pp = t.pp[r]
    return (t.tp_verified[r] + low) / pp, (t.tp_verified[r] + high) / pp


def _positives_cdf(
    counts: npt.NDArray[np.float64],
    means: npt.NDArray[np.float64],
    variances: npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]:
    """CDF of the positives among ``counts`` unverified items per cell, each cell a
    beta-binomial of its rate's mean and variance."""
    pmf = np.ones(1)
    for u, m, v in zip(counts, means, variances, strict=True):
        if u < 1:
            continue
        m = min(max(float(m), 1e-9), 1.0 - 1e-9)
        strength = m * (1.0 - m) / v - 1.0 if v > 0 else math.inf
        k = np.arange(int(u) + 1)
        if strength > 1e9:
            cell = stats.binom.pmf(k, int(u), m)
        else:
            strength = max(strength, 1e-6)
            cell = stats.betabinom.pmf(k, int(u), m * strength, (1.0 - m) * strength)
        pmf = np.convolve(pmf, cell)
    cdf: npt.NDArray[np.float64] = np.cumsum(pmf) / pmf.sum()
    return cdf


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


@dataclass(frozen=True, eq=False)
class PoolSampling:
    """What a closed-pool task stores to go on sampling: per item, its permanent uniform number
    and its inclusion probability so far."""

    permanent: npt.NDArray[np.float64]
    inclusion: npt.NDArray[np.float64]


@dataclass(eq=False)
class _Sampling:
    """A pool's sampling record: permanent numbers, inclusion probabilities, its cells."""

    permanent: npt.NDArray[np.float64]
    inclusion: npt.NDArray[np.float64]
    cells: RankCells | None = None
    cells_for_runs: int = 0


class AdaptivePoolDesign:
    """Adaptive coordinated Poisson sampling of a closed pool for all of its runs at once.

    Parameters
    ----------
    confidence : float, keyword-only
        Level at which the planner judges the runs' half-widths.
    target_half_width : float, keyword-only
        Half-width every run's targeted measures should reach; a run further from it weighs more.
    targets : sequence of str, keyword-only
        Measures whose variance the proposal minimises (names of :data:`.measures.MEASURES`).
    defensive_share : float, keyword-only
        Share of each round spread uniformly over the unverified pool.
    round_size : int, keyword-only
        Most items one call of :meth:`plan` asks for (the model learns between rounds).
    prior_strength : float, keyword-only
        Items' worth of each cell's prior (:func:`.cells.cell_rates`).
    first_cell : int, keyword-only
        Items in each group's top cell (:func:`.cells.rank_cells`).
    interval : str, keyword-only
        Beta-type interval family (:func:`..intervals.binomial_interval`).
    beta : float, keyword-only
        The ``beta`` of the measure ``"fbeta"`` (``"f1"`` stays F1).

    Notes
    -----
    The design keeps each pool's sampling record (its permanent numbers and inclusion
    probabilities) for as long as the :class:`.state.PoolState` lives; its first :meth:`plan`
    on a state draws the permanent numbers from ``rng``.
    """

    name = "adaptive"

    def __init__(
        self,
        *,
        confidence: float = 0.95,
        target_half_width: float = 0.05,
        targets: Sequence[str] = ("precision", "recall", "f1"),
        defensive_share: float = 0.1,
        round_size: int = 50,
        prior_strength: float = 2.0,
        first_cell: int = 16,
        interval: str = "clopper-pearson",
        beta: float = 1.0,
    ) -> None:
        unknown = [m for m in targets if m not in MEASURES]
        if unknown or not targets:
            raise ValueError(f"targets: names from {', '.join(MEASURES)}, not {unknown}")
        if not 0.0 < confidence < 1.0:
            raise ValueError("confidence must lie strictly between 0 and 1")
        if not 0.0 < target_half_width <= 0.5:
            raise ValueError("target_half_width must lie in (0, 0.5]")
        if not 0.0 < defensive_share < 1.0:
            raise ValueError("defensive_share must lie strictly between 0 and 1")
        if round_size < 1 or prior_strength <= 0 or first_cell < 1:
            raise ValueError("round_size and first_cell must be >= 1, prior_strength > 0")
        if not (math.isfinite(beta) and beta > 0):
            raise ValueError("beta must be a positive number")
        self.confidence = confidence
        self.target_half_width = target_half_width
        self.targets = tuple(targets)
        self.defensive_share = defensive_share
        self.round_size = round_size
        self.prior_strength = prior_strength
        self.first_cell = first_cell
        self.interval = interval
        self.beta = float(beta)
        self._records: weakref.WeakKeyDictionary[PoolState, _Sampling] = weakref.WeakKeyDictionary()

    # ------------------------------------------------------------------ the sampling record

    def sampling(self, state: PoolState) -> PoolSampling:
        """A copy of the pool's permanent numbers and inclusion probabilities, to store.

        Raises ``KeyError`` if this design has not planned on ``state``.
        """
        record = self._records[state]
        return PoolSampling(record.permanent.copy(), record.inclusion.copy())

    def resume(self, state: PoolState, sampling: PoolSampling) -> None:
        """Go on sampling ``state`` from a stored :meth:`sampling` (a new process, a new design).

        The verified items of ``state`` must be the ones that sampling chose: every one of them
        under its inclusion probability.
        """
        permanent = np.asarray(sampling.permanent, dtype=float)
        inclusion = np.asarray(sampling.inclusion, dtype=float)
        if permanent.shape != (state.n_items,) or inclusion.shape != (state.n_items,):
            raise ValueError(f"a sampling record of the pool's {state.n_items} items is needed")
        if np.any(permanent[state.labelled] >= inclusion[state.labelled]):
            raise ValueError("this sampling record did not choose the state's verified items")
        self._records[state] = _Sampling(permanent.copy(), inclusion.copy())

    # ------------------------------------------------------------------ model

    def _record(self, state: PoolState, rng: np.random.Generator | None) -> _Sampling:
        record = self._records.get(state)
        if record is None:
            if rng is None and state.n_labelled:
                raise ValueError("this design did not choose the state's verified items")
            permanent = rng.random(state.n_items) if rng is not None else np.ones(state.n_items)
            record = _Sampling(permanent, np.zeros(state.n_items))
            self._records[state] = record
        if record.cells is None or record.cells_for_runs != state.n_runs:
            outputs = [run.scores for run in state.runs], [run.predictions for run in state.runs]
            record.cells = rank_cells(*outputs, first=self.first_cell)
            record.cells_for_runs = state.n_runs
        return record

    def _model(
        self, state: PoolState, record: _Sampling
    ) -> tuple[RankCells, CellRates, PoolLabels | None]:
        """The cells, their rates and, with fallible annotators, the corrected labels."""
        cells = record.cells
        assert cells is not None
        weight = verified_weights(state, record.inclusion)
        labels = pool_labels(state.answers, state.labelled, cells, weight, record.inclusion)
        values = (
            state.labels if labels is None else np.where(state.labelled, labels.cell_values(), -1.0)
        )
        rates = cell_rates(cells, values, record.inclusion, prior_strength=self.prior_strength)
        return cells, rates, labels

    def _totals(
        self,
        state: PoolState,
        record: _Sampling,
        cells: RankCells,
        rates: CellRates,
        labels: PoolLabels | None,
    ) -> PoolTotals:
        return pool_totals(state, cells, rates, record.inclusion, labels)

    # ------------------------------------------------------------------ estimation

    def estimate(
        self, state: PoolState, *, level: float, measures: Sequence[str]
    ) -> list[MeasureEstimates]:
        """Per run, per measure of ``measures``, its value and interval (module docstring)."""
        unknown = [m for m in measures if m not in MEASURES]
        if unknown:
            raise ValueError(f"unknown measures {unknown}; known: {', '.join(MEASURES)}")
        if not state.n_runs:
            return []
        record = self._record(state, None)
        totals = self._totals(state, record, *self._model(state, record))
        used = state.n_labelled
        return [
            MappingProxyType(
                {m: self._interval(m, totals, r, state.n_items, level, used) for m in measures}
            )
            for r in range(state.n_runs)
        ]

    def _interval(
        self, name: str, t: PoolTotals, r: int, n_items: int, level: float, used: int
    ) -> IntervalEstimate:
        known = {"pp": t.pp[r], "n": n_items, "beta": measure_beta(name, self.beta)}
        value = float(measure_value(name, t.tp[r], t.fn[r], **known))
        low_r, high_r = measure_range(name)
        if not math.isfinite(value):
            return IntervalEstimate(math.nan, low_r, high_r, level, "undefined", used)
        if name == "precision" and t.tp_unverified[r] <= EXACT_UP_TO and t.exact_labels:
            low, high = _exact_precision_bounds(t, r, level)
            return IntervalEstimate(value, low, high, level, f"{METHOD}/exact", used)
        d_tp, d_fn = measure_gradient(name, t.tp[r], t.fn[r], **known)
        variance = float(d_tp**2 * t.tp_interval_variance[r] + d_fn**2 * t.fn_variance[r])
        span = high_r - low_r
        share = (value - low_r) / span
        low, high, _ = effective_binomial_interval(
            share, variance / span**2, level=level, method=self.interval
        )
        method = f"{METHOD}/{self.interval}"
        return IntervalEstimate(value, low_r + span * low, low_r + span * high, level, method, used)

    # ------------------------------------------------------------------ planning

    def plan(
        self, state: PoolState, run: int, *, budget: int, rng: np.random.Generator
    ) -> npt.NDArray[np.int64]:
        """At most ``min(budget, round_size)`` unverified items: the next round (module docstring).

        ``run`` (the run that arrived last) weighs as any other run: the round serves every run,
        the ones furthest from the target most.
        """
        if not 0 <= run < state.n_runs:
            raise IndexError(f"no run {run} in a state of {state.n_runs} runs")
        record = self._record(state, rng)
        open_ = ~state.labelled
        take = min(int(budget), self.round_size, int(np.count_nonzero(open_)))
        if take <= 0:
            return np.empty(0, np.int64)
        cells, rates, labels = self._model(state, record)
        need = np.sqrt(rates.mean[cells.of_item]) * self._gradient_scale(
            state, self._totals(state, record, cells, rates, labels)
        )
        # Order sampling: an open item is taken once the scaled proposal passes its permanent
        # number, at the scale u / need (at once if the defensive floor already does); the
        # round's scale is the take-th smallest of these.
        items = np.flatnonzero(open_)
        permanent = record.permanent[items]
        floor = record.inclusion[items] + self.defensive_share * take / items.size
        need_open = np.maximum(need[items], 1e-300)
        threshold = np.where(permanent < floor, 0.0, permanent / need_open)
        scale = float(np.partition(threshold, take - 1)[take - 1]) * (1.0 + 1e-9)
        aimed = np.minimum(1.0, np.maximum(scale * need_open, floor))
        picked = np.flatnonzero(threshold <= scale)
        if picked.size > take:
            # A floor that alone passes more than the round: the items it passes first.
            order = np.lexsort((permanent[picked] / aimed[picked], threshold[picked]))
            picked = np.sort(picked[order[:take]])
        inclusion = record.inclusion.copy()
        inclusion[items] = aimed
        record.inclusion = inclusion
        return items[picked].astype(np.int64, copy=False)

    def labels(self, state: PoolState) -> PoolLabels | None:
        """The annotator model fitted to the pool's answers and the labels it gives
        (:mod:`.label_noise`); ``None`` with exact labels."""
        return self._model(state, self._record(state, None))[2]

    def looks(self, state: PoolState) -> npt.NDArray[np.int64]:
        """Verified items owed one more judgment by fallible annotators (their answers are not a
        clear "no"; :func:`.label_noise.looks_due`): asked before the next round, they cost no
        new item. Empty with exact labels."""
        return looks_due(state.answers, state.labelled)

    def _gradient_scale(self, state: PoolState, totals: PoolTotals) -> npt.NDArray[np.float64]:
        """Per item: the root of every run's weighted squared gradients of its targets there."""
        z = float(special.ndtri(0.5 + self.confidence / 2.0))
        on_tp = np.zeros(state.n_runs)
        on_fn = np.zeros(state.n_runs)
        for r in range(state.n_runs):
            variance = 0.0
            for m in self.targets:
                known = {"pp": totals.pp[r], "n": state.n_items, "beta": measure_beta(m, self.beta)}
                # A measure that is 0/0 for this run (precision of a run predicting nothing)
                # has no variance to lower.
                d_tp, d_fn = (
                    float(d) if np.isfinite(d) else 0.0
                    for d in measure_gradient(m, totals.tp[r], totals.fn[r], **known)
                )
                on_tp[r] += d_tp**2
                on_fn[r] += d_fn**2
                variance += d_tp**2 * totals.tp_variance[r] + d_fn**2 * totals.fn_variance[r]
            half_width = z * math.sqrt(variance / len(self.targets))
            weight = max(half_width / self.target_half_width, 1.0) ** 2
            on_tp[r] *= weight
            on_fn[r] *= weight
        predicted = np.array([run.predictions for run in state.runs], dtype=float)
        squared = on_tp @ predicted + on_fn @ (1.0 - predicted)
        scale: npt.NDArray[np.float64] = np.sqrt(squared)
        return scale
