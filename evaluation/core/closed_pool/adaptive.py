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

Estimation (:mod:`.totals`, where it is described). A run's true positives and false negatives
are its verified positives plus, per cell, the unverified items times the cell's posterior rate;
every measure (:mod:`.measures`) is a function of them, with a delta-method interval.

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
from scipy import special

from ..intervals import effective_binomial_interval, misclassified_interval
from ..measures import OPEN_MEASURES
from ..results import IntervalEstimate
from .cells import CellRates, RankCells, cell_rates, rank_cells
from .curve import ThresholdCurves, score_threshold_totals
from .interface import MeasureEstimates, PoolSampling
from .label_noise import PoolLabels, looks_due, pool_labels
from .measures import (
    CLOSED_POOL_MEASURES,
    check_measures,
    measure_beta,
    measure_gradient,
    measure_range,
    measure_value,
)
from .precision_bounds import EXACT_UP_TO, exact_precision_bounds
from .state import PoolState
from .totals import PoolTotals, pool_totals, verified_weights

__all__ = ["AdaptivePoolDesign"]

METHOD = "cell-posterior"


@dataclass(eq=False)
class _Sampling:
    """A pool's sampling record: permanent numbers, inclusion probabilities, its cells."""

    permanent: npt.NDArray[np.float64]
    inclusion: npt.NDArray[np.float64]
    cells: RankCells | None = None
    cells_for_runs: int = 0


class AdaptivePoolDesign(ThresholdCurves):
    """Adaptive coordinated Poisson sampling of a closed pool for all of its runs at once.

    Parameters
    ----------
    confidence : float, keyword-only
        Level at which the planner judges the runs' half-widths.
    target_half_width : float, keyword-only
        Half-width every run's targeted measures should reach; a run further from it weighs more.
    targets : sequence of str, keyword-only
        Measures whose variance the proposal minimises (names of
        :data:`evaluation.core.measures.CLOSED_POOL_MEASURES`).
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
        targets: Sequence[str] = OPEN_MEASURES,
        defensive_share: float = 0.1,
        round_size: int = 50,
        prior_strength: float = 2.0,
        first_cell: int = 16,
        interval: str = "clopper-pearson",
        beta: float = 1.0,
    ) -> None:
        unknown = [m for m in targets if m not in CLOSED_POOL_MEASURES]
        if unknown or not targets:
            raise ValueError(
                f"targets: names from {', '.join(CLOSED_POOL_MEASURES)}, not {unknown}"
            )
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

    def fitted(
        self, state: PoolState
    ) -> tuple[RankCells, CellRates, PoolLabels | None, npt.NDArray[np.float64]]:
        """The model the estimates rest on: the cells, their rates, the annotator model's labels
        (``None`` with exact labels) and every item's inclusion probability
        (:mod:`.paired` builds the runs' joint covariance from them)."""
        record = self._record(state, None)
        return (*self._model(state, record), record.inclusion)

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
        check_measures(measures)
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
            low, high = exact_precision_bounds(t, r, level)
            return IntervalEstimate(value, low, high, level, f"{METHOD}/exact", used)
        d_tp, d_fn = measure_gradient(name, t.tp[r], t.fn[r], **known)
        variance = float(d_tp**2 * t.tp_interval_variance[r] + d_fn**2 * t.fn_variance[r])
        method = f"{METHOD}/{self.interval}"
        if name == "precision" and not t.exact_labels:
            # Fallible answers: a precision of 1 still shows some "no" answers, so the interval
            # is drawn where they are seen (dblp-acm at 250 labels, 0.95-accurate annotators:
            # runs of precision 1 covered 0.54 with the Beta shape on the rate itself).
            low, high = misclassified_interval(
                value, variance, shape=t.answer_shape, level=level, method=self.interval
            )
            if t.tp_unverified[r] <= EXACT_UP_TO:
                # And the exact bounds of its few unverified predictions (abt-buy at 250
                # labels: a run of precision 0.730 with two unverified predictions, both
                # negative, in cells 80% positive, covered 0.90 with the interval above alone).
                exact_low, exact_high = exact_precision_bounds(t, r, level)
                low, high = min(low, exact_low), max(high, exact_high)
                method += "+exact"
            return IntervalEstimate(value, low, high, level, f"{method}-answers", used)
        span = high_r - low_r
        share = (value - low_r) / span
        low, high, _ = effective_binomial_interval(
            share, variance / span**2, level=level, method=self.interval
        )
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

    def threshold_estimates(
        self, state: PoolState, run: int, thresholds: npt.NDArray[np.float64], *, level: float
    ) -> list[tuple[IntervalEstimate, IntervalEstimate]]:
        """Each threshold's predictions estimated as a run is, from the cells' rates (and, with
        fallible annotators, the run's labels), for :meth:`curve` (:mod:`.curve`).

        Costs a pass over the pool and ``O(points * cells)`` (about 0.1 s a run on 700,000
        items): compute the curve where the estimation runs (the worker), and store it.
        """
        record = self._record(state, None)
        cells, rates, labels = self._model(state, record)
        predictions = state.runs[run].predictions
        run_labels = labels.for_run(predictions) if labels is not None else None
        totals = score_threshold_totals(
            state,
            cells,
            rates,
            record.inclusion,
            state.runs[run].scores,
            thresholds,
            labels=run_labels,
        )
        used = state.n_labelled
        return [
            (
                self._interval("precision", totals, k, state.n_items, level, used),
                self._interval("recall", totals, k, state.n_items, level, used),
            )
            for k in range(thresholds.size)
        ]

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
