"""What a multi-system closed-pool design offers: :class:`PoolDesign`.

A closed-pool task's runs arrive one by one; every label verified for one run is there for all
of them. A design is asked, at each arrival (and again while budget is left), which items to
verify next, and at any time for every run's measures with intervals. The simulations
(:mod:`evaluation.simulation.closed_pool.campaigns`) and the pipeline
(:mod:`evaluation.kinds.closed_pool`) drive designs through this interface only, so a new design
is one more entry in :data:`evaluation.core.closed_pool.POOL_DESIGNS`. What only the pipeline
needs (the annotator model's labels, further looks, a sampling record to store and resume from,
each run's precision-recall curve) a design that has none of it implements trivially.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeAlias, runtime_checkable

import numpy as np
import numpy.typing as npt

from ..results import IntervalEstimate
from .curve import PrecisionRecallCurve
from .label_noise import PoolLabels
from .state import PoolState

__all__ = ["MeasureEstimates", "PoolDesign", "PoolSampling"]

# One run's estimates: measure name -> value with interval (a read-only mapping).
MeasureEstimates: TypeAlias = Mapping[str, IntervalEstimate]


@dataclass(frozen=True, eq=False)
class PoolSampling:
    """What a closed-pool task stores to go on sampling: per item, its permanent uniform number
    and its inclusion probability so far."""

    permanent: npt.NDArray[np.float64]
    inclusion: npt.NDArray[np.float64]


@runtime_checkable
class PoolDesign(Protocol):
    """A design that samples one closed pool for all of its runs and estimates each of them.

    A design is built with the keyword arguments ``confidence``, ``target_half_width`` and
    ``targets`` (the measures each run should estimate to ``target_half_width`` at
    ``confidence``; a design that ignores the runs ignores them), plus options of its own.

    Attributes
    ----------
    name : str
        The design's registry name (``"passive"``, ...).
    """

    name: str

    def plan(
        self, state: PoolState, run: int, *, budget: int, rng: np.random.Generator
    ) -> npt.NDArray[np.int64]:
        """Items to verify next, chosen when run ``run`` has arrived (or is still being served).

        Parameters
        ----------
        state : PoolState
            The pool, every run so far and the labels verified so far.
        run : int
            Index of the run that arrived last.
        budget : int, keyword-only
            Most new labels the design may ask for now.
        rng : numpy.random.Generator, keyword-only
            Source of every random choice.

        Returns
        -------
        numpy.ndarray
            At most ``budget`` distinct unverified item indices; empty when the design wants
            nothing more now (the caller then stops asking until the next arrival).
        """

    def estimate(
        self, state: PoolState, *, level: float, measures: Sequence[str]
    ) -> list[MeasureEstimates]:
        """Per run (in arrival order), per measure of ``measures``, an ``IntervalEstimate``.

        A measure that is 0/0 on the labels so far has value ``nan`` and still an honest
        interval (at worst the measure's whole range).
        """

    def labels(self, state: PoolState) -> PoolLabels | None:
        """The annotator model fitted to the pool's answers and the labels it gives (what the
        snapshot and the organizers' queue page show); ``None`` when the design takes the
        verified labels as they are."""

    def looks(self, state: PoolState) -> npt.NDArray[np.int64]:
        """Verified items owed one more judgment before the next round (engine indices, sorted);
        empty when the design asks none."""

    def sampling(self, state: PoolState) -> PoolSampling:
        """What the design needs to go on sampling ``state`` in another process, to store with
        each round (:meth:`resume` takes it back)."""

    def resume(self, state: PoolState, sampling: PoolSampling) -> None:
        """Go on sampling ``state`` from a stored :meth:`sampling`.

        Raises ``ValueError`` when ``sampling`` is not of ``state``'s pool, or could not have
        chosen its verified items.
        """

    def curve(
        self,
        state: PoolState,
        run: int,
        *,
        level: float,
        points: int = 30,
        thresholds: npt.ArrayLike | None = None,
    ) -> PrecisionRecallCurve:
        """Run ``run``'s estimated precision-recall curve with pointwise intervals at ``level``.

        Parameters
        ----------
        state : PoolState
            The pool, its runs and its labels (chosen by this design).
        run : int
            Index of the run in ``state``.
        level : float, keyword-only
            Pointwise confidence level.
        points : int, keyword-only
            Quantile thresholds of the run's scores (:func:`.curve.curve_thresholds`); the
            run's own operating threshold is added when its predictions are ``scores >= t``.
        thresholds : array_like, optional, keyword-only
            Thresholds to use instead.

        Returns
        -------
        PrecisionRecallCurve
            At the threshold of the run's own predictions, exactly its precision and recall.
        """
