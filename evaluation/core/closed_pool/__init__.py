"""Closed-pool evaluation: every run scores one fixed pool, and shared labels estimate every run.

The pool is enumerated up front; each run gives every item a score and a 0/1 prediction; an
oracle (the annotators) verifies sampled items. :mod:`.measures` writes every measure as a function
of a run's true positives and false negatives; :mod:`.state` holds runs and labels;
:mod:`.interface` says what a multi-system design offers, and :data:`POOL_DESIGNS` lists them by
name (``ais-published``, one run at a time without shared labels, is a function apart:
:func:`.ais_published.ais_published`).
"""

from __future__ import annotations

from typing import Any

from .adaptive import AdaptivePoolDesign
from .curve import PrecisionRecallCurve
from .interface import MeasureEstimates, PoolDesign, PoolSampling
from .measures import (
    CLOSED_POOL_MEASURES,
    f_beta_label,
    measure_beta,
    measure_gradient,
    measure_range,
    measure_value,
)
from .passive import PassiveDesign
from .state import PoolRun, PoolState

__all__ = [
    "CLOSED_POOL_MEASURES",
    "POOL_DESIGNS",
    "AdaptivePoolDesign",
    "MeasureEstimates",
    "PassiveDesign",
    "PoolDesign",
    "PoolRun",
    "PoolSampling",
    "PoolState",
    "PrecisionRecallCurve",
    "f_beta_label",
    "make_pool_design",
    "measure_beta",
    "measure_gradient",
    "measure_range",
    "measure_value",
]

# Multi-system designs by name: each class implements PoolDesign (labels shared by all runs).
POOL_DESIGNS: dict[str, type[PoolDesign]] = {
    "adaptive": AdaptivePoolDesign,
    "passive": PassiveDesign,
}


def make_pool_design(name: str, **options: Any) -> PoolDesign:
    """Build the multi-system design called ``name`` with its options."""
    try:
        cls = POOL_DESIGNS[name]
    except KeyError:
        raise ValueError(f"unknown design {name!r}; choose one of {sorted(POOL_DESIGNS)}") from None
    return cls(**options)
