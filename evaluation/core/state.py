"""What the engine knows about one task: runs, labels, the reference sample, the sampling record.

Items are integers ``0 .. n_items - 1`` (the caller keeps the mapping to keys). A run is a sorted
array of item ids with one score each, so a million-prediction run is two arrays, and every
per-run computation is a gather over those arrays. Labels are one ``int8`` array over items:
``-1`` unknown, ``0`` incorrect, ``1`` correct; a label, once known, is used by every run that
predicts the item.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

__all__ = ["UNKNOWN", "ReferenceSample", "Run", "TaskState"]

UNKNOWN = -1


@dataclass(frozen=True)
class Run:
    """One submission: the items it predicts (sorted, unique) and a confidence score for each."""

    items: np.ndarray
    scores: np.ndarray
    name: str = ""

    @property
    def size(self) -> int:
        return int(self.items.size)


@dataclass(frozen=True)
class ReferenceSample:
    """A uniform random sample of true items, for recall, with the group (document) of each.

    When the sample was collected by annotating whole documents it is a cluster sample, and its
    variance is estimated by resampling groups, not items.
    """

    items: np.ndarray
    groups: np.ndarray

    @property
    def size(self) -> int:
        return int(self.items.size)


class TaskState:
    """The mutable state of one task as the engine sees it.

    Parameters
    ----------
    n_items : int
        Number of item ids known so far; grows with :meth:`add_items`.

    Notes
    -----
    Designs keep their own sampling record (inclusion probabilities, draws, rounds) in
    ``design_state[design.name]``, created on first use, so that one state can be estimated
    only by the design that sampled it (:class:`ValueError` otherwise).
    """

    def __init__(self, n_items: int = 0):
        if n_items < 0:
            raise ValueError("n_items must be >= 0")
        self.labels = np.full(n_items, UNKNOWN, dtype=np.int8)
        self.in_pool = np.zeros(n_items, dtype=bool)
        self.runs: list[Run] = []
        self.reference = ReferenceSample(np.empty(0, np.int64), np.empty(0, np.int64))
        self.design_state: dict[str, object] = {}

    # -- items and labels -------------------------------------------------------------------
    @property
    def n_items(self) -> int:
        return int(self.labels.size)

    def add_items(self, count: int) -> np.ndarray:
        """Register ``count`` new item ids and return them."""
        if count < 0:
            raise ValueError("count must be >= 0")
        start = self.n_items
        self.labels = np.concatenate([self.labels, np.full(count, UNKNOWN, np.int8)])
        self.in_pool = np.concatenate([self.in_pool, np.zeros(count, bool)])
        for extra in self.design_state.values():
            grow = getattr(extra, "grow", None)
            if grow is not None:
                grow(self.n_items)
        return np.arange(start, start + count, dtype=np.int64)

    def set_labels(self, items, values) -> None:
        """Record verified labels (``True``/``1`` correct, ``False``/``0`` incorrect)."""
        items = self._check_items(items)
        values = np.asarray(values)
        if values.shape != items.shape:
            raise ValueError("items and values must have the same length")
        if values.dtype != bool and not np.isin(values, (0, 1)).all():
            raise ValueError("labels must be 0/1 or booleans")
        self.labels[items] = values.astype(np.int8)

    @property
    def n_labelled(self) -> int:
        """Distinct items with a known label."""
        return int(np.count_nonzero(self.labels >= 0))

    # -- runs -------------------------------------------------------------------------------
    def add_run(self, items, scores=None, *, name: str = "") -> int:
        """Add a run; returns its index. Items must be unique known ids; scores in ``[0, 1]``."""
        items = self._check_items(items)
        if items.size == 0:
            raise ValueError("a run must predict at least one item")
        if scores is None:
            scores = np.ones(items.size)
        scores = np.asarray(scores, dtype=float)
        if scores.shape != items.shape:
            raise ValueError("items and scores must have the same length")
        if not np.isfinite(scores).all() or (scores < 0).any() or (scores > 1).any():
            raise ValueError("scores must be finite numbers in [0, 1]")
        order = np.argsort(items, kind="stable")
        items, scores = items[order], scores[order]
        if (np.diff(items) == 0).any():
            raise ValueError("a run must not predict the same item twice")
        items.setflags(write=False)
        scores.setflags(write=False)
        self.runs.append(Run(items, scores, name))
        self.in_pool[items] = True
        return len(self.runs) - 1

    @property
    def n_runs(self) -> int:
        return len(self.runs)

    # -- reference sample -------------------------------------------------------------------
    def set_reference(self, items, groups=None) -> None:
        """Set the reference sample of true items (``groups``: one document id per item)."""
        items = self._check_items(items)
        if groups is None:
            groups = np.arange(items.size, dtype=np.int64)
        groups = np.asarray(groups, dtype=np.int64)
        if groups.shape != items.shape:
            raise ValueError("items and groups must have the same length")
        self.reference = ReferenceSample(items.copy(), groups.copy())

    # -- copies -----------------------------------------------------------------------------
    def fork(self) -> TaskState:
        """A working copy that shares the runs' read-only arrays with this state.

        Labels, the pool, the reference sample and every design's record are copied (a record
        with a ``copy()`` method is asked for one; any other is deep-copied), so labelling,
        planning or estimating on the fork never changes this state. Costs O(items), not
        O(predictions): a service can keep one state per task in memory, bring it up to date
        incrementally, and hand each job a fork.
        """
        forked = TaskState.__new__(TaskState)
        forked.labels = self.labels.copy()
        forked.in_pool = self.in_pool.copy()
        forked.runs = list(self.runs)
        forked.reference = self.reference
        forked.design_state = {
            name: extra.copy() if callable(getattr(extra, "copy", None)) else copy.deepcopy(extra)
            for name, extra in self.design_state.items()}
        return forked

    # -- helpers ----------------------------------------------------------------------------
    def _check_items(self, items) -> np.ndarray:
        items = np.asarray(items, dtype=np.int64).ravel()
        if items.size and (items.min() < 0 or items.max() >= self.n_items):
            raise ValueError(f"item ids must lie in [0, {self.n_items})")
        return items
