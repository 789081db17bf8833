"""Paired differences of runs: the joint normal of every run's precision, recall and F1.

Two runs of one task are estimated from one sample: the items they share are verified once and
weigh in both estimates, and their recall rests on one reference sample. The difference of two
runs' measures therefore has far less variance than the sum of their two variances when they
share most of their items. This module gives, per measure, the joint covariance of the ``K``
runs' estimates, from which the estimate and interval of every difference follow
(:meth:`PairedDifferences.difference`) and the simultaneous rank intervals of
:func:`.ranking.paired_rank_intervals`.

Method
------
Each run's *marginal* standard error ``s_a`` is the one its own interval implies,
``(high - low) / (2 z)`` at the interval's level: every term the marginal estimator carries
(the design variance under the adaptive, sequential sampling, the floors of pure strata, the
borrowed rate of an unsampled stratum, the labels' and the annotators' uncertainty) is kept.
What the marginals do not say is how two runs' errors move together; that is the correlation
``r_ab`` of two linear (Horvitz-Thompson type) statistics over the same sample:

* **precision**: run ``a``'s estimate is, to first order, ``sum_x 1[x in a] y_x / (|a| pi_x)``
  over the verified sample of the union. Over the same Poisson sample the covariance of two
  such statistics is ``sum_x 1[x in a] 1[x in b] e_x / (|a| |b|)`` with
  ``e_x = (1 - pi_x) / pi_x * q_x (1 - q_x) + v_x``: ``q_x`` the Jeffreys-smoothed rate of the
  item's union cell (the design's prior class, a fixed property of the item), ``v_x`` the
  posterior variance of its label (0 for exact labels). Only the items two runs share move both
  estimates, so runs that share only pure (all-correct) cells are nearly uncorrelated, and runs
  that differ only on a few uncertain items are nearly perfectly correlated.
* **recall**: the part both runs' recall rest on is the reference sample; with group (document)
  totals ``t_ag = sum_{j in g} (1[j in a] - p_a)`` the covariance is ``sum_g t_ag t_bg``, the
  cluster-robust covariance of the two shares (``p_a`` the run's share of the sample).
* **F1**: the delta method on the joint influence, ``dF/dP`` times the precision direction plus
  ``dF/dR`` times the recall direction, each scaled to the run's marginal standard error.

The covariance of the estimates is then ``S = D R D`` with ``D = diag(s)`` and ``R`` the
correlation of these directions (a Gram matrix, so ``S`` is positive semi-definite), and the
difference ``a - b`` has variance ``s_a^2 + s_b^2 - 2 r_ab s_a s_b``; its interval is normal.
Runs with identical item sets have identical true measures: their difference is exactly 0.

What it rests on
----------------
The marginal estimators' validity (docs/STATISTICS.md), and the correlation being estimated
from directions that are not more alike than the estimators' errors are. The directions use the
union's cells, not each run's post-strata, so two runs that stratify the same items differently
are taken as more alike than they are; this is checked by simulation
(``tests/evaluation/core/test_core_paired.py``, docs/STATISTICS.md "Rank intervals from paired
differences"), not proven.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy import sparse

from .intervals import normal_quantile
from .labels import ItemLabels
from .measures import OPEN_MEASURES
from .results import IntervalEstimate, RunEstimate
from .sorted_sets import contains
from .state import TaskState

__all__ = ["PairedDifferences", "joint_covariance", "paired_differences"]

METHOD = "paired-normal"
# Inclusion probabilities below this count as this in the correlation's weights (an item a run
# predicts has pi > 0 once the run is planned; a run not planned yet has items at 0).
_MIN_INCLUSION = 1e-3


class _Record(Protocol):
    inclusion: np.ndarray
    cell: np.ndarray


class _Design(Protocol):
    def record(self, state: TaskState) -> _Record: ...

    def labels(self, state: TaskState) -> ItemLabels: ...

    def estimate(
        self, state: TaskState, runs: Sequence[int] | None = None, *, level: float | None = None
    ) -> list[RunEstimate]: ...


@dataclass(frozen=True)
class PairedDifferences:
    """The joint normal of ``K`` runs' estimates of one measure.

    Attributes
    ----------
    runs : tuple
        Run identifiers, in order.
    measure : str
        ``"precision"``, ``"recall"`` or ``"f1"``.
    values : numpy.ndarray
        Point estimate per run (``nan``: undefined, the run takes part in no difference).
    covariance : numpy.ndarray
        ``K x K`` covariance of the estimates (positive semi-definite).
    identical : numpy.ndarray of bool
        ``K x K``: the two runs predict the same items, so every difference is exactly 0.
    method : str
        ``"paired-normal"``.
    """

    runs: tuple[object, ...]
    measure: str
    values: np.ndarray
    covariance: np.ndarray
    identical: np.ndarray
    method: str = METHOD

    @property
    def differences(self) -> np.ndarray:
        """``K x K``: ``values[a] - values[b]`` (exactly 0 for identical runs)."""
        d = self.values[:, None] - self.values[None, :]
        return np.where(self.identical, 0.0, d)

    @property
    def standard_errors(self) -> np.ndarray:
        """``K x K``: standard error of each difference (0 for identical runs)."""
        var = np.diag(self.covariance)
        v = var[:, None] + var[None, :] - 2.0 * self.covariance
        return np.where(self.identical, 0.0, np.sqrt(np.maximum(v, 0.0)))

    def difference(self, a: object, b: object, *, level: float) -> IntervalEstimate:
        """Estimate and normal interval at ``level`` of ``measure(a) - measure(b)``."""
        i, j = self.runs.index(a), self.runs.index(b)
        value = float(self.differences[i, j])
        se = float(self.standard_errors[i, j])
        if not math.isfinite(value):
            return IntervalEstimate(math.nan, -1.0, 1.0, level, "bounds-only", 0)
        half = normal_quantile(level) * se
        low, high = max(value - half, -1.0), min(value + half, 1.0)
        return IntervalEstimate(value, low, high, level, self.method, 0)


def joint_covariance(standard_errors: np.ndarray, directions: np.ndarray) -> np.ndarray:
    """``D R D``: the marginal standard errors with the correlation of the runs' directions.

    Parameters
    ----------
    standard_errors : numpy.ndarray
        Per run (``K``), finite and ``>= 0``.
    directions : numpy.ndarray
        ``K x K`` Gram matrix of the runs' influence directions (positive semi-definite).

    Returns
    -------
    numpy.ndarray
        ``K x K`` covariance; a run with a zero direction is uncorrelated with the others.
    """
    norm = np.sqrt(np.maximum(np.diag(directions), 0.0))
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = directions / np.outer(norm, norm)
    corr = np.where(np.outer(norm, norm) > 0, np.clip(corr, -1.0, 1.0), 0.0)
    np.fill_diagonal(corr, 1.0)
    return corr * np.outer(standard_errors, standard_errors)


def paired_differences(
    design: _Design,
    state: TaskState,
    runs: Sequence[int] | None = None,
    *,
    estimates: Sequence[RunEstimate] | None = None,
) -> dict[str, PairedDifferences]:
    """The joint normal of ``runs``' precision, recall and F1 under ``design``.

    Parameters
    ----------
    design
        The design that sampled ``state`` (``default``: it offers ``record``, ``labels`` and
        ``estimate``).
    state : TaskState
    runs : sequence of int, optional
        Run indices (default: every run).
    estimates : sequence of RunEstimate, optional
        ``design.estimate(state, runs)`` when already computed (any level).

    Returns
    -------
    dict
        Measure name to :class:`PairedDifferences`.

    References
    ----------
    Horvitz, D. G. and Thompson, D. J. (1952). A generalization of sampling without replacement
    from a finite universe. JASA 47, 663-685.
    Sarndal, C.-E., Swensson, B. and Wretman, J. (1992). Model Assisted Survey Sampling,
    chapters 5 (the covariance of two estimators from one sample) and 11 (domains).
    """
    runs = list(range(state.n_runs)) if runs is None else [int(r) for r in runs]
    if estimates is None:
        estimates = design.estimate(state, runs)
    if len(estimates) != len(runs):
        raise ValueError("one estimate per run is needed")
    items = [state.runs[r].items for r in runs]
    rec = design.record(state)
    labels = design.labels(state)
    members = _membership(items, state.n_items)
    p_dir = _precision_directions(members, rec.inclusion, rec.cell, labels)
    r_dir = _recall_directions(items, state)
    identical = _identical(items)
    out: dict[str, PairedDifferences] = {}
    se: dict[str, np.ndarray] = {}
    values: dict[str, np.ndarray] = {}
    for m in OPEN_MEASURES:
        values[m], se[m] = _marginals([e.metric(m) for e in estimates])
    f_dir = _f1_directions(p_dir, r_dir, values, se)
    for m, gram in (("precision", p_dir), ("recall", r_dir), ("f1", f_dir)):
        cov = joint_covariance(np.nan_to_num(se[m], nan=0.0), gram)
        out[m] = PairedDifferences(tuple(runs), m, values[m], cov, identical)
    return out


def _marginals(picked: Sequence[IntervalEstimate]) -> tuple[np.ndarray, np.ndarray]:
    """Values and the normal-equivalent standard errors of the marginal intervals."""
    values = np.array([e.value for e in picked], dtype=float)
    se = np.array(
        [(e.high - e.low) / (2.0 * normal_quantile(e.level)) for e in picked], dtype=float
    )
    return values, se


def _membership(items: Sequence[np.ndarray], n_items: int) -> sparse.csr_matrix:
    """``K x n_items`` sparse 0/1 matrix: which items each run predicts."""
    indptr = np.concatenate([[0], np.cumsum([a.size for a in items])])
    indices = np.concatenate(items) if items else np.empty(0, np.int64)
    data = np.ones(indices.size)
    return sparse.csr_matrix((data, indices, indptr), shape=(len(items), n_items))


def _precision_directions(
    members: sparse.csr_matrix, inclusion: np.ndarray, cell: np.ndarray, labels: ItemLabels
) -> np.ndarray:
    """Gram matrix of the runs' precision influence over the items (module docstring)."""
    pi = np.clip(inclusion, _MIN_INCLUSION, 1.0)
    rate = _cell_rates(cell, labels)
    label_var = np.where(labels.verified, labels.variance, 0.0)
    e = (1.0 - pi) / pi * rate * (1.0 - rate) + label_var
    sizes = np.asarray(members.sum(axis=1)).ravel()
    scaled = sparse.diags(1.0 / np.maximum(sizes, 1.0)) @ members
    gram = scaled @ sparse.diags(e) @ scaled.T
    return np.asarray(gram.todense())


def _cell_rates(cell: np.ndarray, labels: ItemLabels) -> np.ndarray:
    """Per item: the Jeffreys-smoothed share correct among the verified items of its cell."""
    n_cells = int(cell.max(initial=-1)) + 2  # slot 0 for items outside every cell
    slot = cell + 1
    verified = labels.verified
    correct = np.bincount(slot[verified], weights=labels.value[verified], minlength=n_cells)
    count = np.bincount(slot[verified], minlength=n_cells)
    rates: np.ndarray = ((correct + 0.5) / (count + 1.0))[slot]
    return rates


def _recall_directions(items: Sequence[np.ndarray], state: TaskState) -> np.ndarray:
    """Gram matrix of the runs' centred shares of the reference sample, by group totals."""
    ref = state.reference
    k = len(items)
    if ref.size == 0:
        return np.zeros((k, k))
    _, group = np.unique(ref.groups, return_inverse=True)
    n_groups = int(group.max()) + 1
    totals = np.zeros((k, n_groups))
    for a, run_items in enumerate(items):
        inside = contains(run_items, ref.items).astype(float)
        totals[a] = np.bincount(group, weights=inside - inside.mean(), minlength=n_groups)
    return np.asarray(totals @ totals.T / (ref.size * ref.size))


def _f1_directions(
    p_dir: np.ndarray,
    r_dir: np.ndarray,
    values: dict[str, np.ndarray],
    se: dict[str, np.ndarray],
) -> np.ndarray:
    """Gram matrix of F1's joint influence: ``dF/dP`` and ``dF/dR`` times the precision and
    recall directions, each scaled to its marginal standard error (the two directions live on
    different coordinates, the sampled items and the reference sample)."""
    p, r = values["precision"], values["recall"]
    total = p + r
    with np.errstate(invalid="ignore", divide="ignore"):
        dp = np.where(total > 0, 2.0 * r * r / (total * total), 0.0)
        dr = np.where(total > 0, 2.0 * p * p / (total * total), 0.0)
    wp = np.nan_to_num(dp * se["precision"] / _norms(p_dir))
    wr = np.nan_to_num(dr * se["recall"] / _norms(r_dir))
    gram: np.ndarray = np.outer(wp, wp) * p_dir + np.outer(wr, wr) * r_dir
    return gram


def _norms(gram: np.ndarray) -> np.ndarray:
    norm = np.sqrt(np.maximum(np.diag(gram), 0.0))
    return np.where(norm > 0, norm, np.inf)


def _identical(items: Sequence[np.ndarray]) -> np.ndarray:
    """``K x K``: the runs predict the same item sets."""
    k = len(items)
    same = np.eye(k, dtype=bool)
    keys = [(a.size, hash(a.tobytes())) for a in items]
    for i in range(k):
        for j in range(i + 1, k):
            if keys[i] == keys[j] and np.array_equal(items[i], items[j]):
                same[i, j] = same[j, i] = True
    return same
