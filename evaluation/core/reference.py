"""Estimators on the reference sample ``Y0`` (a uniform sample of true items, possibly clustered).

``Y0`` is expensive (exhaustive annotation), so it is small; when it comes from whole documents,
items of one document are not independent, and variances here are cluster-robust: they resample
groups, not items (STATISTICS.md §1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .state import ReferenceSample

__all__ = ["ReferenceRatio", "reference_ratio"]


@dataclass(frozen=True)
class ReferenceRatio:
    """A ratio ``sum(numer) / sum(denom)`` over reference items, with a cluster-robust variance.

    Attributes
    ----------
    value : float
        The ratio; ``nan`` when the denominator is 0.
    variance : float
        Linearised, cluster-robust variance (0 when fewer than two groups carry the denominator).
    trials : int
        Number of reference items in the denominator (the binomial size when groups are singletons).
    groups : int
        Number of groups with at least one item in the denominator.
    """

    value: float
    variance: float
    trials: int
    groups: int


def reference_ratio(
    reference: ReferenceSample, numer: np.ndarray, denom: np.ndarray | None = None
) -> ReferenceRatio:
    """Estimate ``P(numer | denom)`` over a reference sample.

    Parameters
    ----------
    reference : ReferenceSample
        The sample, with one group per item.
    numer, denom : numpy.ndarray of bool
        Per reference item: whether it counts in the numerator / denominator. ``numer`` must imply
        ``denom``. ``denom=None`` means every item.

    Notes
    -----
    With ``G`` groups, totals ``a_g`` (numerator) and ``b_g`` (denominator) per group and
    ``r = sum a / sum b``, the variance is ``G / (G - 1) * sum_g (a_g - r b_g)^2 / (sum b)^2``:
    the standard ratio-estimator variance of a cluster sample with replacement of groups. With
    singleton groups it is ``r (1 - r) / (n - 1)``, the binomial variance up to ``n / (n - 1)``.
    """
    numer = np.asarray(numer, dtype=bool)
    denom = np.ones_like(numer) if denom is None else np.asarray(denom, dtype=bool)
    total = int(denom.sum())
    if total == 0:
        return ReferenceRatio(float("nan"), 0.0, 0, 0)
    value = float(numer.sum()) / total
    _, group_index = np.unique(reference.groups, return_inverse=True)
    a = np.bincount(group_index, weights=numer.astype(float))
    b = np.bincount(group_index, weights=denom.astype(float))
    used = b > 0
    n_groups = int(used.sum())
    if n_groups < 2:
        return ReferenceRatio(value, 0.0, total, n_groups)
    resid = a[used] - value * b[used]
    variance = n_groups / (n_groups - 1) * float(resid @ resid) / total**2
    return ReferenceRatio(value, variance, total, n_groups)
