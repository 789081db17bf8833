"""A run's verified items and their labels as the run sees them, for :mod:`.precision`.

With exact labels they are the items' labels. With fallible annotators each score stratum's
sampled items and each group of census items (one per band) are domains with their own rate, given
the annotators' error rates (:meth:`..labels.ItemLabels.in_domains`), so that the precision's
variance can add the labels' and the annotator parameters' uncertainty.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..labels import DomainLabels, ItemLabels

__all__ = ["ANNOTATOR_MODEL", "CENSUS_DOMAINS", "RunLabels"]

ANNOTATOR_MODEL = "annotator-model"
# Census domains of a run: items without a band, then one per band (LOW, MIXED, HIGH).
CENSUS_DOMAINS = 4


@dataclass(frozen=True)
class RunLabels:
    """A run's verified items and their labels as the run sees them: with fallible annotators,
    each score stratum's sampled items and each group of census items (one per band) are domains
    with their own rate (:meth:`..labels.ItemLabels.in_domains`); ``domain`` is each item's,
    the census domains following the strata's."""

    items: np.ndarray
    inclusion: np.ndarray
    strata: np.ndarray
    certain: np.ndarray
    domains: DomainLabels | None
    domain: np.ndarray
    z: np.ndarray
    v: np.ndarray
    shape: tuple[float, float]  # (sensitivity, specificity) of the interval's observation scale

    @classmethod
    def of(
        cls,
        labels: ItemLabels,
        items: np.ndarray,
        pi: np.ndarray,
        k_strata: np.ndarray,
        certain: np.ndarray,
        n_strata: int,
        *,
        census: bool,
        census_group: np.ndarray,
    ) -> RunLabels:
        """``census``: every item of the run is verified, so each counts once (weight 1);
        ``census_group``: the census domain (0-3) of each item."""
        domain = np.where(certain, n_strata + census_group, k_strata).astype(np.int64)
        if not labels.noisy or items.size == 0:
            z = labels.value[items]
            return cls(
                items, pi, k_strata, certain, None, domain, z, np.zeros(items.size), (1.0, 1.0)
            )
        weights = np.where(certain | census, 1.0, 1.0 / pi)
        inclusion = np.where(census, 1.0, np.minimum(pi, 1.0))
        dl = labels.in_domains(
            items, weights, domain, n_strata + CENSUS_DOMAINS, inclusion=inclusion
        )
        return cls(
            items,
            pi,
            k_strata,
            certain,
            dl,
            domain,
            dl.value,
            dl.variance,
            labels.typical_annotator(),
        )

    @property
    def noisy(self) -> bool:
        return self.domains is not None

    @property
    def suffix(self) -> str:
        return f"/{ANNOTATOR_MODEL}" if self.noisy else ""

    def census_variance(self, n: int) -> float:
        """Variance of the census part's correct count over ``n^2`` (judgment noise only)."""
        dl = self.domains
        if dl is None or not self.certain.any():  # not noisy
            return 0.0
        counts = np.bincount(self.domain[self.certain], minlength=dl.rate.size).astype(float)
        return float(dl.rate_variance(np.zeros(dl.rate.size)) @ counts**2) / (n * n)

    def parameter_variance(self, coefficients: np.ndarray) -> float:
        dl = self.domains
        return dl.parameter_variance(coefficients) if dl is not None else 0.0  # noisy

    def item_inflation(self) -> np.ndarray:
        """``1 / (1 - gamma)^2`` of each item's domain."""
        dl = self.domains
        if dl is None:  # not noisy
            return np.ones(self.items.size)
        inflation: np.ndarray = 1.0 / (1.0 - dl.missing[self.domain]) ** 2
        return inflation
