"""The names of the measures the engine estimates, in board order.

An open-world task (runs predict over an open item space; recall rests on a reference sample)
estimates three: :data:`OPEN_MEASURES`, the fields of :class:`.results.RunEstimate`. A closed
pool (every run labels every item of one fixed pool) can estimate seven:
:data:`CLOSED_POOL_MEASURES`, computed by :mod:`.closed_pool.measures`.
"""

from __future__ import annotations

__all__ = ["CLOSED_POOL_MEASURES", "OPEN_MEASURES"]

OPEN_MEASURES = ("precision", "recall", "f1")
CLOSED_POOL_MEASURES = (*OPEN_MEASURES, "accuracy", "balanced_accuracy", "mcc", "fbeta")
