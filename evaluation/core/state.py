"""What the engine knows about one task: runs, labels, judgments, the reference sample, the record.

Items are integers ``0 .. n_items - 1`` (the caller keeps the mapping to keys). A run is a sorted
array of item ids with one score each, so a million-prediction run is two arrays, and every
per-run computation is a gather over those arrays.

What is known about an item's correctness comes in two kinds:

* **exact labels**, one ``int8`` array over items (``-1`` unknown, ``0`` incorrect, ``1``
  correct): answers that are taken as true, from a perfect oracle in simulations or from gold
  items whose answer the organizer knows (:meth:`TaskState.set_labels`, :meth:`set_gold`);
* **judgments**: one row per annotator answer (item, annotator, says correct), which may be wrong
  (:meth:`TaskState.add_judgments`). The annotator model (:mod:`.annotators`, :mod:`.labels`) turns
  them into a probability of being correct per item, with its uncertainty.

An item is *verified* once it has an exact label or at least one judgment; what is verified is
used by every run that predicts the item.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["UNKNOWN", "GoldItems", "Judgments", "ReferenceSample", "RunData", "TaskState"]

UNKNOWN = -1

# Label versions are unique across every state of the process, so that a cache keyed on one never
# mistakes two forks that changed their labels differently for each other.
_label_versions = itertools.count(1)


@dataclass(frozen=True)
class RunData:
    """One submission as the engine sees it: the items it predicts (sorted, unique) and a confidence
    score for each (the submission's database row is the Django model ``leaderboard.models.Run``).
    """

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

    @property
    def n_groups(self) -> int:
        """Distinct groups (documents) the sample's items come from."""
        return int(np.unique(self.groups).size)


@dataclass(frozen=True)
class Judgments:
    """Annotator answers, one entry per judgment, in the order they were given."""

    items: np.ndarray
    annotators: np.ndarray
    says_correct: np.ndarray

    @property
    def size(self) -> int:
        return int(self.items.size)


def _no_judgments() -> Judgments:
    return Judgments(np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, bool))


@dataclass(frozen=True)
class GoldItems:
    """Items whose answer the organizer knows (sorted), served to annotators to measure them."""

    items: np.ndarray
    answers: np.ndarray

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
        self._labels = np.full(n_items, UNKNOWN, dtype=np.int8)
        self.in_union = np.zeros(n_items, dtype=bool)
        self.runs: list[RunData] = []
        self.withdrawn: frozenset[int] = frozenset()
        self.reference = ReferenceSample(np.empty(0, np.int64), np.empty(0, np.int64))
        self.judgments = _no_judgments()
        self.gold = GoldItems(np.empty(0, np.int64), np.empty(0, bool))
        self.judged = np.zeros(n_items, dtype=bool)
        self.design_state: dict[str, object] = {}
        # Renewed by every change of labels, judgments or gold: caches of derived labels key on it.
        self.labels_version = next(_label_versions)

    # -- items and labels -------------------------------------------------------------------
    @property
    def labels(self) -> np.ndarray:
        """Exact label per item (read-only: change labels through :meth:`set_labels`, so that
        what is derived from them knows)."""
        view = self._labels.view()
        view.setflags(write=False)
        return view

    @property
    def n_items(self) -> int:
        return int(self._labels.size)

    def add_items(self, count: int) -> np.ndarray:
        """Register ``count`` new item ids and return them."""
        if count < 0:
            raise ValueError("count must be >= 0")
        start = self.n_items
        self._labels = np.concatenate([self._labels, np.full(count, UNKNOWN, np.int8)])
        self.in_union = np.concatenate([self.in_union, np.zeros(count, bool)])
        self.judged = np.concatenate([self.judged, np.zeros(count, bool)])
        for extra in self.design_state.values():
            grow = getattr(extra, "grow", None)
            if grow is not None:
                grow(self.n_items)
        return np.arange(start, start + count, dtype=np.int64)

    def set_labels(self, items: npt.ArrayLike, values: npt.ArrayLike) -> None:
        """Record verified labels (``True``/``1`` correct, ``False``/``0`` incorrect)."""
        items = self._check_items(items)
        values = np.asarray(values)
        if values.shape != items.shape:
            raise ValueError("items and values must have the same length")
        if values.dtype != bool and not np.isin(values, (0, 1)).all():
            raise ValueError("labels must be 0/1 or booleans")
        self._labels[items] = values.astype(np.int8)
        self.labels_version = next(_label_versions)

    def clear_labels(self) -> None:
        """Forget every exact label (judgments and gold answers stay)."""
        self._labels[:] = UNKNOWN
        self.labels_version = next(_label_versions)

    def add_judgments(
        self, items: npt.ArrayLike, annotators: npt.ArrayLike, says_correct: npt.ArrayLike
    ) -> None:
        """Record annotator answers (``says_correct``: ``True`` for "correct"), which may be wrong.

        Skips ("can't tell") are not judgments. One annotator may not judge an item twice.
        """
        items = self._check_items(items)
        annotators = np.asarray(annotators, dtype=np.int64).ravel()
        says = np.asarray(says_correct).ravel()
        if not (items.shape == annotators.shape == says.shape):
            raise ValueError("items, annotators and answers must have the same length")
        if says.dtype != bool and not np.isin(says, (0, 1)).all():
            raise ValueError("answers must be 0/1 or booleans")
        if annotators.size and annotators.min() < 0:
            raise ValueError("annotator ids must be >= 0")
        old = self.judgments
        new = Judgments(
            np.concatenate([old.items, items]),
            np.concatenate([old.annotators, annotators]),
            np.concatenate([old.says_correct, says.astype(bool)]),
        )
        pairs = new.items * (int(new.annotators.max(initial=0)) + 1) + new.annotators
        if np.unique(pairs).size != pairs.size:
            raise ValueError("an annotator judged the same item twice")
        self.judgments = new
        self.judged[items] = True
        self.labels_version = next(_label_versions)

    def set_gold(self, items: npt.ArrayLike, answers: npt.ArrayLike) -> None:
        """Gold items: items whose answer is known, served to annotators to measure them.

        Their answers are exact; judgments on them measure the annotators. A gold item that a
        design also samples counts, once judged, with its known answer.
        """
        items = self._check_items(items)
        answers = np.asarray(answers).ravel()
        if answers.shape != items.shape:
            raise ValueError("items and answers must have the same length")
        if answers.dtype != bool and not np.isin(answers, (0, 1)).all():
            raise ValueError("gold answers must be 0/1 or booleans")
        if np.unique(items).size != items.size:
            raise ValueError("a gold item is listed twice")
        order = np.argsort(items)
        self.gold = GoldItems(items[order], answers[order].astype(bool))
        self.labels_version = next(_label_versions)

    @property
    def verified(self) -> np.ndarray:
        """Per item: an exact label or at least one judgment is known."""
        return (self.labels >= 0) | self.judged

    @property
    def n_labelled(self) -> int:
        """Distinct verified items (an exact label or at least one judgment)."""
        return int(np.count_nonzero(self.verified))

    @property
    def n_judgments(self) -> int:
        return self.judgments.size

    # -- runs -------------------------------------------------------------------------------
    def add_run(
        self, items: npt.ArrayLike, scores: npt.ArrayLike | None = None, *, name: str = ""
    ) -> int:
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
        self.runs.append(RunData(items, scores, name))
        self.in_union[items] = True
        return len(self.runs) - 1

    @property
    def n_runs(self) -> int:
        return len(self.runs)

    def withdraw_runs(self, runs: Iterable[int]) -> None:
        """Withdraw the runs at indices ``runs``: they stay in the state, the union loses the
        items only withdrawn runs predict.

        A withdrawn run keeps its place: every design's record (each item's inclusion
        probability, the strata, the cells, how many runs predict an item) is what the rounds
        planned with it made it, so the weights of every verified item stay right. What changes
        is the union (``in_union``) of the runs' predictions that recall's share of
        correct items is taken over: it becomes the union of the other runs', so an item only a
        withdrawn run predicts, whose answer no one will wait for any more, is in no estimate of
        another run. The union is still one of whole runs, fixed before any answer, so the
        estimators are those of a union without the withdrawn runs' own items (docs/STATISTICS.md,
        "Withdrawn runs").

        Parameters
        ----------
        runs : iterable of int
            Indices of runs of this state; already withdrawn ones stay withdrawn.
        """
        withdrawn = self.withdrawn | frozenset(int(r) for r in runs)
        if any(not 0 <= r < self.n_runs for r in withdrawn):
            raise ValueError(f"run indices must lie in [0, {self.n_runs})")
        if withdrawn == self.withdrawn:
            return
        union = np.zeros(self.n_items, dtype=bool)
        for index, run in enumerate(self.runs):
            if index not in withdrawn:
                union[run.items] = True
        self.withdrawn, self.in_union = withdrawn, union

    # -- reference sample -------------------------------------------------------------------
    def set_reference(self, items: npt.ArrayLike, groups: npt.ArrayLike | None = None) -> None:
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

        Labels, judgments, the union, the reference sample and every design's record are copied
        (a record with a ``copy()`` method is asked for one; any other is deep-copied), so
        labelling, planning or estimating on the fork never changes this state. Costs O(items), not
        O(predictions): a service can keep one state per task in memory, bring it up to date
        incrementally, and hand each job a fork.
        """
        forked = TaskState.__new__(TaskState)
        forked._labels = self._labels.copy()
        forked.in_union = self.in_union.copy()
        forked.judged = self.judged.copy()
        forked.runs = list(self.runs)
        forked.withdrawn = self.withdrawn
        forked.reference = self.reference
        forked.judgments = self.judgments
        forked.gold = self.gold
        forked.labels_version = self.labels_version
        forked.design_state = {
            name: _copy_record(extra) for name, extra in self.design_state.items()
        }
        return forked

    # -- helpers ----------------------------------------------------------------------------
    def _check_items(self, items: npt.ArrayLike) -> np.ndarray:
        items = np.asarray(items, dtype=np.int64).ravel()
        if items.size and (items.min() < 0 or items.max() >= self.n_items):
            raise ValueError(f"item ids must lie in [0, {self.n_items})")
        return items


def _copy_record(extra: object) -> object:
    """A design's record, copied by its own ``copy()`` method if it has one, else deep-copied."""
    copier = getattr(extra, "copy", None)
    return copier() if callable(copier) else copy.deepcopy(extra)
