"""Small frozen result objects returned by the engine, in the style of ``scipy.stats`` results."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np

from .measures import OPEN_MEASURES

__all__ = ["Bands", "IntervalEstimate", "Patterns", "Plan", "RoundRecord", "RunEstimate"]

# ``(cells, bands)``: union cells given a band in a round, and the band each got (arrays when
# planned, lists when read back from storage).
Bands: TypeAlias = tuple[np.ndarray | Sequence[int], np.ndarray | Sequence[int]]
# ``(band, patterns)`` pairs: answer patterns ``(says correct, says incorrect)`` switched on in a
# band in a round.
Patterns: TypeAlias = tuple[tuple[int, Sequence[tuple[int, int]]], ...]


@dataclass(frozen=True)
class IntervalEstimate:
    """One metric of one run: a point estimate with an interval (the engine's result; the stored
    row is the Django model ``leaderboard.models.Estimate``).

    Attributes
    ----------
    value : float
        Point estimate; ``nan`` when the metric is not identifiable from the data
        (for example recall without a reference sample). The interval is still honest then.
    low, high : float
        Interval bounds at confidence ``level``; may be asymmetric around ``value``.
    level : float
        Nominal coverage of ``[low, high]``, e.g. 0.95.
    method : str
        How the value and the interval were obtained, e.g.
        ``"poststratified-hajek/clopper-pearson"``.
    labels_used : int
        Verified items the estimate rests on (items of the run with a known label that enter
        the estimator; for recall also the reference items).
    """

    value: float
    low: float
    high: float
    level: float
    method: str
    labels_used: int

    @property
    def half_width(self) -> float:
        """Half the interval's length, ``(high - low) / 2``: the quantity the planner targets."""
        return (self.high - self.low) / 2.0

    @property
    def exact(self) -> bool:
        """True when the interval has collapsed to the value (every item of the run verified)."""
        return self.high - self.low == 0.0

    def covers(self, truth: float) -> bool:
        """Whether ``truth`` lies in the closed interval (with a tolerance for rounding)."""
        eps = 1e-12
        return self.low - eps <= truth <= self.high + eps


@dataclass(frozen=True)
class RunEstimate:
    """Precision, recall and F1 of one run, estimated jointly.

    ``precision_parts`` are the per-item pieces the precision was computed from, when the design
    has them (the ``default`` design's :class:`.designs.precision.PrecisionParts`, not named
    here: the designs import this module; ``None`` otherwise): :func:`.paired.paired_differences`
    correlates them across runs instead of computing every run's post-strata again. They take
    no part in comparisons or the ``repr``.
    """

    run: int
    precision: IntervalEstimate
    recall: IntervalEstimate
    f1: IntervalEstimate
    precision_parts: object | None = field(default=None, compare=False, repr=False)

    def metric(self, name: str) -> IntervalEstimate:
        """The estimate named ``"precision"``, ``"recall"`` or ``"f1"``."""
        if name not in OPEN_MEASURES:
            raise KeyError(name)
        return {"precision": self.precision, "recall": self.recall, "f1": self.f1}[name]


@dataclass(frozen=True)
class Plan:
    """What the planner asks for one run in one round.

    Attributes
    ----------
    run : int
        Index of the run the plan serves.
    round : int
        1 for the first planning round of the run, then 2, 3, ...
    items : numpy.ndarray
        Item ids to verify now (never an item already verified or already requested).
    status : str
        ``"sample"`` (verify ``items``), ``"met"`` (the run's precision interval already
        meets the target: nothing to verify), ``"budget_exhausted"`` (the target needs labels the
        budget does not allow), ``"exhausted"`` (every item of the run is verified),
        ``"annotator_limited"`` (what keeps the interval wider than the target is the
        uncertainty of the annotators' error rates, which more items of this run would not
        reduce; judgments anywhere in the task, gold answers most, narrow it over time).
    predicted_half_width : float
        Precision half-width the planner expects once ``items`` are answered.
    current_half_width : float
        Precision half-width before this round.
    expected_labels : float
        Expected number of judgments the round asks for (new items times their judgments, plus
        ``len(again)``).
    seed : int | None
        Seed of the random draw of this round, recorded so the draw can be replayed.
    details : dict
        Design-specific record of the round (levels, inclusion probabilities, bisection bounds).
    again : numpy.ndarray
        Item ids, already verified, that need one more judgment each (by an annotator who has not
        judged them yet): every item of the task whose answers reach a pattern that gets one
        more look (:mod:`evaluation.core.designs.second_looks`).
    bands : tuple
        ``(cells, bands)``: union cells the round gave a band (for good).
    patterns : tuple
        ``(band, patterns)`` pairs: answer patterns ``(says correct, says incorrect)`` the round
        switched on in a band.
    """

    run: int
    round: int
    items: np.ndarray
    status: str
    predicted_half_width: float = math.nan
    current_half_width: float = math.nan
    expected_labels: float = 0.0
    seed: int | None = None
    details: dict[str, Any] = field(default_factory=dict)
    again: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    bands: Bands = ((), ())
    patterns: Patterns = ()

    @property
    def done(self) -> bool:
        """True when the planner asks for nothing more for this run (met, exhausted, no budget)."""
        return self.status != "sample"


@dataclass(frozen=True)
class RoundRecord:
    """A planning round as a service stores it, enough to replay it (see ``design.replay``).

    Attributes
    ----------
    run, round : int
        The run's index in the task state and the round number (1, 2, ...).
    items : numpy.ndarray
        Item ids the round drew (empty for rounds that drew nothing).
    levels : list of float or None
        Level per score stratum of the run (``Plan.details["levels"]``); ``None`` when the round
        drew nothing (target met, exhausted, no budget left).
    fraction : float
        Share of the levels applied (``Plan.details["fraction"]``; below 1 only when a draw
        was cut to the remaining budget).
    seed : int or None
        Seed of the round's draw, for the audit trail.
    again : numpy.ndarray
        Items the round asked one more judgment for (``Plan.again``).
    bands, patterns : tuple
        Bands given and answer patterns switched on (``Plan.bands``, ``Plan.patterns``).
    judgments : int
        Judgments each drawn item was asked for at first.
    """

    run: int
    round: int
    items: np.ndarray
    levels: list[float] | None = None
    fraction: float = 1.0
    seed: int | None = None
    again: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    bands: Bands = ((), ())
    patterns: Patterns = ()
    judgments: int = 1
