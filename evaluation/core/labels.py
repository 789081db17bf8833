"""What every estimator uses of a verified item: its label's value and how uncertain it is.

With exact labels (a perfect oracle, gold items) a verified item's label ``f_x`` is 0 or 1 and every
estimator is what it always was. With fallible annotators, the annotator model
(:mod:`.annotators`) gives each item the log-likelihood ratio ``lambda_x`` of its answers, and an
estimator of some *domain* (a run's score stratum, the items a run verified with certainty, the
union) replaces ``f_x`` by the item's posterior with the domain's own rate ``r_d`` as the prior,
``z_x = expit(logit r_d + lambda_x)``, where ``r_d`` is the maximum-likelihood rate given the
annotators' error rates (the weighted EM fixed point ``r_d = sum_d w z / sum_d w``). Then
``sum_d w z`` estimates the domain's correct items consistently however mixed the domain is: for
any item, ``r E[z | correct] + (1 - r) E[z | incorrect] = r``, provided every item's answers are
collected the same way, by a rule that looks only at the answers themselves (one more judgment
for every item whose answers so far are a given pattern, :mod:`.designs.second_looks`). That is
the rate corrected for misclassification (Rogan and Gladen 1978), for any mix of annotators and
judgments. A further look asked *because* of an item's context (an "incorrect" in a run that is
nearly all correct) breaks the identity for other domains (measured on febrl4: +0.04 on runs of
precision 0.8), which is why looks follow answer patterns, task-wide.

**Variance.** Each domain's rate is an M-estimator: its sandwich variance is
``(sum w^2 (1 - pi) (z - r)^2 + sum w^2 pi (1 - gamma) v) / (W (1 - gamma))^2`` with ``gamma``
the share of the domain's information the labels' uncertainty takes (the fraction of missing
information, from ``dz / d logit r``) and ``v = z (1 - z)`` (its judgment noise is
``(1 - gamma) v`` on average). For a census the design term vanishes and the judgment noise
remains; for a random sample with known error rates it is exactly ``r (1 - r) / (n (1 - gamma))``.
The annotator parameters' uncertainty is shared by every item an annotator judged and does not
average away: ``g' Sigma g`` with ``g`` the estimate's gradient with respect to the parameters,
the domain rates moving with them (implicit differentiation of the fixed point).

References
----------
Rogan, W. J. and Gladen, B. (1978). Estimating prevalence from the results of a screening test.
American Journal of Epidemiology 107(1), 71-76.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
from scipy import sparse, special

from .annotators import AnnotatorPrior, LabelModel, fit_label_model
from .state import TaskState

__all__ = ["DomainLabels", "ItemLabels", "item_labels"]


@dataclass(frozen=True)
class ItemLabels:
    """Per item: verified or not, the annotator model's view of its label, its answers' evidence.

    Attributes
    ----------
    verified : numpy.ndarray of bool
        An exact label or at least one judgment is known.
    value, variance : numpy.ndarray of float
        The item's posterior under the annotator model's class prior and ``value (1 - value)``
        (``1``/``0`` and 0 for exact labels, ``nan`` and 0 for unverified items).
    judgments, says_correct : numpy.ndarray of int
        Judgments per item (gold answers included), and how many of them say "correct".
    evidence : numpy.ndarray of float
        ``lambda_x`` of the item's answers (``+inf``/``-inf`` for exact labels, 0 unverified).
    row : numpy.ndarray of int
        Row of the item in ``scores``; ``-1`` when its label is exact or unknown.
    evidence_levels, level : numpy.ndarray
        The distinct values ``evidence`` takes over the uncertain items, and per row the index
        of its item's value among them (few: sums of a few annotators' answers).
    scores : scipy.sparse.csr_matrix or None
        Per row: the derivative of ``evidence`` with respect to the annotator parameters (logit
        sensitivities, then logit specificities).
    model : LabelModel or None
        ``None`` when no label is uncertain.
    """

    verified: np.ndarray
    value: np.ndarray
    variance: np.ndarray
    judgments: np.ndarray
    says_correct: np.ndarray
    evidence: np.ndarray
    row: np.ndarray
    evidence_levels: np.ndarray
    level: np.ndarray
    scores: sparse.csr_matrix | None
    model: LabelModel | None

    @property
    def noisy(self) -> bool:
        """Whether any label is uncertain (otherwise every extra term is zero)."""
        return self.model is not None and self.model.items.size > 0

    def in_domains(
        self,
        items: np.ndarray,
        weights: np.ndarray,
        domains: np.ndarray,
        n_domains: int,
        *,
        inclusion: np.ndarray,
        prior_centre: np.ndarray | None = None,
    ) -> DomainLabels:
        """Posterior labels of ``items`` with each domain's own rate as the prior.

        ``weights`` are the design weights (``1 / pi`` for a Poisson sample), ``domains`` each
        item's domain and ``inclusion`` its ``pi`` (1 for a census). ``prior_centre``: per
        domain, a rate the centre of its rate's weak prior is lowered to where the caller
        knows the domain is rarer than the answers say under the model's class prior (``nan``:
        the default, never raised).
        """
        lam = self.evidence[items]
        exact = ~np.isfinite(lam)
        free = ~exact
        free_domains, free_weights = domains[free], weights[free]
        total = np.bincount(domains, weights=weights, minlength=n_domains)
        # Items with exact labels (gold items, above all) are often chosen by their answer, so
        # the uncertain items of a domain are not a sample of the same population: their prior
        # is the rate of the uncertain items alone (with exact items in the fixed point, 40 gold
        # items of which half incorrect pulled a 3-run task's precision down by 0.015, coverage
        # 0.85).
        free_total = np.bincount(free_domains, weights=free_weights, minlength=n_domains)
        # A weak prior on each domain's rate, worth DOMAIN_PRIOR_ITEMS of its items, centred on
        # what the annotator model says of them: a domain of one or two items has no
        # maximum-likelihood rate (it sits on 0 or 1 and takes every doubt away); a large one
        # does not notice.
        count = np.bincount(free_domains, minlength=n_domains).astype(float)
        mean_weight = np.where(count > 0, free_total / np.maximum(count, 1.0), 0.0)
        prior_weight = DOMAIN_PRIOR_ITEMS * mean_weight
        with np.errstate(invalid="ignore", divide="ignore"):
            centre = np.where(
                free_total > 0,
                np.bincount(
                    free_domains,
                    weights=free_weights * self.value[items[free]],
                    minlength=n_domains,
                )
                / free_total,
                0.5,
            )
        if prior_centre is not None:
            centre = np.where(np.isnan(prior_centre), centre, np.minimum(centre, prior_centre))
        rows = self.row[items]
        posteriors = _Posteriors.of(self, rows, lam, free, domains, n_domains)
        log_odds = _fixed_points(
            posteriors.of_free(free),
            free_weights,
            prior_weight * centre,
            free_total + prior_weight,
            np.zeros(n_domains),
            n_domains,
        )
        with np.errstate(invalid="ignore"):
            # An exact label stays what it is when the uncertain items' rate is 0 or 1 (inf - inf).
            z = np.where(exact, lam > 0, posteriors(log_odds))
        v = z * (1 - z)
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = np.where(
                total > 0,
                np.bincount(domains, weights=weights * z, minlength=n_domains) / total,
                np.nan,
            )
            free_rate = np.where(
                free_total > 0,
                np.bincount(free_domains, weights=free_weights * z[free], minlength=n_domains)
                / free_total,
                np.nan,
            )
        # gamma at the Jeffreys-smoothed rate where the root is on the boundary.
        r_eval = np.where(
            np.isfinite(log_odds),
            free_rate,
            (np.nan_to_num(free_rate) * count + 0.5) / (count + 1.0),
        )
        with np.errstate(invalid="ignore"):
            e = posteriors(special.logit(r_eval))
        slope = np.where(exact, 0.0, e * (1 - e))
        base = np.nan_to_num((free_total + prior_weight) * r_eval * (1 - r_eval))
        with np.errstate(invalid="ignore", divide="ignore"):
            missing = np.where(
                base > 0,
                np.clip(
                    np.bincount(domains, weights=weights * slope, minlength=n_domains) / base,
                    0.0,
                    0.98,
                ),
                0.0,
            )
            measured = (
                np.bincount(domains, weights=weights**2 * inclusion * v, minlength=n_domains)
                * (1.0 - missing)
                / np.where(total > 0, total**2, 1.0)
            )
        denominator = np.where(np.isfinite(log_odds), base * (1 - missing), 0.0)
        return DomainLabels(
            z, v, rate, missing, measured, self, rows, weights, domains, denominator
        )

    def favoured(self, items: np.ndarray) -> np.ndarray:
        """Per item of ``items``: whether its answers favour "correct" (``lambda_x > 0``, the
        posterior under an even prior; exact labels as they are; a tie by :attr:`value`).

        The label a closed pool takes for a verified item: there the class prior is left out,
        as on a rare-positive pool it would outvote a single "yes". Its uncertainty is not
        carried (docs/STATISTICS.md, "Closed pools in the product").
        """
        evidence = self.evidence[items]
        favoured: np.ndarray = (evidence > 0) | ((evidence == 0) & (self.value[items] >= 0.5))
        return favoured

    def typical_annotator(self) -> tuple[float, float]:
        """Judgment-weighted mean sensitivity and specificity (``(1, 1)`` without a model)."""
        if self.model is None or self.model.annotators.size == 0:
            return 1.0, 1.0
        n = self.model.judgments_per_annotator.astype(float)
        return (
            float(n @ self.model.sensitivity / n.sum()),
            float(n @ self.model.specificity / n.sum()),
        )


def item_labels(
    state: TaskState, *, item_class: np.ndarray, prior: AnnotatorPrior | None = None
) -> ItemLabels:
    """Fit the annotator model to ``state``'s judgments and return every item's label view.

    ``item_class``: the prior class of every item (``-1`` where the caller has none).
    """
    n = state.n_items
    exact = state.labels >= 0
    value = np.where(exact, state.labels.astype(float), np.nan)
    gold = state.gold
    if gold.size:
        exact = exact.copy()
        exact[gold.items] = True
        value[gold.items] = gold.answers.astype(float)
    evidence = np.where(exact, np.where(value == 1.0, np.inf, -np.inf), 0.0)
    judged = state.judgments
    counts = np.bincount(judged.items, minlength=n) if judged.size else np.zeros(n, np.int64)
    yes = (
        np.bincount(judged.items, weights=judged.says_correct, minlength=n).astype(np.int64)
        if judged.size
        else np.zeros(n, np.int64)
    )
    verified = (state.labels >= 0) | state.judged
    row = np.full(n, -1, np.int64)
    if judged.size == 0:
        no_levels = np.zeros(0)
        return ItemLabels(
            verified,
            value,
            np.zeros(n),
            counts,
            yes,
            evidence,
            row,
            no_levels,
            no_levels.astype(np.int64),
            None,
            None,
        )
    exact_items = np.flatnonzero(exact)
    model = fit_label_model(
        judged.items,
        judged.annotators,
        judged.says_correct,
        item_class=item_class,
        exact_items=exact_items,
        exact_labels=value[exact_items] == 1.0,
        prior=prior,
    )
    value[model.items] = model.mean
    variance = np.zeros(n)
    variance[model.items] = model.mean * (1.0 - model.mean)
    row[model.items] = np.arange(model.items.size)
    evidence[model.items] = model.evidence
    scores = model.scores[:, : model.n_annotator_parameters].tocsr()
    levels, level = np.unique(model.evidence, return_inverse=True)
    return ItemLabels(
        verified, value, variance, counts, yes, evidence, row, levels, level, scores, model
    )


@dataclass(frozen=True)
class DomainLabels:
    """Labels of a set of items with each domain's own rate of correct items as the prior.

    Attributes
    ----------
    value, variance : numpy.ndarray
        ``z_x`` and ``z_x (1 - z_x)`` per item, in the order given.
    rate, missing : numpy.ndarray
        Per domain: the rate ``r_d`` and ``gamma_d`` (at the Jeffreys-smoothed rate when ``r_d``
        is 0 or 1, where the maximum-likelihood rate sits on the boundary).
    measured : numpy.ndarray
        Per domain: ``sum w^2 pi (1 - gamma) v / W^2``, the judgment noise that sampling does
        not account for (see the module notes).
    """

    value: np.ndarray
    variance: np.ndarray
    rate: np.ndarray
    missing: np.ndarray
    measured: np.ndarray
    _labels: ItemLabels
    _rows: np.ndarray  # each item's row in the label view's scores (-1: exact)
    _weights: np.ndarray
    _domains: np.ndarray
    _denominator: np.ndarray  # W r (1 - r) (1 - gamma) per domain (0 on the boundary)

    def evidence_of(self, items: np.ndarray) -> np.ndarray:
        """``lambda_x`` of ``items``' answers (``+-inf`` for exact labels)."""
        evidence: np.ndarray = self._labels.evidence[items]
        return evidence

    def rate_variance(self, design: np.ndarray) -> np.ndarray:
        """Per domain, the sandwich variance of ``r_d`` from its design variance (computed on
        ``z`` as if it were exact): ``(design + measured) / (1 - gamma)^2``."""
        variance: np.ndarray = (design + self.measured) / (1.0 - self.missing) ** 2
        return variance

    def parameter_variance(self, coefficients: np.ndarray) -> float:
        """Variance of ``sum c_x z_x`` due to the annotator parameters' uncertainty."""
        labels = self._labels
        model = labels.model
        if model is None or model.items.size == 0:
            return 0.0
        s = np.bincount(
            self._domains, weights=coefficients * self.variance, minlength=self.rate.size
        )
        with np.errstate(invalid="ignore", divide="ignore"):
            through_rate = np.where(self._denominator > 0, s / self._denominator, 0.0)
        total = (coefficients + self._weights * through_rate[self._domains]) * self.variance
        rows = self._rows
        keep = rows >= 0
        # Over every uncertain item (zero outside the domain): one pass over the judgments,
        # cheaper than gathering the domain's rows of the sparse matrix.
        # A label view with a model has the model's scores (``item_labels``).
        scores = cast(sparse.csr_matrix, labels.scores)
        weight = np.zeros(scores.shape[0])
        weight[rows[keep]] = total[keep]
        g = np.asarray(scores.T @ weight).ravel()
        k = model.n_annotator_parameters
        return float(g @ model.covariance[:k, :k] @ g)

    def parameter_logit_variance(self, covariance: np.ndarray) -> np.ndarray:
        """Per item, the variance of ``logit z_x`` that a ``covariance`` of the annotator
        parameters (``2A x 2A``) carries, through ``lambda_x`` and through the domain's rate,
        which moves with them: the gradient of :meth:`parameter_variance` for one item, divided
        by ``z_x (1 - z_x)``. 0 for an exact label."""
        rows, domains = self._rows, self._domains
        keep = rows >= 0
        variance = np.zeros(self.value.size)
        model = self._labels.model
        if model is None or not keep.any():
            return variance
        k = model.n_annotator_parameters
        scores = cast(sparse.csr_matrix, self._labels.scores)
        s = np.asarray(scores[rows[keep]].todense())
        d = domains[keep]
        # d logit r_d / d eta: the domain's weighted gradient over its fixed point's slope.
        pulled = np.zeros((self.rate.size, k))
        np.add.at(pulled, d, (self._weights[keep] * self.variance[keep])[:, None] * s)
        den = self._denominator[:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            through = np.where(den > 0, pulled / den, 0.0)
        a = s + through[d]
        variance[keep] = np.einsum("ij,jk,ik->i", a, covariance, a)
        return variance


_LOGIT_BOUND = 40.0
# Items' worth of prior each domain rate gets (see ``ItemLabels.in_domains``).
DOMAIN_PRIOR_ITEMS = 2.0


def _fixed_points(
    posteriors: _Posteriors,
    w: np.ndarray,
    fixed: np.ndarray,
    total: np.ndarray,
    start: np.ndarray,
    n_domains: int,
    iterations: int = 60,
) -> np.ndarray:
    """Per domain, the ``l`` with ``sum w expit(l + lambda) + fixed = total expit(l)``:
    safeguarded Newton in logit space, bracketed (the equation is the likelihood's slope, which
    falls from a rate of 0 to a rate of 1: the root is unique). A domain whose answers all point
    one way has its rate at 0 or 1: ``l = -inf`` or ``+inf``. ``posteriors`` holds each item's
    ``lambda`` and domain ``d``."""
    d = posteriors.domains
    if d.size == 0:
        with np.errstate(invalid="ignore", divide="ignore"):
            return special.logit(np.where(total > 0, fixed / np.where(total > 0, total, 1.0), 0.5))
    lo = np.full(n_domains, -_LOGIT_BOUND)
    hi = np.full(n_domains, _LOGIT_BOUND)
    ell = np.clip(start, lo, hi)
    has_free = np.bincount(d, minlength=n_domains) > 0
    for _ in range(iterations):
        z = posteriors(ell)
        s = special.expit(ell)
        f = np.bincount(d, weights=w * z, minlength=n_domains) + fixed - total * s
        df = np.bincount(d, weights=w * z * (1 - z), minlength=n_domains) - total * s * (1 - s)
        lo = np.where(f > 0, ell, lo)
        hi = np.where(f < 0, ell, hi)
        with np.errstate(invalid="ignore", divide="ignore"):
            step = np.where(df < 0, ell - f / df, 0.5 * (lo + hi))
        new = np.where((step > lo) & (step < hi), step, 0.5 * (lo + hi))
        done = (np.abs(f) <= 1e-12 * np.maximum(total, 1.0)) | ~has_free | (hi - lo < 1e-12)
        if done.all():
            break
        ell = np.where(done, ell, new)
    ell = np.where(ell > _LOGIT_BOUND - 1e-3, np.inf, ell)
    return np.where(ell < -_LOGIT_BOUND + 1e-3, -np.inf, ell)


@dataclass(frozen=True)
class _Posteriors:
    """``expit(shift[d] + lambda)`` per item for a shift per domain ``d``.

    Items' evidence takes few distinct values (sums of a few annotators' answers), so with
    ``levels`` each (domain, value) pair is evaluated once and gathered per item (``key``): the
    same additions of the same numbers, bit for bit, at a fraction of the per-item cost (the
    fixed points evaluate it at every Newton step). Without ``levels`` it is evaluated per item.
    """

    lam: np.ndarray
    domains: np.ndarray
    levels: np.ndarray | None
    key: np.ndarray

    @classmethod
    def of(
        cls,
        labels: ItemLabels,
        rows: np.ndarray,
        lam: np.ndarray,
        free: np.ndarray,
        domains: np.ndarray,
        n_domains: int,
    ) -> _Posteriors:
        """``rows`` and ``lam``: the items' rows in ``labels`` and their evidence, finite where
        ``free``. Exact items get an arbitrary level: what is computed for them is never used."""
        levels = labels.evidence_levels
        per_item = levels.size == 0 or levels.size * n_domains >= rows.size
        if per_item or (rows[free] < 0).any():  # or unverified items (no level) among them
            return cls(lam, domains, None, np.zeros(0, np.int64))
        level = np.where(free, labels.level[rows], 0)
        return cls(lam, domains, levels, domains.astype(np.int64) * levels.size + level)

    def of_free(self, free: np.ndarray) -> _Posteriors:
        """The same for the items ``free`` only."""
        key = self.key[free] if self.levels is not None else self.key
        return _Posteriors(self.lam[free], self.domains[free], self.levels, key)

    def __call__(self, shift: np.ndarray) -> np.ndarray:
        if self.levels is None:
            per_item: np.ndarray = special.expit(shift[self.domains] + self.lam)
            return per_item
        table = special.expit(shift[:, None] + self.levels).ravel()
        gathered: np.ndarray = table[self.key]
        return gathered
