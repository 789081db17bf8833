"""What is known of a closed-pool task at one moment: its runs' outputs and the labels so far."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..state import TaskState

__all__ = ["PoolRun", "PoolState"]

UNKNOWN = -1


@dataclass(frozen=True, eq=False)
class PoolRun:
    """One run's output on every pool item: ``scores`` in [0, 1] and 0/1 ``predictions``."""

    scores: np.ndarray
    predictions: np.ndarray
    name: str = ""

    @property
    def predicted_positives(self) -> int:
        return int(np.count_nonzero(self.predictions))


class PoolState:
    """A closed pool of ``n_items`` items, the runs that scored it and the labels verified so far.

    ``labels`` holds 1 (positive), 0 (negative) or -1 (not verified) per item. Runs are added in
    arrival order; a run's index is its position. With fallible annotators, ``answers`` holds
    their judgments and gold answers (:meth:`set_answers`): ``labels`` then says which items
    are verified, and the estimates take their labels from the annotator model.
    """

    def __init__(self, n_items: int) -> None:
        if n_items < 1:
            raise ValueError("a closed pool needs at least one item")
        self.n_items = int(n_items)
        self.labels = np.full(self.n_items, UNKNOWN, dtype=np.int8)
        self.runs: list[PoolRun] = []
        self.answers: TaskState | None = None

    def add_run(self, scores: npt.ArrayLike, predictions: npt.ArrayLike, *, name: str = "") -> int:
        """Add a run scoring every item; return its index."""
        scores = np.asarray(scores, dtype=float)
        predictions = np.asarray(predictions, dtype=bool)
        if scores.shape != (self.n_items,) or predictions.shape != (self.n_items,):
            raise ValueError(f"a run scores every one of the {self.n_items} pool items")
        if not np.all((scores >= 0.0) & (scores <= 1.0)):
            raise ValueError("scores must lie in [0, 1]")
        self.runs.append(PoolRun(scores, predictions, name))
        return len(self.runs) - 1

    @property
    def n_runs(self) -> int:
        return len(self.runs)

    def set_labels(self, items: npt.ArrayLike, values: npt.ArrayLike) -> None:
        """Record verified labels (1 positive, 0 negative) of ``items``."""
        items = np.asarray(items, dtype=np.int64)
        values = np.asarray(values)
        if items.size and (items.min() < 0 or items.max() >= self.n_items):
            raise IndexError("item outside the pool")
        self.labels[items] = np.where(values.astype(bool), 1, 0)

    def set_answers(self, answers: TaskState | None) -> None:
        """Annotators' judgments (and gold answers) on the pool's items, or ``None`` when every
        label in ``labels`` is exact (:mod:`.label_noise`)."""
        if answers is not None and answers.n_items != self.n_items:
            raise ValueError(f"answers on {answers.n_items} items for a pool of {self.n_items}")
        self.answers = answers

    @property
    def labelled(self) -> np.ndarray:
        """Boolean mask of verified items."""
        labelled: np.ndarray = self.labels != UNKNOWN
        return labelled

    @property
    def n_labelled(self) -> int:
        return int(np.count_nonzero(self.labelled))
