"""Closed-pool evaluation: every run scores one fixed pool, and shared labels estimate every run.

The pool is enumerated up front; each run gives every item a score and a 0/1 prediction; an
oracle (the annotators) verifies sampled items. :mod:`.measures` writes every measure as a function
of a run's true positives and false negatives; :mod:`.state` holds runs and labels.
"""

from .measures import MEASURES, measure_gradient, measure_value
from .state import PoolRun, PoolState

__all__ = ["MEASURES", "PoolRun", "PoolState", "measure_gradient", "measure_value"]
