"""What a sampling design must offer to run a task in the service: :class:`ServiceDesign`.

The service keeps no engine object between jobs. Each job rebuilds the task's state from rows
(runs, judgments, gold answers, the reference sample), replays every stored planning round into
the design's sampling record, and then asks the design to plan one run or to estimate them all.
A design can run a task only if it can do all of that; the simulations
(:mod:`evaluation.simulation.open_world.campaigns`) need less (``plan`` and ``estimate`` on a
live state), which is why paper 003's ``published`` design, which draws with replacement and
keeps no replayable record, is a simulation baseline and not a task setting.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from ..labels import ItemLabels
from ..results import Plan, RoundRecord, RunEstimate
from ..state import TaskState


class ServiceRecord(Protocol):
    """The parts of a design's sampling record the service reads (per item, per run)."""

    inclusion: np.ndarray  # float, per item: its inclusion probability
    requested: np.ndarray  # bool, per item: drawn by some round
    asked: np.ndarray  # int, per item: judgments asked so far (first ones and looks)
    rounds: list[int]  # per run: rounds planned so far


@runtime_checkable
class ServiceDesign(Protocol):
    """A design the service can plan, replay and estimate tasks with.

    Attributes
    ----------
    name : str
        The design's name, stored with every snapshot.
    confidence : float
        Nominal level of every interval it reports.
    judgments_per_item, max_judgments_per_item : int
        Judgments asked of each newly drawn item, and most judgments any item may get.
    """

    name: str
    confidence: float
    judgments_per_item: int
    max_judgments_per_item: int

    def record(self, state: TaskState) -> ServiceRecord:
        """The design's sampling record in ``state`` (created empty on first use)."""

    def replay(
        self, state: TaskState, rounds: Iterable[RoundRecord], *, extend: bool = False
    ) -> None:
        """Rebuild the record from stored rounds, in planning order, bit for bit."""

    def plan(self, state: TaskState, run: int, *, rng: np.random.Generator) -> Plan:
        """The next round of run ``run``."""

    def labels(self, state: TaskState) -> ItemLabels:
        """Every item's label view (exact labels or the annotator model's posteriors)."""

    def prepare(self, state: TaskState, run: int) -> None:
        """Compute ahead what planning ``run`` reads that answers and runs fix and rounds seldom
        change (the label view; caches on the record): a service calls it before the task's
        engine lease. Planning returns the same round with or without it."""

    def estimate(
        self, state: TaskState, runs: Sequence[int] | None = None, *, level: float | None = None
    ) -> list[RunEstimate]:
        """Precision, recall and F1 with intervals for ``runs`` (default: every run)."""
