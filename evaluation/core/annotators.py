"""Annotator error: a two-class Dawid-Skene model anchored by gold answers.

Every verified label used to be taken as true. Real annotators are wrong 2-15% of the time, and a
wrong "incorrect" moves a precision estimate as much as a real one (docs/STATISTICS.md). This
module estimates, from every judgment a task has collected, each annotator's

* **sensitivity** ``se_a = P(says correct | item correct)`` and
* **specificity** ``sp_a = P(says incorrect | item incorrect)``,

jointly with every judged item's probability of being correct, ``mu_x``. Items are grouped in
*prior classes* (the sampling design passes its pool cells: items a run brought to the pool in
one score stratum), each with its own rate ``rho_c`` of correct items, so an "incorrect" in a class
that is nearly all correct is doubted and an "incorrect" in a class that is mostly wrong is not.
The class rates share a Beta prior whose parameters are fitted to the classes (empirical Bayes):
with a free rate per class, the answers on items judged once cannot tell "a few correct items"
from "a lower specificity", and the constraint ``rho_c >= 0`` then pushes the specificity up
(measured on febrl4: 0.964 for annotators of 0.95, which inflated the pool's correct items by 8%).
Where strata are pure, as they mostly are, the fitted prior is U-shaped and pure classes pin the
error rates.
Gold items (known answers) and items with exact labels enter the annotator parameters with their
true label and are never doubted.

The fit is the posterior mode (EM, Dempster, Laird and Rubin 1977) in logit coordinates under
Beta priors, which keep the parameters away from 0 and 1 and favour annotators better than chance
(no label switching). Its uncertainty is the inverse of the observed information (Louis 1982):
the complete-data information minus the information the unknown labels take away. Both are
returned so that estimators can propagate label uncertainty (``mu_x (1 - mu_x)`` per item,
independent given the parameters) and parameter uncertainty (shared by every item an annotator
judged: a systematic term) into their intervals; see :mod:`..labels`.

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
from functools import cached_property

import numpy as np
import numpy.typing as npt
from scipy import sparse, special

__all__ = ["AnnotatorPrior", "AnnotatorSummary", "LabelModel", "fit_label_model"]


@dataclass(frozen=True)
class AnnotatorPrior:
    """Beta priors of the model, as ``(a, b)`` pseudo-counts of (agree, disagree) answers.

    The defaults put each annotator's sensitivity and specificity at 0.9 before any answer, as
    much as five answers weigh: annotators of a task are mostly good, a prior far below that
    (2/3 was tried) drags the error rates up wherever the data say little and over-corrects
    every rate (measured: +0.018 on a domain of rate 0.6 with annotators of 0.9), and five
    answers are nothing next to the hundreds a spammer gives before it matters. The class rates'
    Beta prior is fitted to the data when there are at least ``fit_rate_prior_from`` classes
    (``rate`` is then where the fit starts and what a normal hyperprior pulls its logarithms
    towards), and is ``rate`` otherwise.
    """

    sensitivity: tuple[float, float] = (4.5, 0.5)
    specificity: tuple[float, float] = (4.5, 0.5)
    rate: tuple[float, float] = (1.0, 1.0)
    fit_rate_prior_from: int = 3

    def __post_init__(self) -> None:
        for name in ("sensitivity", "specificity", "rate"):
            a, b = getattr(self, name)
            if not (a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b)):
                raise ValueError(f"{name} prior must be two positive numbers, got {(a, b)!r}")


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
    fit = _em(data, prior, max_iter=max_iter, tol=tol)
    scores = _score_differences(fit.se, fit.sp, data)
    return LabelModel(
        items=unc_items,
        mean=fit.mu,
        evidence=_evidence(fit.se, fit.sp, data),
        annotators=ann_ids,
        sensitivity=fit.se,
        specificity=fit.sp,
        classes=class_ids,
        rate=fit.rho,
        rate_prior=(float(fit.rate_prior[0]), float(fit.rate_prior[1])),
        covariance=_covariance(fit, data, scores),
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
) -> tuple[_Judgments, np.ndarray, np.ndarray]:
    """What EM iterates over (:class:`_Judgments`), the uncertain items and their classes."""
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
    data = _Judgments(
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


@dataclass(frozen=True)
class _Fit:
    """The posterior mode EM reached: item posteriors, annotator and class parameters."""

    mu: np.ndarray
    se: np.ndarray
    sp: np.ndarray
    rho: np.ndarray
    rate_prior: tuple[float, float]
    iterations: int
    converged: bool


def _em(data: _Judgments, prior: AnnotatorPrior, *, max_iter: int, tol: float) -> _Fit:
    """EM from each item's share of "correct" answers until no posterior moves by ``tol``."""
    ar, br = prior.rate
    n_unc, cls, n_cls = data.n_items, data.cls, data.n_classes
    n_class = data.class_size
    # Start from each item's share of "correct" answers, shrunk towards 1/2.
    yes = np.bincount(data.row, weights=data.says, minlength=n_unc)
    cnt = np.bincount(data.row, minlength=n_unc).astype(float)
    mu = (yes + 0.5) / (cnt + 1.0)
    converged = n_unc == 0
    iterations = 0
    fit_prior = n_cls >= prior.fit_rate_prior_from
    rate_prior = (ar, br)
    for _ in range(max_iter):
        iterations += 1
        if fit_prior:
            rate_prior = _fit_rate_prior(
                np.bincount(cls, weights=mu, minlength=n_cls),
                n_class,
                rate_prior,
                (ar, br),
                steps=2,
            )
        se, sp, rho = _m_step(mu, data, rate_prior)
        new_mu = _posterior(se, sp, rho, data)
        change = float(np.max(np.abs(new_mu - mu))) if n_unc else 0.0
        mu = new_mu
        if change <= tol:
            converged = True
            break
    se, sp, rho = _m_step(mu, data, rate_prior)
    mu = _posterior(se, sp, rho, data)
    return _Fit(mu, se, sp, rho, rate_prior, iterations, converged)


def _covariance(fit: _Fit, data: _Judgments, scores: sparse.csr_matrix) -> np.ndarray:
    """Covariance of the parameters: the inverse of the observed information (Louis 1982),
    the complete-data information minus what the unknown labels take away."""
    a1, b1 = data.sensitivity_prior
    a0, b0 = data.specificity_prior
    ar, br = fit.rate_prior
    se, sp, rho, mu = fit.se, fit.sp, fit.rho, fit.mu
    n_ann = data.n_annotators
    n1 = np.bincount(data.ann, weights=mu[data.row], minlength=n_ann) + data.known_n1
    n0 = np.bincount(data.ann, weights=1 - mu[data.row], minlength=n_ann) + data.known_n0
    complete = np.concatenate(
        [
            se * (1 - se) * (a1 + b1 + n1),
            sp * (1 - sp) * (a0 + b0 + n0),
            rho * (1 - rho) * (ar + br + data.class_size),
        ]
    )
    weights = mu * (1 - mu)
    missing = (scores.T @ sparse.diags(weights) @ scores).toarray()
    information = np.diag(complete) - missing
    # A class rate at its bound is where the U-shaped prior puts a pure class: its logit has no
    # curvature to speak of, so it is held fixed (its items' labels are what the answers say).
    free = np.concatenate(
        [np.ones(2 * n_ann, bool), (rho > 2 * _RATE_FLOOR) & (rho < 1 - 2 * _RATE_FLOOR)]
    )
    covariance: np.ndarray = np.zeros_like(information)
    covariance[np.ix_(free, free)] = _inverse_information(
        information[np.ix_(free, free)], complete[free], 2 * n_ann
    )
    return covariance


@dataclass(frozen=True)
class _Judgments:
    """What EM iterates over and never changes: the judgments on uncertain items (annotator,
    answer, item row, the item's class), the fixed counts from items with a known label, and
    the annotator priors as ``(a, b)`` pseudo-counts."""

    ann: np.ndarray
    says: np.ndarray
    row: np.ndarray
    cls: np.ndarray
    n_items: int
    n_annotators: int
    n_classes: int
    class_size: np.ndarray
    known_s1: np.ndarray
    known_n1: np.ndarray
    known_s0: np.ndarray
    known_n0: np.ndarray
    sensitivity_prior: tuple[float, float]
    specificity_prior: tuple[float, float]

    # Fixed for every EM iteration, so computed once (the same numbers the iteration would use).
    @cached_property
    def says_correct(self) -> np.ndarray:
        """``says`` as 1.0 / 0.0."""
        return self.says.astype(float)

    @cached_property
    def says_incorrect(self) -> np.ndarray:
        """``~says`` as 1.0 / 0.0."""
        return (~self.says).astype(float)

    @cached_property
    def answer(self) -> np.ndarray:
        """Per judgment, its row in :func:`_evidence`'s table of log-likelihood ratios."""
        answer: np.ndarray = 2 * self.ann + self.says
        return answer


def _m_step(
    mu: np.ndarray, data: _Judgments, rate_prior: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sensitivities, specificities and class rates given the items' posteriors ``mu``."""
    a1, b1 = data.sensitivity_prior
    a0, b0 = data.specificity_prior
    ar, br = rate_prior
    n_ann, n_class = data.n_annotators, data.class_size
    m = mu[data.row]
    not_m = 1 - m
    s1 = np.bincount(data.ann, weights=m * data.says_correct, minlength=n_ann) + data.known_s1
    n1 = np.bincount(data.ann, weights=m, minlength=n_ann) + data.known_n1
    # Not ``+=``: with no uncertain judgment (gold answers only) bincount returns integers.
    s0 = np.bincount(data.ann, weights=not_m * data.says_incorrect, minlength=n_ann) + data.known_s0
    n0 = np.bincount(data.ann, weights=not_m, minlength=n_ann) + data.known_n0
    se = (a1 + s1) / (a1 + b1 + n1)
    sp = (a0 + s0) / (a0 + b0 + n0)
    correct = np.bincount(data.cls, weights=mu, minlength=data.n_classes)
    # Large classes: the mode on the probability scale (a pure class goes to its bound); small
    # ones: the posterior mean, which the data of one or two items cannot push to a bound.
    rho = np.where(
        n_class >= _MODE_FROM,
        _beta_mode(ar + correct, br + n_class - correct),
        (ar + correct) / (ar + br + n_class),
    )
    rho = np.clip(rho, _RATE_FLOOR, 1.0 - _RATE_FLOOR)
    return se, sp, rho


# Class rates stay this far inside (0, 1), where their logit is finite.
_RATE_FLOOR = 1e-4
# Items a class needs before its rate is the prior's mode rather than its posterior mean.
_MODE_FROM = 20


def _beta_mode(alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Mode of Beta(alpha, beta) on the probability scale.

    The class rates' prior is fitted to the classes and is U-shaped where classes are pure:
    its density grows without bound at 0 and 1, and a class whose answers are explained by
    errors alone goes to the bound. (A mode on the logit scale would always stay away from the
    bounds, and let a pure class absorb false answers as a few correct items instead: the
    specificity then drifts up, measured +0.024 with 30 pure classes.)
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        inner = (alpha - 1.0) / (alpha + beta - 2.0)
    mode = np.where(
        (alpha > 1) & (beta > 1),
        inner,
        np.where(alpha <= 1, np.where((beta <= 1) & (beta < alpha), 1.0, 0.0), 1.0),
    )
    return np.clip(mode, _RATE_FLOOR, 1.0 - _RATE_FLOOR)


def _fit_rate_prior(
    correct: np.ndarray,
    size: np.ndarray,
    start: tuple[float, float],
    centre: tuple[float, float],
    steps: int = 8,
) -> tuple[float, float]:
    """Beta(a, b) prior of the class rates by maximum marginal likelihood (beta-binomial with the
    expected counts), with a normal hyperprior on ``log a``, ``log b`` around ``centre``
    and bounds that keep it proper: a few Newton steps from ``start`` (each EM iteration moves
    the counts a little). Runs once per EM iteration on a handful of classes, so the 2 x 2
    algebra is done in plain floats and each special function is called once per step."""
    x0, x1 = math.log(start[0]), math.log(start[1])
    c0, c1 = math.log(centre[0]), math.log(centre[1])
    hyper = _RATE_HYPERPRIOR
    lo, hi = math.log(_RATE_PRIOR_BOUNDS[0]), math.log(_RATE_PRIOR_BOUNDS[1])
    wrong = size - correct
    m = correct.size
    for _ in range(steps):
        a, b = math.exp(x0), math.exp(x1)
        s = a + b
        n_s = size + s
        args = np.concatenate([correct + a, wrong + b, n_s, [a, b, s]])
        dg = special.digamma(args)
        tg = special.zeta(2.0, args)  # the trigamma function
        dg_a, dg_b, dg_s = dg[3 * m :]
        tg_a, tg_b, tg_s = tg[3 * m :]
        g0 = a * float(np.sum(dg[:m] - dg_a - dg[2 * m : 3 * m] + dg_s)) - hyper * (x0 - c0)
        g1 = b * float(np.sum(dg[m : 2 * m] - dg_b - dg[2 * m : 3 * m] + dg_s)) - hyper * (x1 - c1)
        common = float(np.sum(tg_s - tg[2 * m : 3 * m]))
        haa = float(np.sum(tg[:m] - tg_a)) + common
        hbb = float(np.sum(tg[m : 2 * m] - tg_b)) + common
        h00 = a * a * haa + g0 + hyper * (x0 - c0) - hyper
        h11 = b * b * hbb + g1 + hyper * (x1 - c1) - hyper
        h01 = a * b * common
        det = h00 * h11 - h01 * h01
        if det == 0.0 or not math.isfinite(det):
            break
        s0, s1 = (h11 * g0 - h01 * g1) / det, (h00 * g1 - h01 * g0) / det
        if not (math.isfinite(s0) and math.isfinite(s1)) or not (h00 < 0.0 and det > 0.0):
            s0, s1 = -0.1 * g0, -0.1 * g1  # not concave here: a small ascent step instead
        s0, s1 = min(max(s0, -1.0), 1.0), min(max(s1, -1.0), 1.0)
        x0, x1 = min(max(x0 - s0, lo), hi), min(max(x1 - s1, lo), hi)
        if max(abs(s0), abs(s1)) < 1e-8:
            break
    return math.exp(x0), math.exp(x1)


_RATE_PRIOR_BOUNDS = (0.02, 200.0)
# Precision of the normal hyperprior on ``log a`` and ``log b`` (sd 0.71: ``a`` and ``b`` within
# a factor of 4 of the centre a priori). Two parameters fitted to a handful of class rates are
# mostly chance: with four classes and a precision of 0.25 the fit came out U-shaped
# (``min(a, b)`` 0.12, median 0.27), and its mode at 0 trapped a class of rate 0.24 there (its
# correct answers then taken for the annotators' errors: a specificity of 0.97 estimated at
# 0.81-0.86). Dozens of classes outweigh this hyperprior; a handful do not.
_RATE_HYPERPRIOR = 2.0


def _evidence(se: np.ndarray, sp: np.ndarray, data: _Judgments) -> np.ndarray:
    """``lambda_x``: the sum of each answer's log-likelihood ratio, correct vs incorrect.

    The ratio depends only on the annotator and the answer: a table of ``2 x annotators`` values
    is gathered once per judgment (this runs at every EM iteration over every judgment)."""
    table = np.stack([np.log1p(-se) - np.log(sp), np.log(se) - np.log1p(-sp)], axis=1).ravel()
    llr = table[data.answer]
    return np.bincount(data.row, weights=llr, minlength=data.n_items)


def _posterior(se: np.ndarray, sp: np.ndarray, rho: np.ndarray, data: _Judgments) -> np.ndarray:
    """``mu_x`` given the parameters: class prior odds times each answer's likelihood ratio."""
    if data.n_items == 0:
        return np.zeros(0)
    log_odds = special.logit(rho)[data.cls] + _evidence(se, sp, data)
    mu: np.ndarray = special.expit(log_odds)
    return mu


def _score_differences(se: np.ndarray, sp: np.ndarray, data: _Judgments) -> sparse.csr_matrix:
    """``D``: per uncertain item, complete-data score (label correct) minus (label incorrect)."""
    u_ann, u_row, cls = data.ann, data.row, data.cls
    n_unc, n_ann, n_cls = data.n_items, data.n_annotators, data.n_classes
    yf = data.says_correct
    rows = np.concatenate([u_row, u_row, np.arange(n_unc)])
    cols = np.concatenate([u_ann, n_ann + u_ann, 2 * n_ann + cls])
    vals = np.concatenate([yf - se[u_ann], yf - 1.0 + sp[u_ann], np.ones(n_unc)])
    return sparse.csr_matrix((vals, (rows, cols)), shape=(n_unc, 2 * n_ann + n_cls))


def _inverse_information(information: np.ndarray, complete: np.ndarray, k: int) -> np.ndarray:
    """Inverse of the observed information; eigenvalues clipped from below for safety.

    The first ``k`` parameters are the annotators'; the others are class rates, whose block is
    diagonal (an item belongs to one class), so the inverse goes through the ``k x k`` Schur
    complement ``S = A - B D^-1 B'``: its cost grows with the classes, not with their square
    times the annotators' (a task of 100 runs has 400 classes).

    At the posterior mode the information is positive definite (the priors see to that); rounding
    can leave tiny negative eigenvalues when a parameter is nearly unidentified, which are
    clipped to a small share of the complete-data information (a large, not a negative,
    variance).
    """
    if information.size == 0:
        return information.copy()
    floor = 1e-6 * float(np.min(complete))
    sym = 0.5 * (information + information.T)
    a, b = sym[:k, :k], sym[:k, k:]
    d = np.maximum(np.diag(sym)[k:], floor)
    bd = b / d
    schur = a - bd @ b.T
    values, vectors = np.linalg.eigh(0.5 * (schur + schur.T))
    s_inv = (vectors / np.maximum(values, floor)) @ vectors.T
    cross = -s_inv @ bd
    out: np.ndarray = np.empty_like(sym)
    out[:k, :k] = s_inv
    out[:k, k:] = cross
    out[k:, :k] = cross.T
    out[k:, k:] = bd.T @ s_inv @ bd
    out[k:, k:][np.diag_indices(d.size)] += 1.0 / d
    return out
