"""``passive``: a simple random sample of the pool, its labels shared by every run (the baseline).

Items are drawn uniformly without replacement from the unverified part of the pool, so the
verified items, whenever they are read, form one simple random sample of size ``m`` of the
``N`` items. Each run's confusion counts on the sample, ``a`` (positive, predicted positive),
``b`` (negative, predicted positive), ``c`` (positive, predicted negative) and ``d``, estimate
its totals by expansion, ``tp = N a / m``, ``fn = N c / m`` and ``pp = N (a + b) / m``
(unbiased; Cochran 1977, §2.4), and every measure is :func:`.measures.measure_value` of these,
as in paper 000's Table 1 for passive sampling: the run's known ``pp`` is not used, which is
what makes F1 0/0 when no sampled item is positive or predicted positive (the issue's anchor).
The N/m factors cancel in every measure, so each is a ratio of sample counts.

Intervals are exact binomial (Clopper-Pearson) intervals of proportions of the sample, which
stay honest at the small counts of rare positives (a 0/0 value still gets a bounded interval):

* precision ``a / (a + b)``, recall ``a / (a + c)``, accuracy ``(a + d) / m``: the proportion's
  interval (conditionally on the denominator, the sample of that group is a simple random
  sample of it, and the binomial interval is conservative for sampling without replacement);
* F1 ``= 2J / (1 + J)`` with the Jaccard index ``J = a / (a + b + c)``, increasing in ``J``: the
  image of ``J``'s interval;
* balanced accuracy (increasing in TPR and TNR) and MCC
  ``= sqrt(PPV TPR TNR NPV) - sqrt((1 - PPV)(1 - TPR)(1 - TNR)(1 - NPV))`` (increasing in each
  of the four rates): the image of the box of the rates' intervals, each at level
  ``1 - (1 - level) / k`` (Bonferroni over the ``k`` rates).

Once every item is verified the values are exact and the intervals have zero width.
The estimator reads every verified label as part of the one sample: it is valid as long as this
design alone chose the verified items.

References
----------
W. G. Cochran, *Sampling Techniques*, 3rd ed., Wiley, 1977, ch. 2-3.
C. J. Clopper and E. S. Pearson, "The use of confidence or fiducial limits illustrated in the
case of the binomial", Biometrika 26(4):404-413, 1934.
D. Chicco and G. Jurman, "The advantages of the Matthews correlation coefficient (MCC) over F1
score and accuracy in binary classification evaluation", BMC Genomics 21:6, 2020 (the MCC as a
function of PPV, TPR, TNR and NPV).
N. G. Marchant and B. I. P. Rubinstein, "Needle in a haystack: label-efficient evaluation under
extreme class imbalance", KDD 2021, Table 1 and §5 (passive sampling as the baseline).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from ..intervals import binomial_interval
from ..measures import OPEN_MEASURES
from ..results import IntervalEstimate
from .curve import ThresholdCurves
from .interface import MeasureEstimates, PoolSampling
from .label_noise import PoolLabels
from .measures import check_measures, measure_range, measure_value, unknown_measure
from .state import PoolState

__all__ = ["PassiveDesign", "SampleCounts", "passive_estimates", "sample_counts"]

METHOD = "passive-srs"


@dataclass(frozen=True, eq=False)
class SampleCounts:
    """Runs' confusion counts on the verified items (a simple random sample of the pool).

    Attributes
    ----------
    tp, fp, fn, tn : numpy.ndarray
        Per run: verified items that are positive and predicted positive, negative and
        predicted positive, positive and predicted negative, negative and predicted negative.
    n_items : int
        Pool size ``N``.
    """

    tp: npt.NDArray[np.int64]
    fp: npt.NDArray[np.int64]
    fn: npt.NDArray[np.int64]
    tn: npt.NDArray[np.int64]
    n_items: int

    @property
    def size(self) -> int:
        """Verified items ``m`` (the same for every run)."""
        return int(self.tp[0] + self.fp[0] + self.fn[0] + self.tn[0]) if self.tp.size else 0

    def totals(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Expansion estimates ``(tp, fn, pp)`` of the runs' totals (``nan`` with no sample)."""
        scale = self.n_items / self.size if self.size else math.nan
        return scale * self.tp, scale * self.fn, scale * (self.tp + self.fp)


def sample_counts(
    labels: npt.ArrayLike, predictions: npt.ArrayLike, *, n_items: int
) -> SampleCounts:
    """:class:`SampleCounts` of verified ``labels`` (0/1, one per verified item) and the runs'
    ``predictions`` on them (one row per run, or one run as a 1-d array)."""
    y = np.asarray(labels, dtype=bool)
    f = np.atleast_2d(np.asarray(predictions, dtype=bool))
    if f.shape[1:] != y.shape:
        raise ValueError("one prediction per run and verified label")
    yf, y_notf = (f & y).sum(axis=1), (~f & y).sum(axis=1)
    pp = f.sum(axis=1)
    return SampleCounts(tp=yf, fp=pp - yf, fn=y_notf, tn=y.size - pp - y_notf, n_items=int(n_items))


def _rate_bounds(
    successes: Sequence[np.ndarray], trials: Sequence[np.ndarray], level: float
) -> tuple[np.ndarray, np.ndarray]:
    """Clopper-Pearson bounds of ``k`` proportions per run, jointly at ``level`` (Bonferroni):
    arrays of shape ``(k, runs)``."""
    joint = 1.0 - (1.0 - level) / len(successes)
    low, high = binomial_interval(
        np.asarray(successes, dtype=float), np.asarray(trials, dtype=float), level=joint
    )
    return np.asarray(low), np.asarray(high)


def _mcc_of_rates(rates: np.ndarray) -> np.ndarray:
    """MCC from the rows PPV, TPR, TNR, NPV (increasing in each)."""
    mcc: np.ndarray = np.sqrt(rates.prod(axis=0)) - np.sqrt((1.0 - rates).prod(axis=0))
    return mcc


def _intervals(name: str, s: SampleCounts, level: float) -> tuple[np.ndarray, np.ndarray, str]:
    """``(low, high, method)`` of measure ``name`` for every run, from the sample counts."""
    a, b, c, d = s.tp, s.fp, s.fn, s.tn
    if name == "fbeta":
        name = "f1"  # this design has no beta option: its F-beta is F1 (beta = 1)
    single = {
        "precision": (a, a + b),
        "recall": (a, a + c),
        "accuracy": (a + d, a + b + c + d),
        "f1": (a, a + b + c),
    }
    if name in single:
        x, n = single[name]
        low, high = (v[0] for v in _rate_bounds([x], [n], level))
        if name == "f1":
            low, high = 2 * low / (1 + low), 2 * high / (1 + high)
        return low, high, f"{METHOD}/clopper-pearson"
    if name == "balanced_accuracy":
        lo, hi = _rate_bounds([a, d], [a + c, b + d], level)
        return 0.5 * lo.sum(axis=0), 0.5 * hi.sum(axis=0), f"{METHOD}/bonferroni-clopper-pearson"
    if name == "mcc":
        lo, hi = _rate_bounds([a, a, d, d], [a + b, a + c, b + d, c + d], level)
        return _mcc_of_rates(lo), _mcc_of_rates(hi), f"{METHOD}/bonferroni-clopper-pearson"
    raise unknown_measure(name)


def passive_estimates(
    counts: SampleCounts, *, level: float, measures: Sequence[str]
) -> list[MeasureEstimates]:
    """Every measure of ``measures`` for every run from its sample counts (module docstring).

    Parameters
    ----------
    counts : SampleCounts
        The runs' confusion counts on a simple random sample of the pool.
    level : float, keyword-only
        Confidence level of the intervals.
    measures : sequence of str, keyword-only
        Names from :data:`evaluation.core.measures.CLOSED_POOL_MEASURES`.

    Returns
    -------
    list of Mapping[str, IntervalEstimate]
        Per run, read-only; a 0/0 value is ``nan`` with the interval the counts still give.
    """
    check_measures(measures)
    tp, fn, pp = counts.totals()
    m = counts.size
    census = m == counts.n_items
    out: list[dict[str, IntervalEstimate]] = [{} for _ in range(tp.size)]
    for name in measures:
        values = measure_value(name, tp, fn, pp=pp, n=counts.n_items)
        if census:
            lo_r, hi_r = measure_range(name)
            for run, v in enumerate(values.tolist()):
                low, high = (v, v) if math.isfinite(v) else (lo_r, hi_r)
                out[run][name] = IntervalEstimate(v, low, high, level, "census", m)
            continue
        lows, highs, method = _intervals(name, counts, level)
        for run, (v, low, high) in enumerate(zip(values.tolist(), lows, highs, strict=True)):
            out[run][name] = IntervalEstimate(v, float(low), float(high), level, method, m)
    return [MappingProxyType(row) for row in out]


class PassiveDesign(ThresholdCurves):
    """Uniform sampling without replacement of the pool; every label serves every run.

    At each call of :meth:`plan` it draws ``budget`` unverified items uniformly (all that are
    left when fewer remain); it ignores the runs, so the verified items stay one simple random
    sample of the pool whatever the arrivals. It takes the verified labels as they are (no
    annotator model, no further looks) and keeps no sampling record: every call reads the
    state's labels alone.
    """

    name = "passive"

    def __init__(
        self,
        *,
        confidence: float = 0.95,
        target_half_width: float = 0.05,
        targets: Sequence[str] = OPEN_MEASURES,
    ) -> None:
        # What every design is built with (interface.PoolDesign); a simple random sample
        # ignores the runs, so it ignores their targets too.
        self.confidence = confidence
        self.target_half_width = target_half_width
        self.targets = tuple(targets)

    def plan(
        self, state: PoolState, run: int, *, budget: int, rng: np.random.Generator
    ) -> npt.NDArray[np.int64]:
        """``min(budget, unverified)`` unverified items drawn uniformly without replacement."""
        if not 0 <= run < state.n_runs:
            raise IndexError(f"no run {run} in a state of {state.n_runs} runs")
        unverified = np.flatnonzero(~state.labelled)
        take = min(max(int(budget), 0), unverified.size)
        chosen: npt.NDArray[np.int64] = rng.choice(unverified, size=take, replace=False)
        return chosen.astype(np.int64, copy=False)

    def estimate(
        self, state: PoolState, *, level: float, measures: Sequence[str]
    ) -> list[MeasureEstimates]:
        """Per run, per measure, the estimate of :func:`passive_estimates`."""
        verified = state.labelled
        predictions = np.array([run.predictions[verified] for run in state.runs], dtype=bool)
        counts = sample_counts(
            state.labels[verified] == 1,
            predictions.reshape(state.n_runs, -1),
            n_items=state.n_items,
        )
        return passive_estimates(counts, level=level, measures=measures)

    def labels(self, state: PoolState) -> PoolLabels | None:  # noqa: ARG002 (the protocol's)
        """``None``: the verified labels are taken as they are."""
        return None

    def looks(self, state: PoolState) -> npt.NDArray[np.int64]:  # noqa: ARG002 (the protocol's)
        """None: the design asks no further judgment."""
        return np.empty(0, np.int64)

    def sampling(self, state: PoolState) -> PoolSampling:
        """The record of a simple random sample of ``m`` of the ``N`` items: no permanent numbers
        (zeros; the draws use the ``rng`` of :meth:`plan`), every item's inclusion probability
        ``m / N``."""
        share = state.n_labelled / state.n_items if state.n_items else 0.0
        return PoolSampling(np.zeros(state.n_items), np.full(state.n_items, share))

    def resume(self, state: PoolState, sampling: PoolSampling) -> None:
        """Nothing to resume (the design keeps no record); ``sampling`` must be of the pool."""
        n = state.n_items
        if np.shape(sampling.permanent) != (n,) or np.shape(sampling.inclusion) != (n,):
            raise ValueError(f"a sampling record of the pool's {n} items is needed")

    def threshold_estimates(
        self, state: PoolState, run: int, thresholds: npt.NDArray[np.float64], *, level: float
    ) -> list[tuple[IntervalEstimate, IntervalEstimate]]:
        """Each threshold's predictions ``scores >= t`` estimated as a run is
        (:func:`passive_estimates` of their counts on the sample), for :meth:`curve`."""
        verified = state.labelled
        scores = state.runs[run].scores[verified]
        counts = sample_counts(
            state.labels[verified] == 1,
            (scores[np.newaxis, :] >= thresholds[:, np.newaxis]).reshape(thresholds.size, -1),
            n_items=state.n_items,
        )
        rows = passive_estimates(counts, level=level, measures=("precision", "recall"))
        return [(row["precision"], row["recall"]) for row in rows]
