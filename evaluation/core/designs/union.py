"""The verified sample of the union, post-stratified by cell: recall in the ``default`` design.

``nu`` of a run is the share of the union's correct items inside it (recall is ``theta * nu``,
STATISTICS.md §1). Within a cell (the run that first brought an item to the union, and its score
stratum there) every item was first reached by one run's level, so Hajek ratios within cells do not
depend on how high the (answer-driven) levels were set; totals across cells use the known cell
sizes. Plain Horvitz-Thompson totals across cells let those levels leak into the weights
(measured: recall biased by +0.02 on febrl4).

Only cells with a sampled item have a Hajek rate. The others are mostly a late run's few novel
items in a stratum the planner barely samples (its other items were verified for earlier runs);
no verified item speaks for them, and they are not like the stratum's shared items (measured on
febrl4: 26% correct against the 64% their run's stratum would lend them, which put 1.9% too many
correct items in the union and biased recall by -0.004 with a perfect oracle). So the union that
``nu`` is a share of is the *sampled part* (:func:`sampled_part`): cells with a sampled item. The
reference sample, which is what says how many true items lie outside any set, covers the rest,
as it covers the true items no run predicted (:meth:`.CoordinatedPoissonDesign.estimate`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..labels import DomainLabels, ItemLabels
from .precision import PrecisionParts
from .record import SamplingRecord

__all__ = ["UnionCells", "sampled_part"]


def sampled_part(
    rec: SamplingRecord, union: np.ndarray, known_items: np.ndarray, *, min_items: int = 1
) -> np.ndarray:
    """The items of ``union`` whose cell holds at least ``min_items`` verified sampled items.

    With exact labels one item gives a cell its Hajek rate. With fallible annotators a cell's
    rate is corrected for misclassification, which a few items cannot do: the correction is
    bounded at 0, and a handful of heavily weighted items then puts many false correct items in
    the union (measured with lenient annotators: +1.8% on the union's correct items, from cells
    of fewer than five items); such cells are left to the reference sample.
    """
    counts = np.bincount(
        rec.cell[known_items[union[known_items]]] + 1, minlength=max(rec.n_cells, 1) + 1
    )[1:]
    sampled = counts >= min_items
    part: np.ndarray = union & (rec.cell >= 0) & sampled[np.maximum(rec.cell, 0)]
    return part


@dataclass(frozen=True)
class UnionCells:
    """Per cell: size, sampled weight and rate; the sampled items that may be correct.

    With fallible annotators the union's correct items are estimated band by band (the cells of
    one band, :mod:`.second_looks`, form one domain with weights ``N_c / W_c * 1 / pi``): cell
    by cell, the many cells that are nearly all wrong would each be biased upwards by the bound
    at 0, and their sizes multiply the bias (measured: 5% too many correct items in febrl4's
    union). A run's own items take the values its precision gave them (its pieces as domains).
    """

    size: np.ndarray  # union items per cell
    weight: np.ndarray  # sum of 1/pi over the cell's sampled items
    rate: np.ndarray  # Hajek share correct per cell (0 where the cell is empty)
    w2_incorrect: np.ndarray  # sum of w^2 (1 - pi) over the cell's sampled items known incorrect
    cell: np.ndarray  # cell of every item (-1 outside the union)
    t_items: np.ndarray  # sampled items that may be correct (value > 0, sorted) ...
    t_cell: np.ndarray  # ... their cells, weights 1/pi, 1 - pi and label values
    t_w: np.ndarray
    t_fpc: np.ndarray
    t_value: np.ndarray
    total: float  # estimated correct items in the union
    domain: DomainLabels | None = None  # the union's labels (fallible annotators), aligned with t
    t_index: np.ndarray | None = None  # position of each t item among the domain's items

    @property
    def n_true(self) -> int:
        return int(self.t_items.size)

    @classmethod
    def build(
        cls, rec: SamplingRecord, union: np.ndarray, known_items: np.ndarray, labels: ItemLabels
    ) -> UnionCells:
        """Cells of ``union``, which must be a :func:`sampled_part` (every cell sampled)."""
        n_cells = max(rec.n_cells, 1)
        cell = np.where(union, rec.cell, -1)
        size = np.bincount(cell[union], minlength=n_cells).astype(float)
        idx = known_items[union[known_items]]
        pi = rec.inclusion[idx]
        w = 1.0 / pi
        c = cell[idx]
        weight = np.bincount(c, weights=w, minlength=n_cells)
        domain = None
        if labels.noisy and idx.size:
            with np.errstate(invalid="ignore", divide="ignore"):
                scale = np.where(weight > 0, size / np.where(weight > 0, weight, 1.0), 0.0)
            domain = labels.in_domains(
                idx, scale[c] * w, rec.item_band(idx) + 1, 4, inclusion=np.minimum(pi, 1.0)
            )
            f = domain.value
        else:
            f = labels.value[idx]
        correct = np.bincount(c, weights=w * f, minlength=n_cells)
        w2_incorrect = np.bincount(c, weights=w * w * (1 - pi) * (f == 0), minlength=n_cells)
        if np.any((size > 0) & (weight <= 0)):
            raise ValueError("union cells without a sampled item: pass sampled_part(...)")
        sampled = weight > 0
        rate = np.where(sampled, correct / np.where(sampled, weight, 1.0), 0.0)
        total = float(size @ rate)
        t = f != 0
        return cls(
            size,
            weight,
            rate,
            w2_incorrect,
            cell,
            idx[t],
            c[t],
            w[t],
            1.0 - pi[t],
            f[t],
            total,
            domain,
            np.flatnonzero(t),
        )

    @cached_property
    def _basis(self) -> _NuBasis:
        """What :meth:`nu` needs whatever the run, computed at its first call for every run."""
        return _NuBasis.of(self)

    def holds(self, rec: SamplingRecord, run: int, items: np.ndarray) -> bool:
        """Whether every item of ``run`` (``items``) lies in the union: the run is covered and
        each of its cells is sampled (a run's items are in the task's union and have a cell from
        the moment it is added), without a gather over its predictions."""
        cells = rec.run_cells[run][0]
        return rec.is_covered(run, items) and bool((self.size[cells] > 0).all())

    def nu(self, parts: PrecisionParts) -> tuple[float, float, float] | None:
        """``(value, variance, effective trials)`` of ``nu`` for a run, or ``None``.

        ``parts`` is the run's precision (:class:`.precision.PrecisionParts`): its items are the
        run's verified sampled items, so a verified item of the union is the run's exactly when it
        is one of them (looked up there, not in the run's million predictions), and its label
        values are what the run's own items take. The variance includes the labels' and the
        annotator parameters' terms with fallible annotators.
        """
        if self.total <= 0 or self.t_items.size == 0:
            return None
        basis = self._basis
        at = basis.position[parts.items]
        inside = at >= 0
        g = np.zeros(self.t_items.size)
        g[at[inside]] = 1.0
        own = self.t_value * g
        if self.domain is not None:
            own = np.zeros(self.t_items.size)
            own[at[inside]] = parts.values[inside]
        n_cells = self.size.size
        sampled = self.weight > 0
        safe_weight = np.where(sampled, self.weight, 1.0)
        share = np.bincount(self.t_cell, weights=self.t_w * own, minlength=n_cells) / safe_weight
        value = min(max(float(self.size @ share) / self.total, 0.0), 1.0)
        # Linearisation: a sampled item x of cell c has influence N_c / (W_c T) (e(x) - e_c)
        # with e = f (g - nu) and e_c its cell mean; items known incorrect have e = 0.
        e_mean = np.where(sampled, share - value * self.rate, 0.0)
        resid = (own - value * self.t_value) - e_mean[self.t_cell]
        var = float(np.sum(basis.w2_fpc * (basis.omega * resid) ** 2))
        var += float(np.sum(self.w2_incorrect * (basis.scale * e_mean) ** 2))
        trials = basis.trials
        if self.domain is not None:
            var, trials = self._with_label_noise(var, trials, g, value)
        return value, var, trials

    def _with_label_noise(
        self, var: float, trials: float, g: np.ndarray, value: float
    ) -> tuple[float, float]:
        """Add the label terms: the union's missing information inflates the design variance
        (the union total is the uncertain part), the judgment noise of each item enters with its
        weight, and the annotator parameters move the run's count and the union's together."""
        domain, t_index, basis = self.domain, self.t_index, self._basis
        noise_basis = basis.noise
        # only called with the union's labels
        assert domain is not None and t_index is not None and noise_basis is not None
        fpc_complement, gamma_complement, t_variance, shrink = noise_basis
        coefficients = basis.omega_w * (g - value)
        noise = float(np.sum(coefficients**2 * fpc_complement * gamma_complement * t_variance))
        design = var
        var = (design + noise) / shrink
        full = np.zeros(domain.value.size)
        full[t_index] = -value * basis.omega * self.t_w
        # The run's own count hardly moves with the error rates next to the union's correct items
        # (mostly wrong items, whose share the specificity decides), so the union's term is kept.
        var += domain.parameter_variance(full)
        return var, trials * design / var if var > 0 else trials


@dataclass(frozen=True)
class _NuBasis:
    """What ``nu`` needs of the union whatever the run (:meth:`UnionCells.nu`), computed once.

    ``position``: every item's position among the t items (-1: not one of them), a lookup
    cheaper than a binary search of either list in the other; ``scale``: ``N_c / (W_c T)`` per
    cell (0 where empty), ``omega`` the same per t item, ``omega_w`` times its weight and
    ``w2_fpc`` its ``w^2 (1 - pi)``; ``trials`` the effective trials of ``nu``; ``noise``, with
    fallible annotators, per t item ``1 - (1 - pi)``, ``1 - gamma`` of its band and its
    ``z (1 - z)``, and ``(1 - mean gamma)^2``. Each is the expression :meth:`UnionCells.nu`
    evaluated per run, so a run's ``nu`` is the same, bit for bit.
    """

    position: np.ndarray
    scale: np.ndarray
    omega: np.ndarray
    omega_w: np.ndarray
    w2_fpc: np.ndarray
    trials: float
    noise: tuple[np.ndarray, np.ndarray, np.ndarray, float] | None

    @classmethod
    def of(cls, cells: UnionCells) -> _NuBasis:
        position = np.full(cells.cell.size, -1, np.int64)
        position[cells.t_items] = np.arange(cells.t_items.size)
        sampled = cells.weight > 0
        scale = np.where(sampled, cells.size / np.where(sampled, cells.weight, 1.0), 0.0)
        scale = scale / cells.total
        omega = scale[cells.t_cell]
        ow = omega * cells.t_w * cells.t_value
        denom = float(np.sum(ow**2 * cells.t_fpc))
        trials = float(ow.sum()) ** 2 / denom if denom > 0 else math.inf
        noise = None
        domain, t_index = cells.domain, cells.t_index
        if domain is not None and t_index is not None:
            gamma = domain.missing[domain._domains[t_index]]
            noise = (
                1.0 - cells.t_fpc,
                1.0 - gamma,
                domain.variance[t_index],
                (1.0 - float(np.average(gamma, weights=cells.t_w))) ** 2,
            )
        return cls(
            position, scale, omega, omega * cells.t_w, cells.t_w**2 * cells.t_fpc, trials, noise
        )
