"""The ``default`` design's record of one task: strata, inclusion probabilities, requests, cells.

Everything here is a function of the runs and of the rounds planned so far (never of the answers),
so a service can rebuild it from stored rounds (:meth:`CoordinatedPoissonDesign.replay`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..labels import ItemLabels

__all__ = ["AGREEMENT_LEVELS", "SamplingRecord", "agreement_level", "score_strata"]

# Post-strata split each score stratum by how many runs predict an item: 1, 2-3, 4-7, 8-15, 16+.
AGREEMENT_LEVELS = 5


# The level of 0, 1, ..., 2 ** (AGREEMENT_LEVELS - 1) votes; more votes share the last.
_LEVEL_OF_VOTES = np.minimum(
    np.floor(np.log2(np.maximum(np.arange(2 ** (AGREEMENT_LEVELS - 1) + 1), 1))),
    AGREEMENT_LEVELS - 1,
).astype(np.int64)


def agreement_level(votes: np.ndarray) -> np.ndarray:
    """The agreement level of items predicted by ``votes`` runs each: ``floor(log2 votes)``,
    capped at ``AGREEMENT_LEVELS - 1`` (0 for an item no run predicts)."""
    # A table lookup: a first round's planning reads a million items' levels under the task's
    # engine lease, and the logarithm took a tenth of it.
    level: np.ndarray = _LEVEL_OF_VOTES[np.clip(votes, 0, _LEVEL_OF_VOTES.size - 1)]
    return level


def score_strata(scores: np.ndarray, *, max_strata: int, min_stratum_size: int) -> np.ndarray:
    """Cut a run into score strata of roughly equal size; ties never straddle a boundary.

    Returns an ``int8`` stratum index per prediction, ``0`` for the lowest scores.
    """
    n = scores.size
    n_strata = min(max_strata, n // max(min_stratum_size, 1))
    uniq, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    if n_strata <= 1 or uniq.size <= 1:
        return np.zeros(n, dtype=np.int8)
    cumulative = np.cumsum(counts)
    targets = np.arange(1, n_strata) * (n / n_strata)
    cuts = np.unique(np.searchsorted(cumulative, targets))
    cuts = cuts[cuts < uniq.size - 1]
    stratum_of_value = np.searchsorted(cuts, np.arange(uniq.size), side="left")
    _, dense = np.unique(stratum_of_value, return_inverse=True)
    return dense[inverse].astype(np.int8)


@dataclass
class SamplingRecord:
    """What the design has done in one task: inclusion probabilities, requests, strata, rounds.

    ``asked`` counts the judgments asked per item (its first ones when drawn, then its looks);
    ``judgments_asked`` their total: the budget counts judgments. Each union cell gets a *band*
    once its rate is known (``cell_band``: -1 none yet, then ``LOW``, ``MIXED``, ``HIGH``), and
    ``look_patterns[band]`` are the answer patterns ``(says correct, says incorrect)`` that get
    one more judgment in that band (:mod:`.second_looks`); a band, once given, and a pattern,
    once switched on, stay.
    """

    inclusion: np.ndarray
    requested: np.ndarray
    asked: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    judgments_asked: int = 0
    cell_band: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    look_patterns: tuple[frozenset[tuple[int, ...]], ...] = (frozenset(), frozenset(), frozenset())
    # Per run: (bands given and runs recorded when computed, unmerged post-strata); see
    # ``post_strata``.
    piece_cache: dict[int, tuple[tuple[int, int], np.ndarray, np.ndarray]] = field(
        default_factory=dict
    )
    strata: list[np.ndarray] = field(default_factory=list)
    rounds: list[int] = field(default_factory=list)
    log: list[dict[str, Any]] = field(default_factory=list)
    # Union cell of each item: (first run that predicted it, its stratum there), -1 outside it.
    cell: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    # How many of the recorded runs predict each item.
    votes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    n_cells: int = 0
    stratum_sizes: list[np.ndarray] = field(default_factory=list)
    covered: list[bool] = field(default_factory=list)
    run_cells: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    # The label view of the state it was computed for: (key, ItemLabels).
    labels_cache: tuple[tuple[int, int, int], ItemLabels] | None = None

    def grow(self, n_items: int) -> None:
        extra = n_items - self.inclusion.size
        if extra > 0:
            self.inclusion = np.concatenate([self.inclusion, np.zeros(extra)])
            self.requested = np.concatenate([self.requested, np.zeros(extra, bool)])
        extra = n_items - self.asked.size
        if extra > 0:
            self.asked = np.concatenate([self.asked, np.zeros(extra, np.int32)])
        extra = n_items - self.cell.size
        if extra > 0:
            self.cell = np.concatenate([self.cell, np.full(extra, -1, np.int64)])
        extra = n_items - self.votes.size
        if extra > 0:
            self.votes = np.concatenate([self.votes, np.zeros(extra, np.int32)])

    def add_run(self, items: np.ndarray, strata: np.ndarray) -> None:
        self.strata.append(strata)
        self.stratum_sizes.append(np.bincount(strata).astype(float))
        self.rounds.append(0)
        self.covered.append(False)
        new = self.cell[items] < 0
        self.cell[items[new]] = self.n_cells + strata[new].astype(np.int64)
        self.n_cells += int(strata.max()) + 1
        self.votes[items] += 1
        self.cell_band = np.concatenate(
            [self.cell_band, np.full(self.n_cells - self.cell_band.size, -1, np.int8)]
        )
        # An item's cell is fixed when it first arrives, so a run's cell histogram never changes.
        cells, counts = np.unique(self.cell[items], return_counts=True)
        self.run_cells.append((cells, counts.astype(float)))

    def copy(self) -> SamplingRecord:
        """A copy whose mutable parts are independent; per-run strata, fixed once a run is
        added, are shared."""
        return SamplingRecord(
            inclusion=self.inclusion.copy(),
            requested=self.requested.copy(),
            asked=self.asked.copy(),
            judgments_asked=self.judgments_asked,
            cell_band=self.cell_band.copy(),
            look_patterns=self.look_patterns,
            piece_cache=dict(self.piece_cache),
            strata=list(self.strata),
            rounds=list(self.rounds),
            log=list(self.log),
            cell=self.cell.copy(),
            votes=self.votes.copy(),
            n_cells=self.n_cells,
            stratum_sizes=list(self.stratum_sizes),
            covered=list(self.covered),
            run_cells=list(self.run_cells),
            labels_cache=self.labels_cache,
        )

    def apply_levels(self, items: np.ndarray, levels: np.ndarray, fraction: float) -> None:
        """Raise the inclusion of ``items`` to ``levels`` (``fraction`` of the way there)."""
        pi = self.inclusion[items]
        target = np.maximum(pi, levels)
        self.inclusion[items] = target if fraction == 1.0 else pi + (target - pi) * fraction

    def request(self, items: np.ndarray, judgments: int) -> None:
        """Mark ``items`` as drawn, each asking for ``judgments`` answers."""
        self.requested[items] = True
        self.ask(items, judgments)

    def ask(self, items: np.ndarray, judgments: int = 1) -> None:
        """Ask ``judgments`` more answers on each of ``items``."""
        self.asked[items] += judgments
        self.judgments_asked += judgments * int(items.size)

    def switch_on(self, band: int, patterns: Iterable[Iterable[int]]) -> None:
        """Every item of ``band`` whose answers reach one of ``patterns`` gets one more look."""
        switched = list(self.look_patterns)
        switched[band] = switched[band] | frozenset(map(tuple, patterns))
        self.look_patterns = tuple(switched)

    def give_bands(self, cells: np.ndarray, bands: np.ndarray) -> None:
        """Give ``cells`` their band (for good)."""
        if (self.cell_band[cells] >= 0).any():
            raise ValueError("a cell's band is given once")
        self.cell_band[cells] = bands

    def post_strata(
        self, run: int, items: np.ndarray, *, banded: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The post-strata of a run's precision: each item's piece, the post-stratum each piece
        is counted in, and the post-strata's sizes.

        Each score stratum is split by agreement level (:func:`agreement_level`) and, when
        ``banded``, first by the band of the item's cell: piece
        ``AGREEMENT_LEVELS * (4 h + band + 1) + agreement`` (``band + 1`` is 0 when not
        banded). Agreement and bands are fixed properties of the items once the runs are known,
        never of the sample, so this is a post-stratification: a stratum's items first drawn
        for other runs (predicted by several, mostly correct, sampled at their levels) no longer
        stand in for the run's own items. An agreement level whose items are expected to yield
        less than one sampled item (``sum pi < 1`` over those with ``pi < 1``) joins the nearest
        level of its (stratum, band) that is expected to yield one: an empty post-stratum would
        borrow its neighbour's rate, which biases a run whose few wrong items are alone at their
        level (measured: +0.0022 on a run of precision 0.9975). The merge is returned as a map
        over pieces (the identity where nothing joins) rather than applied to every item: the
        estimators read the post-stratum of verified items only, a few percent of a large run.
        """
        key = (int(np.count_nonzero(self.cell_band >= 0)) if banded else -1, len(self.strata))
        cached = self.piece_cache.get(run)
        if cached is None or cached[0] != key:
            coarse = self.strata[run].astype(np.int16) * 4
            if banded:
                coarse = coarse + self.item_band(items) + 1
            agreement = agreement_level(self.votes[items]).astype(np.int16)
            # int16: a million-item run's cache is 2 MB.
            pieces = coarse * AGREEMENT_LEVELS + agreement
            n_pieces = self.stratum_sizes[run].size * 4 * AGREEMENT_LEVELS
            cached = (key, pieces, np.bincount(pieces, minlength=n_pieces).astype(float))
            self.piece_cache[run] = cached
        _, pieces, piece_sizes = cached
        n_post = piece_sizes.size
        pi = self.inclusion[items]
        certain = np.flatnonzero(pi >= 1.0)
        # Sums over the items with pi < 1 (the few certain ones weigh 0: the same sums, bit for
        # bit, as over the uncertain items alone, without copying a million of them).
        pi[certain] = 0.0
        expected = np.bincount(pieces, weights=pi, minlength=n_post)
        present = piece_sizes - np.bincount(pieces[certain], minlength=n_post) > 0
        thin = (present & (expected < 1.0)).reshape(-1, AGREEMENT_LEVELS)
        merge = np.arange(n_post, dtype=np.int64).reshape(-1, AGREEMENT_LEVELS)
        if thin.any():
            enough = (expected >= 1.0).reshape(-1, AGREEMENT_LEVELS)
            for block in np.flatnonzero(thin.any(axis=1)):
                good = np.flatnonzero(enough[block])
                if good.size == 0:
                    merge[block] = merge[block, 0]
                    continue
                for level in np.flatnonzero(~enough[block]):
                    merge[block, level] = merge[block, good[np.argmin(np.abs(good - level))]]
        into = merge.ravel()
        return pieces, into, np.bincount(into, weights=piece_sizes, minlength=n_post)

    @staticmethod
    def post_stratum_parts(n_post: int) -> tuple[np.ndarray, np.ndarray]:
        """Per post-stratum of :meth:`post_strata`: its score stratum and its census group
        (0 without a band, else ``band + 1``)."""
        index = np.arange(n_post)
        group = (index // AGREEMENT_LEVELS) % 4
        return index // (4 * AGREEMENT_LEVELS), group

    def item_band(self, items: np.ndarray) -> np.ndarray:
        """The band of each item's cell (-1: none yet, or outside the union)."""
        cell = self.cell[items]
        return np.where(cell >= 0, self.cell_band[np.maximum(cell, 0)], -1).astype(np.int8)

    def known(self, labels: ItemLabels) -> np.ndarray:
        """Per item: sampled and verified (a mask over the task's items)."""
        known: np.ndarray = self.requested & labels.verified
        return known

    def known_items(self, labels: ItemLabels) -> np.ndarray:
        """Sorted ids of sampled items that are verified."""
        return np.flatnonzero(self.known(labels))

    def is_covered(self, run: int, items: np.ndarray) -> bool:
        """Whether every item of ``run`` has ``pi > 0`` (cached: levels only ever rise)."""
        if not self.covered[run]:
            self.covered[run] = bool((self.inclusion[items] > 0).all())
        return self.covered[run]

    @property
    def n_requested(self) -> int:
        return int(np.count_nonzero(self.requested))


def level_groups(
    pi: np.ndarray, strata: np.ndarray, unrequested: np.ndarray, n_strata: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Compress items to groups of equal (level, stratum, requested): values and counts."""
    # The distinct levels, then each item's by binary search: the same as ``np.unique``'s
    # inverse, without its second pass over a million items (this runs under the engine lease).
    levels = np.unique(pi)
    level_index = np.searchsorted(levels, pi)
    key = (level_index * n_strata + strata) * 2 + unrequested
    counts = np.bincount(key)
    present = np.flatnonzero(counts)
    return (
        levels[present // 2 // n_strata],
        (present // 2) % n_strata,
        present % 2 == 1,
        counts[present].astype(float),
    )
