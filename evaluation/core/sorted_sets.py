"""Membership tests against sorted arrays of item ids, by binary search.

Runs and verified-item lists are sorted ``int64`` arrays; a million-item run is searched for a few
thousand ids in microseconds, without building sets or masks over the whole item range.
"""

from __future__ import annotations

import numpy as np

__all__ = ["contains", "positions"]


def contains(sorted_items: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Whether each of ``values`` is in the sorted array ``sorted_items``."""
    if sorted_items.size == 0 or values.size == 0:
        return np.zeros(values.size, bool)
    pos = np.searchsorted(sorted_items, values)
    pos[pos >= sorted_items.size] = 0
    found: np.ndarray = sorted_items[pos] == values
    return found


def positions(sorted_items: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Positions in ``sorted_items`` of the ``values`` it contains, in the order of ``values``."""
    if sorted_items.size == 0 or values.size == 0:
        return np.zeros(0, np.int64)
    pos = np.searchsorted(sorted_items, values)
    pos[pos >= sorted_items.size] = 0
    found: np.ndarray = pos[sorted_items[pos] == values]
    return found
