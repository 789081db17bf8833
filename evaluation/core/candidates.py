"""The labels of a reference sample's candidates, and which of them need one more judgment.

A reference sample built in the product verifies every candidate item of a random sample of
documents; its true candidates are the reference sample. This module decides, from the annotator
model's view of the answers (:mod:`.labels`), each candidate's label, whether that label is
settled at the task's confidence, and which candidates get a further look.

**Prior.** The candidates of the drawn documents are one domain: a candidate's posterior has the
candidates' own rate of true items as its prior, ``z_x = expit(logit r + lambda_x)``, ``r`` the
maximum-likelihood rate given the annotators' error rates (:meth:`.labels.ItemLabels.in_domains`).
That rate is what a candidate is before its answers are read: the documents are drawn at random,
so every candidate is a draw from the same population, whatever a run predicts about it; and
``sum z`` estimates the number of true candidates consistently (:mod:`.labels`).

**Doubt.** ``z_x`` takes each annotator's error rates at their posterior means, which accounts
for their uncertainty as far as the labels of the items they judged are known. What it leaves out
is what the unknown labels add, and with one judgment per candidate that is everything: the
model cannot tell a rare true candidate from an annotator's error (six "correct" answers among
58 candidates are what annotators right 90% of the time would give on 58 false ones), and the
fitted rates put every "correct" at ``z = 0.04`` (two annotators who are always right, six true
candidates of 58: the draw that came out empty). So the label's probability integrates two
uncertainties that ``z_x`` does not carry: the share of the annotator parameters' covariance the
unknown labels add (observed minus complete-data information, Louis 1982:
:meth:`.annotators.LabelModel.latent_covariance`), carried to ``logit z_x`` through ``lambda_x``
and the candidates' rate (:meth:`.labels.DomainLabels.parameter_logit_variance`); and the rate's
own, a Beta posterior on the candidates' counts of true and false (Jeffreys prior, worth the
information the answers carry), whose logit has exact moments that stay finite where the fitted
rate sits on 0. In the draw that came out empty the fitted rate is 0.004, and the answers carry 6%
of the information exact labels would (``1 - gamma``): the Beta gives its logit a variance of
5.0, and every "correct" stays doubtful (``p_x = 0.43``, every "incorrect" at most 0.15) until a
second annotator has looked; where answers disagree, the latent covariance keeps them doubtful.
With ``m_x`` the mean of ``logit r + lambda_x`` and ``s_x^2`` its variance, the probit
approximation (MacKay 1992) gives ``p_x = expit(m_x / sqrt(1 + pi s_x^2 / 8))``. A
candidate is *resolved* when ``p_x >= c`` or ``p_x <= 1 - c`` (``c`` the task's confidence) and
*true* when ``p_x > 1/2``; an exact label (a gold answer) is resolved as it is.

**Never against every answer.** Those approximations are local, around the fitted parameters, and
where answers are one per candidate the fit can be confidently wrong: six "correct" answers that
all went to one annotator are, to the model, that annotator's leniency (their specificity fitted
at 0.79, the other's at 0.99, the candidates' rate at 0), and ``p_x = 0.09`` for each: settled as
false at a confidence of 0.9, although the annotators were always right (measured: one simulated
draw of 100 at 5% true). So a label that overrules every answer its candidate got (false on
answers that all say "correct", true on answers that all say "incorrect") is never settled: the
candidate gets a further look, and the model may overrule answers only where they disagree.
The same holds where no look is left and the organizer settles a candidate as its answers stand
(``leaning``): its posterior decides, unless it would overrule every answer.

**Looks.** A candidate whose judgments asked are all in and that is not resolved gets one more
judgment, from another annotator, while one can be given (``can_look``: fewer judgments than the
most an item gets, and an annotator who has not judged it); otherwise it is *exhausted*, and the
sample cannot complete until its label becomes exact, an annotator joins, or the draw is
cancelled. The rule reads the answers only (and who gave them), the same for every candidate of
the domain, so the domain's rate stays consistent (:mod:`.labels`, "looks follow one rule").

References
----------
Louis, T. A. (1982). Finding the observed information matrix when using the EM algorithm. Journal
of the Royal Statistical Society B 44(2), 226-233.
MacKay, D. J. C. (1992). The evidence framework applied to classification networks. Neural
Computation 4(5), 720-736.
Spiegelhalter, D. J. and Lauritzen, S. L. (1990). Sequential updating of conditional
probabilities on directed graphical structures. Networks 20(5), 579-605.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import special

from .labels import ItemLabels

__all__ = ["CandidateLabels", "candidate_labels"]


@dataclass(frozen=True)
class CandidateLabels:
    """Per candidate (in the order given): its label and what it needs.

    Attributes
    ----------
    posterior : numpy.ndarray of float
        ``p_x``, the probability that the candidate is true with the fitted parameters'
        uncertainty integrated out; ``nan`` while it has no answer.
    true, resolved : numpy.ndarray of bool
        Resolved (``p_x`` at least the confidence or at most its complement, every judgment
        asked in) and, among those, true.
    look, exhausted : numpy.ndarray of bool
        Doubtful (every judgment asked in, not resolved) and given one more judgment now; or
        doubtful with no further judgment possible.
    leaning : numpy.ndarray of bool
        The label as the answers stand, resolved or not: true when ``p_x > 1/2``, except that a
        label against every answer the candidate got takes the answers' side (the rule that
        keeps such a label from being settled). What an organizer's settling of exhausted
        candidates decides; equal to ``true`` on the resolved ones.
    rate : float
        The candidates' estimated rate of true items (the prior of every ``z_x``); ``nan``
        before any answer.
    """

    posterior: np.ndarray
    true: np.ndarray
    resolved: np.ndarray
    look: np.ndarray
    exhausted: np.ndarray
    leaning: np.ndarray
    rate: float

    @property
    def complete(self) -> bool:
        """Whether every candidate is resolved."""
        return bool(self.resolved.all())


def candidate_labels(
    labels: ItemLabels,
    items: npt.ArrayLike,
    *,
    asked: npt.ArrayLike,
    can_look: npt.ArrayLike,
    confidence: float,
) -> CandidateLabels:
    """Label the candidates ``items`` (one domain) and say which need a further look.

    Parameters
    ----------
    labels : ItemLabels
        The task's label view (the one its estimation uses).
    items : array_like of int
        The candidates: every candidate of the drawn documents, unique.
    asked : array_like of int
        Per candidate, the judgments asked of it so far (its answers count once they are all in).
    can_look : array_like of bool
        Per candidate, whether one more judgment can be given (another annotator, fewer than the
        most judgments an item gets).
    confidence : float
        ``c``, in (0.5, 1).

    Returns
    -------
    CandidateLabels
    """
    items = np.asarray(items, dtype=np.int64).ravel()
    asked = np.asarray(asked, dtype=np.int64).ravel()
    can_look = np.asarray(can_look, dtype=bool).ravel()
    if not (items.shape == asked.shape == can_look.shape):
        raise ValueError("items, asked and can_look must have the same length")
    if np.unique(items).size != items.size:
        raise ValueError("a candidate is given twice")
    if not 0.5 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0.5, 1), got {confidence!r}")
    n = items.size
    exact = ~np.isfinite(labels.evidence[items])
    answered = exact | (labels.verified[items] & (labels.judgments[items] >= asked))
    posterior = np.full(n, np.nan)
    rate = float("nan")
    seen = np.flatnonzero(exact | labels.verified[items])
    if seen.size:
        posterior[seen], rate = _posteriors(labels, items[seen])
    with np.errstate(invalid="ignore"):
        settled = (posterior >= confidence) | (posterior <= 1.0 - confidence)
        true = posterior > 0.5
    # A label against every answer its candidate got is never settled (see the module notes).
    judgments, yes = labels.judgments[items], labels.says_correct[items]
    overruled = ~exact & (judgments > 0) & np.where(true, yes == 0, yes == judgments)
    resolved = answered & settled & ~overruled
    doubtful = answered & ~resolved
    return CandidateLabels(
        posterior=posterior,
        true=resolved & true,
        resolved=resolved,
        look=doubtful & can_look,
        exhausted=doubtful & ~can_look,
        leaning=true ^ overruled,
        rate=rate,
    )


def _posteriors(labels: ItemLabels, items: np.ndarray) -> tuple[np.ndarray, float]:
    """``p_x`` of the (judged or exact) ``items``, one domain, and the domain's fitted rate."""
    domain = labels.in_domains(
        items, np.ones(items.size), np.zeros(items.size, np.int64), 1, inclusion=np.ones(items.size)
    )
    # The rate's own uncertainty: a Beta posterior (Jeffreys prior) on the candidates' counts of
    # true and false, worth the information the answers carry (1 - gamma of it); its logit's
    # mean and variance are exact, and stay finite where the fitted rate sits on 0 or 1 (the
    # delta method there gave a variance of 5e7 to 60 candidates all answered "incorrect").
    kept = 1.0 - float(domain.missing[0])
    true = float(domain.value.sum())
    a, b = kept * true + 0.5, kept * (items.size - true) + 0.5
    centre = special.digamma(a) - special.digamma(b) + labels.evidence[items]
    spread = np.full(items.size, special.polygamma(1, a) + special.polygamma(1, b))
    if labels.model is not None:
        spread += domain.parameter_logit_variance(labels.model.latent_covariance())
    with np.errstate(invalid="ignore"):
        moderated = special.expit(centre / np.sqrt(1.0 + np.pi * spread / 8.0))
    posterior = np.where(np.isfinite(centre), moderated, domain.value)
    return posterior, float(domain.rate[0])
