"""What a multi-system closed-pool design offers: :class:`PoolDesign`.

A closed-pool task's runs arrive one by one; every label verified for one run is there for all
of them. A design is asked, at each arrival (and again while budget is left), which items to
verify next, and at any time for every run's measures with intervals. The simulations
(:mod:`evaluation.simulation.closed_pool_campaigns`) drive designs through this interface only,
so a new design is one more entry in :data:`evaluation.core.closed_pool.POOL_DESIGNS`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, TypeAlias, runtime_checkable

import numpy as np
import numpy.typing as npt

from ..results import IntervalEstimate
from .state import PoolState

__all__ = ["MeasureEstimates", "PoolDesign"]

# One run's estimates: measure name -> value with interval (a read-only mapping).
MeasureEstimates: TypeAlias = Mapping[str, IntervalEstimate]


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
