"""Annotator error: a two-class Dawid-Skene model anchored by gold answers.

Every verified label used to be taken as true. Real annotators are wrong 2-15% of the time, and a
wrong "incorrect" moves a precision estimate as much as a real one (docs/STATISTICS.md). This
module estimates, from every judgment a task has collected, each annotator's

* **sensitivity** ``se_a = P(says correct | item correct)`` and
* **specificity** ``sp_a = P(says incorrect | item incorrect)``,

jointly with every judged item's probability of being correct, ``mu_x``. Items are grouped in
*prior classes* (the sampling design passes its union cells: items a run brought to the union in
one score stratum), each with its own rate ``rho_c`` of correct items, so an "incorrect" in a class
that is nearly all correct is doubted and an "incorrect" in a class that is mostly wrong is not.
The class rates share a Beta prior whose parameters are fitted to the classes (empirical Bayes):
with a free rate per class, the answers on items judged once cannot tell "a few correct items"
from "a lower specificity", and the constraint ``rho_c >= 0`` then pushes the specificity up
(measured on febrl4: 0.964 for annotators of 0.95, which inflated the union's correct items by 8%).
Where strata are pure, as they mostly are, the fitted prior is U-shaped and pure classes pin the
error rates.
Gold items (known answers) and items with exact labels enter the annotator parameters with their
true label and are never doubted.

The fit (:mod:`.annotator_fit`) is the posterior mode (EM, Dempster, Laird and Rubin 1977) in
logit coordinates under Beta priors, which keep the parameters away from 0 and 1 and favour
annotators better than chance (no label switching). Its uncertainty is the inverse of the
observed information (Louis 1982): the complete-data information minus the information the
unknown labels take away. Both are returned so that estimators can propagate label uncertainty
(``mu_x (1 - mu_x)`` per item, independent given the parameters) and parameter uncertainty (shared
by every item an annotator judged: a systematic term) into their intervals; see :mod:`..labels`.

Assumptions: answers are independent across annotators given the true label; an annotator's
error rates are the same on every item (no item-level difficulty); the classes' rates are
exchangeable priors. docs/STATISTICS.md measures what happens when they fail.

References
----------
Dawid, A. P. and Skene, A. M. (1979). Maximum likelihood estimation of observer error-rates using
the EM algorithm. Journal of the Royal Statistical Society C 28(1), 20-28.
Louis, T. A. (1982). Finding the observed information matrix when using the EM algorithm. Journal
of the Royal Statistical Society B 44(2), 226-233.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import sparse, special

from .annotator_fit import (
    AnnotatorPrior,
    FitInput,
    complete_information,
    covariance,
    em_fit,
    evidence,
    score_differences,
)

__all__ = ["AnnotatorPrior", "AnnotatorSummary", "LabelModel", "fit_label_model"]


@dataclass(frozen=True)
class AnnotatorSummary:
    """One annotator's estimated error rates, with intervals (Laplace, logit scale)."""

    annotator: int
    sensitivity: float
    sensitivity_low: float
    sensitivity_high: float
    specificity: float
    specificity_low: float
    specificity_high: float
    judgments: int
    gold_judgments: int

    @property
    def weight(self) -> float:
        """Log-likelihood ratio an answer carries, ``(log se/(1-sp) - log (1-se)/sp) / 2``:
        0 for a spammer (``se + sp = 1``), whatever their volume."""
        se, sp = self.sensitivity, self.specificity
        return 0.5 * (math.log(se / (1 - sp)) - math.log((1 - se) / sp))


@dataclass(frozen=True)
class LabelModel:
    """The fitted model: item posteriors, annotator and class parameters, their covariance.

    Attributes
    ----------
    items : numpy.ndarray
        Sorted ids of the *uncertain* items: judged at least once, no exact label.
    mean : numpy.ndarray
        ``mu_x = P(item correct | all judgments)`` per uncertain item.
    evidence : numpy.ndarray
        ``lambda_x``, the answers' log-likelihood ratio (correct vs incorrect) per uncertain item:
        ``logit(mu_x) = logit(rate of its class) + lambda_x``.
    annotators : numpy.ndarray
        Sorted annotator ids seen in the judgments.
    sensitivity, specificity : numpy.ndarray
        Posterior modes (logit scale) per annotator.
    classes : numpy.ndarray
        Prior class ids with at least one uncertain item; ``rate`` their correct share.
    rate_prior : tuple of float
        The Beta prior of the class rates, as fitted.
    covariance : numpy.ndarray
        Covariance of the parameters ``eta = (logit se_a..., logit sp_a..., logit rho_c...)``
        (inverse observed information), shape ``(P, P)``.
    complete_information : numpy.ndarray
        The diagonal of their complete-data information (as if every label were known), ``(P,)``.
    scores : scipy.sparse.csr_matrix
        ``d_x = d logit(mu_x) / d eta`` per uncertain item, shape ``(len(items), P)``; the
        derivative of ``mu_x`` is ``mu_x (1 - mu_x) d_x``.
    iterations : int
        EM iterations used; ``converged`` whether the tolerance was met.
    """

    items: np.ndarray
    mean: np.ndarray
    evidence: np.ndarray
    annotators: np.ndarray
    sensitivity: np.ndarray
    specificity: np.ndarray
    classes: np.ndarray
    rate: np.ndarray
    rate_prior: tuple[float, float]
    covariance: np.ndarray
    complete_information: np.ndarray
    scores: sparse.csr_matrix
    judgments_per_annotator: np.ndarray
    gold_per_annotator: np.ndarray
    iterations: int
    converged: bool
    method: str = "dawid-skene-2class/em-map/louis"

    @property
    def n_parameters(self) -> int:
        return int(self.covariance.shape[0])

    @property
    def n_annotator_parameters(self) -> int:
        """The first ``2 * annotators`` parameters: logit sensitivities, then specificities."""
        return 2 * int(self.annotators.size)

    def summaries(self, *, level: float = 0.95) -> list[AnnotatorSummary]:
        """Each annotator's sensitivity and specificity with ``level`` intervals."""
        z = float(special.ndtri(0.5 + level / 2.0))
        n = self.annotators.size
        var = np.diag(self.covariance)
        out = []
        for k in range(n):
            se_l, se_h = _logit_interval(self.sensitivity[k], var[k], z)
            sp_l, sp_h = _logit_interval(self.specificity[k], var[n + k], z)
            out.append(
                AnnotatorSummary(
                    int(self.annotators[k]),
                    float(self.sensitivity[k]),
                    se_l,
                    se_h,
                    float(self.specificity[k]),
                    sp_l,
                    sp_h,
                    int(self.judgments_per_annotator[k]),
                    int(self.gold_per_annotator[k]),
                )
            )
        return out

    def parameter_variance(self, gradient: np.ndarray) -> float:
        """``g' Sigma g`` for a gradient ``g`` of some estimate with respect to ``eta``."""
        return float(gradient @ self.covariance @ gradient)

    def latent_covariance(self) -> np.ndarray:
        """The share of the annotator parameters' covariance that the unknown labels add: the
        inverse observed information minus the inverse complete-data information (Louis 1982),
        shape ``(2A, 2A)``. Large where answers cannot tell an item's label from an annotator's
        error (every item judged once); near 0 where the labels are all but certain."""
        k = self.n_annotator_parameters
        added = self.covariance[:k, :k] - np.diag(1.0 / self.complete_information[:k])
        values, vectors = np.linalg.eigh(0.5 * (added + added.T))
        latent: np.ndarray = (vectors * np.maximum(values, 0.0)) @ vectors.T
        return latent


def _logit_interval(p: float, var: float, z: float) -> tuple[float, float]:
    centre = special.logit(p)
    half = z * math.sqrt(max(var, 0.0))
    return float(special.expit(centre - half)), float(special.expit(centre + half))


def fit_label_model(
    items: npt.ArrayLike,
    annotators: npt.ArrayLike,
    says_correct: npt.ArrayLike,
    *,
    item_class: npt.ArrayLike,
    exact_items: npt.ArrayLike | None = None,
    exact_labels: npt.ArrayLike | None = None,
    prior: AnnotatorPrior | None = None,
    max_iter: int = 2000,
    tol: float = 1e-9,
) -> LabelModel:
    """Fit the two-class Dawid-Skene model to a task's judgments.

    Parameters
    ----------
    items, annotators : array_like of int
        One entry per judgment: the item judged and who judged it.
    says_correct : array_like of bool
        The answer ("correct" is ``True``). Skips ("can't tell") are not judgments.
    item_class : array_like of int
        Prior class of every item id (indexed by item; ``-1``: a class of its own for all
        unclassed items). Only uncertain items use it.
    exact_items, exact_labels : array_like, optional
        Items whose label is known (gold answers, labels from an exact source). Their judgments
        measure the annotators with the true label and they are never doubted.
    prior : AnnotatorPrior, optional
    max_iter, tol : int, float
        EM stops when no item posterior moves by more than ``tol``.

    Returns
    -------
    LabelModel

    Notes
    -----
    The M-step takes the posterior mode in logit coordinates, ``se_a = (a + S_a) / (a + b + N_a)``
    with ``S_a`` the expected correct-answers-on-correct-items and ``N_a`` the expected judgments
    on correct items, so no parameter reaches 0 or 1. The observed information is
    ``I = diag(complete information) - D' diag(mu (1 - mu)) D`` with ``D`` the per-item
    difference of the complete-data score between the two labels (Louis 1982); ``D`` is also the
    derivative of each item's log posterior odds.
    """
    prior = AnnotatorPrior() if prior is None else prior
    items, annotators, y, item_class, exact_items, exact_labels = _checked_judgments(
        items, annotators, says_correct, item_class, exact_items, exact_labels
    )
    ann_ids, ann = np.unique(annotators, return_inverse=True)
    is_exact, truth_of_exact = _known_labels(items, exact_items, exact_labels)
    data, unc_items, class_ids = _split_judgments(
        items, ann, ann_ids.size, y, item_class, is_exact, truth_of_exact, prior
    )
    fit = em_fit(data, prior, max_iter=max_iter, tol=tol)
    scores = score_differences(fit.se, fit.sp, data)
    complete = complete_information(fit, data)
    return LabelModel(
        items=unc_items,
        mean=fit.mu,
        evidence=evidence(fit.se, fit.sp, data),
        annotators=ann_ids,
        sensitivity=fit.se,
        specificity=fit.sp,
        classes=class_ids,
        rate=fit.rho,
        rate_prior=(float(fit.rate_prior[0]), float(fit.rate_prior[1])),
        covariance=covariance(fit, data, scores, complete),
        complete_information=complete,
        scores=scores,
        judgments_per_annotator=np.bincount(ann, minlength=ann_ids.size),
        gold_per_annotator=np.bincount(ann[is_exact], minlength=ann_ids.size),
        iterations=fit.iterations,
        converged=fit.converged,
    )


def _checked_judgments(
    items: npt.ArrayLike,
    annotators: npt.ArrayLike,
    says_correct: npt.ArrayLike,
    item_class: npt.ArrayLike,
    exact_items: npt.ArrayLike | None,
    exact_labels: npt.ArrayLike | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The inputs of :func:`fit_label_model` as flat arrays, or :class:`ValueError`."""
    items = np.asarray(items, dtype=np.int64).ravel()
    annotators = np.asarray(annotators, dtype=np.int64).ravel()
    y = np.asarray(says_correct, dtype=bool).ravel()
    if not (items.shape == annotators.shape == y.shape):
        raise ValueError("items, annotators and says_correct must have the same length")
    item_class = np.asarray(item_class, dtype=np.int64)
    exact_items = (
        np.empty(0, np.int64)
        if exact_items is None
        else np.asarray(exact_items, dtype=np.int64).ravel()
    )
    exact_labels = (
        np.empty(0, bool) if exact_labels is None else np.asarray(exact_labels, dtype=bool).ravel()
    )
    if exact_items.shape != exact_labels.shape:
        raise ValueError("exact_items and exact_labels must have the same length")
    if items.size and (items.min() < 0 or items.max() >= item_class.size):
        raise ValueError("every judged item needs a prior class (item_class is too short)")
    return items, annotators, y, item_class, exact_items, exact_labels


def _known_labels(
    items: np.ndarray, exact_items: np.ndarray, exact_labels: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per judgment: whether its item's label is known (exact), and that label."""
    exact_order = np.argsort(exact_items, kind="stable")
    exact_sorted, exact_sorted_labels = exact_items[exact_order], exact_labels[exact_order]
    pos = np.searchsorted(exact_sorted, items)
    pos[pos >= exact_sorted.size] = 0
    has_exact = exact_sorted.size > 0
    is_exact = (exact_sorted[pos] == items) if has_exact else np.zeros(items.size, bool)
    truth_of_exact = np.where(
        is_exact, exact_sorted_labels[pos] if exact_sorted.size else False, False
    )
    return is_exact, truth_of_exact


def _split_judgments(
    items: np.ndarray,
    ann: np.ndarray,
    n_ann: int,
    y: np.ndarray,
    item_class: np.ndarray,
    is_exact: np.ndarray,
    truth_of_exact: np.ndarray,
    prior: AnnotatorPrior,
) -> tuple[FitInput, np.ndarray, np.ndarray]:
    """What EM iterates over (:class:`FitInput`), the uncertain items and their classes."""
    unc_items, row = np.unique(items[~is_exact], return_inverse=True)
    n_unc = unc_items.size
    raw_class = item_class[unc_items]
    class_ids, cls = np.unique(raw_class, return_inverse=True)
    n_cls = class_ids.size
    # Judgments on uncertain items (u) and on items with a known label (k).
    u = ~is_exact
    u_ann, u_y, u_row = ann[u], y[u], row
    k_ann, k_y, k_f = ann[is_exact], y[is_exact], truth_of_exact[is_exact].astype(float)

    a1, b1 = prior.sensitivity
    a0, b0 = prior.specificity
    # Known-label judgments are fixed counts for every iteration.
    data = FitInput(
        ann=u_ann,
        says=u_y,
        row=u_row,
        cls=cls,
        n_items=n_unc,
        n_annotators=n_ann,
        n_classes=n_cls,
        class_size=np.bincount(cls, minlength=n_cls).astype(float),
        known_s1=np.bincount(k_ann, weights=k_f * k_y, minlength=n_ann),
        known_n1=np.bincount(k_ann, weights=k_f, minlength=n_ann),
        known_s0=np.bincount(k_ann, weights=(1 - k_f) * ~k_y, minlength=n_ann),
        known_n0=np.bincount(k_ann, weights=1 - k_f, minlength=n_ann),
        sensitivity_prior=(a1, b1),
        specificity_prior=(a0, b0),
    )
    return data, unc_items, class_ids
