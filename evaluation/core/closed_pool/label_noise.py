"""Closed-pool estimates with fallible annotators: labels corrected for annotator error.

With a perfect oracle a verified item is positive or not. With fallible annotators it has
answers, and the annotator model (:mod:`..annotators`, fitted with one prior class for the
whole pool) gives the log-likelihood ratio ``lambda_x`` of them. An estimate of a run then works
on *domains*, as open tasks' do (:mod:`..labels`): each cell's items the run predicts
positive, and those it predicts negative. In each domain an item's label is its posterior with
the domain's own rate as the prior, ``z_x = expit(logit r_d + lambda_x)``, ``r_d`` the
maximum-likelihood rate given the error rates, so that ``sum_d w z`` estimates the domain's
positives consistently: the rate corrected for misclassification (Rogan and Gladen 1978).

Why it matters on a closed pool: positives are rare, and most of the pool's labels are drawn
from cells that hold almost none. Taken at their word, 95%-accurate answers there call 5% of
those items positive, and every one of them weighs ``1 / pi``: measured on abt-buy with five
such annotators at 1,000 labels, recall was biased by -0.60 and no interval covered it. With
``z`` such a "yes" counts for the small share of a positive that it is.

Looks. Correcting the labels is not enough on its own where a "yes" is rare: in a cell with no
positive, a few doubtful answers give the cell a rate above 0 (a maximum-likelihood rate is
bounded there), and every item of the cell then carries a phantom share of a positive, at weight
``1 / pi`` (measured: recall biased by -0.5 on abt-buy at 1,000 labels). So an item whose answers
are not a clear "no", at least one "yes" and no more "no" than "yes", gets one more judgment, from
another annotator, until they are or it has :data:`MOST_JUDGMENTS` (:func:`looks_due`). The rule
looks at the answers only, never at the item's cell or run, so every domain's items are judged
by the same rule and ``z`` stays consistent (:mod:`..labels`, "looks must follow one rule"). With
both, 0.95-accurate annotators cost a quarter to a half more judgments than items, and the
intervals cover again; the error stays well above a perfect oracle's (docs/STATISTICS.md).

The prior of a domain's rate. Each domain's rate has a weak prior (:mod:`..labels`); in an
unvoted cell its centre is lowered to the cell's rank prior (:mod:`.cells`, the prior its rate
has with exact labels) where that is smaller than what the answers say under the model's one
class prior, which the voted items set near one half. Only lowered: in the unvoted group's top
cells the rank prior is the larger, and centring there on it put phantoms in those cells
instead (dblp-acm, five 0.9-accurate annotators, 1,000 labels, 50 campaigns: recall bias
-0.107 -> -0.149; with the minimum -0.105).
With the class prior a negative whose false "yes" survived its looks (3 "yes", 2 "no") kept a
share of 0.06 to 1 of a positive, and its cell of thousands of unverified items as many times
that (dblp-acm at 250 labels: 12 to 93 phantom positives in 5 campaigns of 100, recall biased
by -0.02 to -0.04); with the rank prior it keeps about 0.001, while five "yes" still make a
positive.

What the labels add to a domain's positives: the verified items' own doubt, ``sum z (1 - z)``
divided by ``1 - gamma`` (``gamma`` the share of the domain's information the labels'
uncertainty takes: a domain's rate is the prior of every ``z`` in it, and this is a census
domain's sandwich variance, :mod:`..labels`); the unverified items' rates' variance divided by
``(1 - gamma)^2``; and the annotator parameters' uncertainty, ``g' Sigma g``, shared by every
run (the verified positives and each cell's rate moving with the error rates).

References
----------
A. P. Dawid and A. M. Skene, "Maximum likelihood estimation of observer error-rates using the
EM algorithm", Applied Statistics 28(1):20-28, 1979.
W. J. Rogan and B. Gladen, "Estimating prevalence from the results of a screening test",
American Journal of Epidemiology 107(1):71-76, 1978.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..labels import DomainLabels, ItemLabels, item_labels
from ..state import TaskState
from .cells import RankCells

__all__ = [
    "LOOK_ANNOTATORS",
    "MOST_JUDGMENTS",
    "PoolLabels",
    "RunLabelValues",
    "looks_due",
    "pool_labels",
]

# An item is judged at most this often (its first judgment and its looks).
MOST_JUDGMENTS = 5
# The annotators a closed pool's looks need: with fewer, a "yes" cannot be checked by enough
# others, false "yes" answers on the pool's many negatives stay in and recall is biased down.
# Measured at 1,000 labels with 0.95-accurate annotators and 5% gold (100 campaigns, seed 2026;
# docs/BENCHMARKS.md), recall coverage abt-buy / dblp-acm: one annotator 0.33 / 0.17, two
# 0.80 / 0.77, three 0.97 / 0.92, four 0.98 / 0.95, five 1.00 / 0.99.
LOOK_ANNOTATORS = 4


@dataclass(frozen=True, eq=False)
class RunLabelValues:
    """The verified items' labels as one run's estimate sees them.

    ``value`` per pool item (0 where unverified); the extra variance of the positives of a set
    of items (:meth:`extra_variance`) and, per side of the run (1: its predicted positives, 0:
    its negatives), the factor on each cell's rate variance (:meth:`inflation`).
    """

    value: npt.NDArray[np.float64]
    _domains: DomainLabels | None
    _items: npt.NDArray[np.int64]
    _domain_of: npt.NDArray[np.int64]  # per verified item: 2 * cell + predicted
    _weights: npt.NDArray[np.float64]
    _n_cells: int
    # The typical annotator's (sensitivity, specificity): where a run's precision is seen
    # (:func:`..intervals.misclassified_interval`).
    answer_shape: tuple[float, float] = (1.0, 1.0)

    def inflation(self, side: int) -> npt.NDArray[np.float64]:
        """Per cell, ``1 / (1 - gamma)^2`` of the run's domain there on ``side``."""
        if self._domains is None:
            return np.ones(self._n_cells)
        missing = self._domains.missing.reshape(self._n_cells, 2)[:, side]
        factor: npt.NDArray[np.float64] = 1.0 / (1.0 - missing) ** 2
        return factor

    def extra_variance(
        self, members: npt.NDArray[np.bool_], unverified: npt.NDArray[np.float64]
    ) -> float:
        """The labels' share of the variance of the positives among ``members`` (a mask over
        the pool: the run's predicted positives or negatives, or a curve threshold's), beyond
        the rates' own: the verified members' doubt plus the annotator parameters' (``unverified``:
        per cell, the unverified members, whose rate moves with the parameters)."""
        dl = self._domains
        if dl is None:
            return 0.0
        inside = members[self._items]
        # Each verified item's doubt as a domain's census part carries it (the sandwich of
        # :mod:`..labels`: sum v / (1 - gamma)): the domain's rate, every z's prior, is unsure too.
        lost = 1.0 - dl.missing[self._domain_of[inside]]
        doubt = float((dl.variance[inside] / lost).sum())
        cell = self._domain_of // 2
        weight_sum = np.bincount(
            cell[inside], weights=self._weights[inside], minlength=self._n_cells
        )
        with np.errstate(invalid="ignore", divide="ignore"):
            per_weight = np.where(weight_sum > 0, unverified / weight_sum, 0.0)
        coefficients = np.where(inside, 1.0 + per_weight[cell] * self._weights, 0.0)
        return doubt + dl.parameter_variance(coefficients)


class PoolLabels:
    """The annotator model fitted to a pool's answers (one prior class: see ``__init__``);
    :meth:`for_run` gives a run's labels, :meth:`cell_values` the labels the cells' rates use.

    Parameters
    ----------
    answers : TaskState
        Every judgment and gold answer on the pool's items.
    verified : numpy.ndarray of bool
        Per item: verified for the design (drawn and answered).
    cells : RankCells
    weight : numpy.ndarray
        Per item, ``1 / pi`` where verified, else 0.
    inclusion : numpy.ndarray
        Per item, its inclusion probability.
    """

    def __init__(
        self,
        answers: TaskState,
        verified: npt.NDArray[np.bool_],
        cells: RankCells,
        weight: npt.NDArray[np.float64],
        inclusion: npt.NDArray[np.float64],
    ) -> None:
        # One prior class for the whole pool: with the cells as classes, each free to take any
        # rate, EM found a second mode in some campaigns (sensitivities near 0.3, cells a third
        # positive: dblp-acm at 2,000 labels, a campaign's recall estimated at 0.05).
        self.view: ItemLabels = item_labels(
            answers, item_class=np.full(verified.size, -1, np.int64)
        )
        self.items = np.flatnonzero(verified & self.view.verified)
        self.cells = cells
        self.weight = weight
        self.inclusion = np.minimum(np.asarray(inclusion, dtype=float), 1.0)
        self.n_items = verified.size

    def for_run(self, predictions: npt.NDArray[np.bool_]) -> RunLabelValues:
        """Labels with each (cell, predicted or not) domain of the run's own rate as the prior."""
        items = self.items
        domain = self.cells.of_item[items].astype(np.int64) * 2 + predictions[items]
        return self._values(domain, 2 * self.cells.n_cells)

    def cell_values(self) -> npt.NDArray[np.float64]:
        """Per item, its label with its cell's rate as the prior (0 where unverified)."""
        items = self.items
        return self._values(self.cells.of_item[items].astype(np.int64), self.cells.n_cells).value

    def _values(self, domain: npt.NDArray[np.int64], n_domains: int) -> RunLabelValues:
        items = self.items
        value = np.zeros(self.n_items)
        weights = self.weight[items]
        shape = self.view.typical_annotator()
        if items.size == 0:
            return RunLabelValues(value, None, items, domain, weights, self.cells.n_cells, shape)
        # An unvoted cell's rate: its weak prior's centre at most the cell's rank prior (module
        # notes).
        per_cell = n_domains // self.cells.n_cells
        cell = np.arange(n_domains) // per_cell
        centre = np.where(self.cells.voted[cell], np.nan, self.cells.prior_mean[cell])
        dl = self.view.in_domains(
            items, weights, domain, n_domains, inclusion=self.inclusion[items], prior_centre=centre
        )
        value[items] = dl.value
        return RunLabelValues(value, dl, items, domain, weights, self.cells.n_cells, shape)


def pool_labels(
    answers: TaskState | None,
    verified: npt.NDArray[np.bool_],
    cells: RankCells,
    weight: npt.NDArray[np.float64],
    inclusion: npt.NDArray[np.float64],
) -> PoolLabels | None:
    """:class:`PoolLabels` when ``answers`` hold judgments, ``None`` (exact labels) otherwise."""
    if answers is None or answers.judgments.size == 0:
        return None
    return PoolLabels(answers, verified, cells, weight, inclusion)


def looks_due(answers: TaskState | None, verified: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
    """The ``verified`` items owed one more judgment: at least one "yes", no more "no" than
    "yes", fewer judgments (gold answers included) than :data:`MOST_JUDGMENTS` and than the
    annotators who have answered anything in the task (a look nobody else could give is not
    asked; as annotators join, items get more looks). A drawn gold item
    too, whose label is known: the rule reads answers only, and the answers of a gold item that
    is positive measure the annotators' sensitivity, which a pool of rare positives otherwise
    hardly shows (measured on abt-buy at 1,000 labels: without them recall was biased by -0.04,
    with them +0.007, for 15% more judgments). Sorted item ids; empty without ``answers``."""
    if answers is None or answers.judgments.size == 0:
        return np.empty(0, np.int64)
    judged = answers.judgments
    n = verified.size
    count = np.bincount(judged.items, minlength=n)
    yes = np.bincount(judged.items, weights=judged.says_correct, minlength=n)
    most = min(MOST_JUDGMENTS, int(np.unique(judged.annotators).size))
    due = verified & (yes > 0) & (2 * yes >= count) & (count < most)
    return np.flatnonzero(due).astype(np.int64)
