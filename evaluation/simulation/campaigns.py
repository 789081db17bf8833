"""What simulated campaigns of every kind share: the annotator panel they may simulate, the loop
over repeats with its progress and time, and the spread of a figure over repeats.

Each kind of data set has its campaigns (:mod:`.open_world.campaigns`,
:mod:`.closed_pool.campaigns`): what one repeat does and what its summary reports.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from .annotators import parse_annotators

__all__ = ["Annotators", "Progress", "repeat_campaigns", "sample_sd"]

Outcome = TypeVar("Outcome")
# Called after each repeat with (repeats done, repeats in all).
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Annotators:
    """A simulated annotator panel: its specification, gold rate and gold set size; optionally a
    share of hard items on which every annotator is right with probability ``hard_accuracy``
    (:class:`.annotators.AnnotatorPanel`)."""

    spec: str
    gold_rate: float = 0.05
    gold_items: int = 100
    hard_share: float = 0.0
    hard_accuracy: float = 0.5

    @property
    def profiles(self) -> tuple:
        return parse_annotators(self.spec)


def sample_sd(values: np.ndarray) -> float:
    """Standard deviation with ``n - 1`` (0 for a single value)."""
    return float(values.std(ddof=1)) if values.size > 1 else 0.0


def repeat_campaigns(
    repeats: int, campaign: Callable[[int], Outcome], progress: Progress | None = None
) -> tuple[list[Outcome], float]:
    """``campaign(r)`` for every repeat ``r`` in turn, telling ``progress`` after each; the
    outcomes and the seconds they took."""
    started = time.perf_counter()
    outcomes = []
    for r in range(repeats):
        outcomes.append(campaign(r))
        if progress is not None:
            progress(r + 1, repeats)
    return outcomes, time.perf_counter() - started
