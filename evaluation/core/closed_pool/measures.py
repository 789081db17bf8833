"""Binary-classification measures of a closed pool as functions of two estimated totals.

On a closed pool every run labels every item, so a run's predicted positives ``pp`` and the pool
size ``n`` are known; only two totals are unknown: its true positives ``tp`` (positives among its
predicted positives) and its false negatives ``fn`` (positives among its predicted negatives).
Every measure here is a smooth function ``g(tp, fn; pp, n)`` (paper 000, Table 1, with the known
parts of ``R`` substituted), which is what the estimators need: a value and a gradient.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ..measures import CLOSED_POOL_MEASURES

__all__ = [
    "CLOSED_POOL_MEASURES",
    "check_measures",
    "f_beta_label",
    "measure_beta",
    "measure_gradient",
    "measure_range",
    "measure_value",
    "unknown_measure",
]


def measure_beta(name: str, beta: float) -> float:
    """The ``beta`` measure ``name`` is computed with in a task whose F-beta has ``beta``:
    ``beta`` for ``"fbeta"``, 1 for ``"f1"`` (F1 is F-beta at 1), unused by the others."""
    return float(beta) if name == "fbeta" else 1.0


def f_beta_label(beta: float) -> str:
    """How F-beta is named on a board: ``"F0.5"``, ``"F2"`` (``"F1"`` at ``beta = 1``)."""
    return f"F{float(beta):g}"


def measure_range(name: str) -> tuple[float, float]:
    """The values measure ``name`` can take: ``(-1, 1)`` for MCC, ``(0, 1)`` for the others."""
    if name not in CLOSED_POOL_MEASURES:
        raise unknown_measure(name)
    return (-1.0, 1.0) if name == "mcc" else (0.0, 1.0)


def unknown_measure(name: str) -> KeyError:
    """The error for a measure ``name`` that is not one of :data:`CLOSED_POOL_MEASURES`."""
    return KeyError(f"unknown measure {name!r}; known: {', '.join(CLOSED_POOL_MEASURES)}")


def check_measures(measures: Sequence[str]) -> None:
    """Raise ``ValueError`` naming the names of ``measures`` that are not closed-pool measures
    (what a design's ``estimate`` is asked for)."""
    unknown = [m for m in measures if m not in CLOSED_POOL_MEASURES]
    if unknown:
        raise ValueError(f"unknown measures {unknown}; known: {', '.join(CLOSED_POOL_MEASURES)}")


def measure_value(
    name: str,
    tp: npt.ArrayLike,
    fn: npt.ArrayLike,
    *,
    pp: npt.ArrayLike,
    n: npt.ArrayLike,
    beta: float = 1.0,
) -> np.ndarray:
    """The measure ``name`` at totals ``tp`` and ``fn`` (arrays broadcast); ``nan`` where 0/0.

    Parameters
    ----------
    name : str
        One of :data:`CLOSED_POOL_MEASURES`. ``"fbeta"`` and ``"f1"`` are one function, the
        F-beta score ``(1 + b²) tp / (pp + b² (tp + fn))`` with ``b = beta`` (a design showing
        both passes ``beta = 1`` for ``"f1"``: :func:`measure_beta`).
    tp, fn : array_like
        True positives and false negatives (estimated totals; need not be integers).
    pp, n : array_like
        The run's predicted positives and the pool size (known).
    beta : float, keyword-only
        Weight of recall in the F score.

    References
    ----------
    N. G. Marchant and B. I. P. Rubinstein, "Needle in a haystack: label-efficient evaluation
    under extreme class imbalance", KDD 2021, Table 1.
    """
    tp, fn, pp, n = (np.asarray(a, dtype=float) for a in (tp, fn, pp, n))
    positives = tp + fn
    fp = pp - tp
    tn = n - pp - fn
    out: np.ndarray
    with np.errstate(divide="ignore", invalid="ignore"):
        if name == "precision":
            out = tp / pp
        elif name == "recall":
            out = tp / positives
        elif name in ("f1", "fbeta"):
            b2 = beta * beta
            out = (1 + b2) * tp / (pp + b2 * positives)
        elif name == "accuracy":
            out = (tp + tn) / n
        elif name == "balanced_accuracy":
            out = 0.5 * (tp / positives + tn / (n - positives))
        elif name == "mcc":
            out = (tp * tn - fp * fn) / np.sqrt(pp * (n - pp) * positives * (n - positives))
        else:
            raise unknown_measure(name)
    return out


def measure_gradient(
    name: str,
    tp: npt.ArrayLike,
    fn: npt.ArrayLike,
    *,
    pp: npt.ArrayLike,
    n: npt.ArrayLike,
    beta: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Partial derivatives of :func:`measure_value` with respect to ``tp`` and ``fn``.

    Central differences of a relative step: exact enough for the delta method and for the
    planner's allocation, and one definition of each measure instead of two.
    """
    tp, fn = np.asarray(tp, dtype=float), np.asarray(fn, dtype=float)
    h_tp = 1e-6 * np.maximum(np.abs(tp), 1.0)
    h_fn = 1e-6 * np.maximum(np.abs(fn), 1.0)

    def at(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return measure_value(name, a, b, pp=pp, n=n, beta=beta)

    d_tp = (at(tp + h_tp, fn) - at(tp - h_tp, fn)) / (2 * h_tp)
    d_fn = (at(tp, fn + h_fn) - at(tp, fn - h_fn)) / (2 * h_fn)
    return d_tp, d_fn
