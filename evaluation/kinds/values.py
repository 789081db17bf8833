"""How the engine's numbers are stored and written, for every kind of task.

JSON has no nan or infinity, and NumPy's scalars are not JSON: what a round or a snapshot stores
goes through :func:`stored_value` and :func:`jsonable`; what a run's reason says of a half-width
through :func:`half_width_text` (an interval with no finite width is written ``∞``).
"""

from __future__ import annotations

import math

import numpy as np


def stored_value(x: float | None) -> float | None:
    """A value as stored in JSON and in ``Estimate.value``: ``None`` for nan (and for ``None``)."""
    return float(x) if x is not None and math.isfinite(x) else None


def half_width_text(x: float | None) -> str:
    """A half-width as a run's reason writes it: three decimals, or ``∞``."""
    return f"{x:.3f}" if x is not None and math.isfinite(x) else "∞"


def jsonable(value: object) -> object:
    """``value`` with NumPy scalars made Python numbers and non-finite floats ``None``, at any
    depth of dicts, lists and tuples (tuples become lists)."""
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value
