"""``ais-published``: paper 000's adaptive importance sampling for one run of a closed pool.

A faithful single-system baseline: one run at a time, its own labels only, the F-beta score as
the target of the proposal, the Dirichlet-tree oracle model of :mod:`.dirichlet_tree`.

Algorithm 1 of paper 000, as the authors' code runs it (ngmarchant/activeeval ``Evaluator``,
``AdaptiveVarMin``, ``AISEstimatorWithVariance``; ngmarchant/activeeval-experiments
``experiments.py``, ``run_f1-score.py``):

* stages of ``stage_size`` (50) *new* labels: the stage's proposal ``q`` draws ``stage_size``
  items at a time, with replacement; an item drawn again re-uses its label (deterministic oracle:
  only its first query consumes budget, paper §5.2); draws are kept in order until the stage has
  its new labels, the rest of the batch is dropped; every kept draw enters the estimator (the
  batches here grow while they bring few new items, which changes nothing in law since the
  draws past the stage's last new label are dropped);
* after each stage EM refits the Dirichlet tree from all distinct labels; ``pi(y | x)`` is the
  block's posterior for an unverified item and the point mass of its label for a verified one;
* the proposal (Prop. 2, deterministic oracle) is
  ``q(x) ∝ sum_y max(|Dg(R_t) l(x, y)|, eps_t 1[l(x, y) != 0]) pi(y | x)`` with the F-beta loss
  ``l(x, y) = [y f(x), (1 - a) y + a f(x)]``, ``a = 1 / (1 + beta^2)``, ``g(R) = R1 / R2``;
  ``R_t`` is the risk under the model (``sum_x sum_y l(x, y) pi(y | x) / n``), not the AIS
  estimate; ``eps_t = epsilon0 * (share of items unverified)`` with ``epsilon0 = 1e-9``
  (Prop. 3; activeeval's default);
* estimator (1): ``R = (1 / N) sum_j w_j l(x_j, y_j)``, ``w_j = 1 / (n q_{j-1}(x_j))`` over all
  ``N`` draws. Every measure is ``g`` of the totals ``tp = n R[y f]``, ``fn = n R[y (1 - f)]`` and,
  as in the paper's Table 1 (the F-beta loss estimates ``f`` too), ``pp = n R[f]``;
  ``known_pp=True`` plugs in the run's known ``pp`` instead;
* §3.3.2's variance with the delta method: ``Var = (mean_j (Dg L_j)^2 w_j w_inf_j - (Dg T)^2) / N``
  with ``L_j`` the draw's loss in totals, ``T`` the estimated totals and
  ``w_inf_j = 1 / (n q_N(x_j))`` under the last proposal (0 where ``q_N`` is 0); the interval is
  Wald's, clipped to the measure's range.

Two additions the paper does not make: a value that is 0/0 is reported as ``nan`` with the whole
range ``[0, 1]`` (``[-1, 1]`` for MCC) as its interval and counted undefined; once every item of
the pool is verified the totals are known and the values exact (``method`` ``"census"``).

The stage size of the paper's F1 experiments is 50 (100 stages for 5,000 labels). The
experiments bin a classifier's real-valued score: an SVM's margin, or ``logit(p)`` where a file
has only probabilities (``load_pool``); ``bin_transform="logit"`` (the default) recovers it from
a score in [0, 1] such as the closed-pool data's ``svm-paper`` (``expit(margin)``), while
``"identity"`` bins the score itself. The choice matters: on abt-buy's and dblp-acm's
``svm-paper`` binning the score itself gives a 3-4 times smaller MSE of F1.

References
----------
N. G. Marchant and B. I. P. Rubinstein, "Needle in a haystack: label-efficient evaluation under
extreme class imbalance", KDD 2021: Algorithm 1, estimator (1), Prop. 2-3, §3.3.2, §4, §5.2.
Authors' code: github.com/ngmarchant/activeeval and github.com/ngmarchant/activeeval-experiments.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from ..intervals import normal_quantile
from ..measures import OPEN_MEASURES
from ..results import IntervalEstimate
from .dirichlet_tree import em_fit, tree_model
from .measures import check_measures, measure_gradient, measure_range, measure_value

__all__ = ["AISResult", "ais_published"]

METHOD = "ais-dirichlet-tree/wald"
_MAX_BATCH = 1 << 20


@dataclass(frozen=True, eq=False)
class AISResult:
    """One AIS campaign on one run.

    Attributes
    ----------
    estimates : Mapping[str, IntervalEstimate]
        Per requested measure: value, Wald interval, ``labels_used`` (distinct labels).
    labels_used : int
        Distinct items verified (the budget spent).
    draws : int
        Draws with replacement that entered the estimator (``N``).
    stages : int
        Proposal updates (EM fits after the first).
    tp, fn, pp : float
        Estimated totals (``pp`` is the known one when ``known_pp``).
    undefined : tuple of str
        Measures whose value is 0/0.
    items, counts, weights : numpy.ndarray
        The draws, one entry per item and batch of draws (in order): the item, how often it was
        drawn and its importance weight ``1 / (n q(x))`` under that batch's proposal.
    labels : numpy.ndarray
        The label of each entry's item.
    em_iterations : int
        EM steps over all fits.
    proposal : numpy.ndarray
        The last proposal ``q_N`` over the pool (the one §3.3.2's variance uses).
    """

    estimates: Mapping[str, IntervalEstimate]
    labels_used: int
    draws: int
    stages: int
    tp: float
    fn: float
    pp: float
    undefined: tuple[str, ...]
    items: npt.NDArray[np.int64]
    counts: npt.NDArray[np.int64]
    weights: npt.NDArray[np.float64]
    labels: npt.NDArray[np.bool_]
    em_iterations: int
    proposal: npt.NDArray[np.float64]

    def __getitem__(self, name: str) -> IntervalEstimate:
        return self.estimates[name]


def _proposal(
    pi1: npt.NDArray[np.float64], f: npt.NDArray[np.bool_], a: float, eps: float
) -> npt.NDArray[np.float64]:
    """Prop. 2 for a deterministic oracle and the F-beta loss; ``pi1`` is ``P(y = 1 | x)``.

    With ``f`` binary, ``|Dg(R) l(x, y)|`` takes four values: ``l(x, 1)`` is ``[1, 1]`` or
    ``[0, 1 - a]`` and ``l(x, 0)`` is ``[0, a]`` or ``[0, 0]`` for ``f(x)`` 1 or 0.
    """
    n = f.size
    r1 = float(pi1[f].sum()) / n
    r2 = ((1.0 - a) * float(pi1.sum()) + a * float(np.count_nonzero(f))) / n
    d1, d2 = 1.0 / r2, -r1 / (r2 * r2)
    # index 0: f(x) = 0, index 1: f(x) = 1
    if_pos = np.array([max(abs(d2 * (1.0 - a)), eps if a < 1.0 else 0.0), max(abs(d1 + d2), eps)])
    if_neg = np.array([0.0, max(abs(d2 * a), eps)])
    fi = f.view(np.int8)
    v = if_neg[fi] + pi1 * (if_pos - if_neg)[fi]
    q: npt.NDArray[np.float64] = v / v.sum()
    return q


def _draw_until(
    cdf: npt.NDArray[np.float64],
    labelled: npt.NDArray[np.bool_],
    need: int,
    size: int,
    rng: np.random.Generator,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """``size`` draws from the proposal ``cdf``, cut after the ``need``-th new item if reached.

    Returns the kept draws and the new items among them (each once, in order of first draw).
    """
    draws = np.searchsorted(cdf, rng.random(size), side="right")
    np.minimum(draws, cdf.size - 1, out=draws)
    _, first = np.unique(draws, return_index=True)
    new = np.zeros(draws.size, dtype=bool)
    new[first] = True
    new &= ~labelled[draws]
    seen = np.cumsum(new)
    if seen[-1] >= need:
        cut = int(np.searchsorted(seen, need)) + 1
        draws, new = draws[:cut], new[:cut]
    return draws, draws[new]


def _gradient(
    name: str, tp: float, fn: float, pp: float, n: int, beta: float, known_pp: bool
) -> npt.NDArray[np.float64]:
    d_tp, d_fn = measure_gradient(name, tp, fn, pp=pp, n=n, beta=beta)
    if known_pp:
        return np.array([d_tp, d_fn, 0.0])
    h = 1e-6 * max(abs(pp), 1.0)
    up = measure_value(name, tp, fn, pp=pp + h, n=n, beta=beta)
    down = measure_value(name, tp, fn, pp=pp - h, n=n, beta=beta)
    return np.array([d_tp, d_fn, (up - down) / (2 * h)])


def _estimate(
    name: str,
    totals: npt.NDArray[np.float64],
    draws: tuple[
        npt.NDArray[np.float64],
        npt.NDArray[np.float64],
        npt.NDArray[np.float64],
        npt.NDArray[np.int64],
    ],
    *,
    n: int,
    beta: float,
    level: float,
    known_pp: bool,
    labels: int,
    census: bool,
) -> tuple[IntervalEstimate, bool]:
    """One measure's ``IntervalEstimate`` and whether it is undefined (0/0)."""
    tp, fn, pp = totals
    low_r, high_r = measure_range(name)
    value = float(measure_value(name, tp, fn, pp=pp, n=n, beta=beta))
    if not math.isfinite(value):
        return IntervalEstimate(
            math.nan, low_r, high_r, level, "census" if census else METHOD, labels
        ), True
    if census:
        return IntervalEstimate(value, value, value, level, "census", labels), False
    grad = _gradient(name, tp, fn, pp, n, beta, known_pp)
    if not np.all(np.isfinite(grad)):
        return IntervalEstimate(value, low_r, high_r, level, METHOD, labels), False
    losses, weight, w_inf, count = draws
    total = count.sum()
    per_draw = losses @ grad
    second = float(np.sum(count * per_draw**2 * weight * w_inf)) / total
    var = (second - float(grad @ totals) ** 2) / total
    half = normal_quantile(level) * math.sqrt(max(var, 0.0))
    low, high = max(low_r, value - half), min(high_r, value + half)
    return IntervalEstimate(value, low, high, level, METHOD, labels), False


def ais_published(  # noqa: C901 (the published algorithm step by step, as its paper writes it)
    scores: npt.ArrayLike,
    predictions: npt.ArrayLike,
    *,
    oracle: Callable[[npt.NDArray[np.int64]], npt.ArrayLike],
    budget: int,
    measures: tuple[str, ...] = OPEN_MEASURES,
    level: float = 0.95,
    beta: float = 1.0,
    tree_depth: int = 8,
    n_bins: int = 256,
    stage_size: int = 50,
    epsilon0: float = 1e-9,
    em_tol: float = 1e-6,
    em_max_iter: int = 1000,
    bin_transform: str = "logit",
    known_pp: bool = False,
    rng: np.random.Generator,
) -> AISResult:
    """IntervalEstimate one run's measures by paper 000's AIS (see the module docstring).

    Parameters
    ----------
    scores : array_like
        The run's score per pool item in [0, 1] (the prior ``s(1 | x)`` and the binned values).
    predictions : array_like
        The run's 0/1 prediction per item.
    oracle : callable, keyword-only
        ``oracle(items) -> bool array``: the true labels of ``items`` (each asked once).
    budget : int, keyword-only
        Distinct items to verify (capped at the pool size).
    measures : tuple of str, keyword-only
        Names from :data:`evaluation.core.measures.CLOSED_POOL_MEASURES` to report.
    level : float, keyword-only
        Confidence level of the Wald intervals.
    beta : float, keyword-only
        The F-beta score is the proposal's target and ``"f1"`` reports it.
    tree_depth, n_bins : int, keyword-only
        Dirichlet tree: depth 8 and 256 CSF bins is the paper's ``Ours-8``, depth 1 ``Ours-1``.
    stage_size : int, keyword-only
        New labels per stage (50 in the paper's F1 experiments).
    epsilon0 : float, keyword-only
        Threshold constant of Prop. 2-3 (activeeval's 1e-9).
    em_tol, em_max_iter : keyword-only
        EM stopping rule (activeeval-experiments: 1e-6 and 1000).
    bin_transform : {"logit", "identity"}, keyword-only
        Values the CSF bins are cut on: ``logit(score)`` (an SVM's margin) or the score.
    known_pp : bool, keyword-only
        Plug in the run's known predicted positives instead of estimating them.
    rng : numpy.random.Generator, keyword-only
        Source of every draw.

    Returns
    -------
    AISResult
    """
    scores = np.asarray(scores, dtype=float)
    f = np.asarray(predictions, dtype=bool)
    n = scores.size
    if f.shape != (n,) or n == 0:
        raise ValueError("scores and predictions must be 1-d arrays of the pool size")
    if not np.all((scores >= 0.0) & (scores <= 1.0)):
        raise ValueError("scores must lie in [0, 1]")
    check_measures(measures)
    if budget < 1 or stage_size < 1 or em_max_iter < 1 or epsilon0 <= 0 or beta < 0:
        raise ValueError("budget, stage_size and em_max_iter must be >= 1, epsilon0 > 0, beta >= 0")
    if bin_transform == "logit":
        clipped = np.clip(scores, 1e-12, 1.0 - 1e-12)
        bin_values = np.log(clipped) - np.log1p(-clipped)
    elif bin_transform == "identity":
        bin_values = scores
    else:
        raise ValueError("bin_transform must be 'logit' or 'identity'")
    budget = min(int(budget), n)
    a = 1.0 / (1.0 + beta * beta)

    model = tree_model(scores, depth=tree_depth, n_bins=n_bins, bin_values=bin_values)
    blocks = model.blocks
    labelled = np.zeros(n, dtype=bool)
    label = np.zeros(n, dtype=bool)
    pos = np.zeros(model.n_blocks)
    neg = np.zeros(model.n_blocks)

    fit = em_fit(model, pos, neg, tol=em_tol, max_iter=em_max_iter)
    em_iterations, stages = fit.iterations, 0

    def current_q() -> npt.NDArray[np.float64]:
        pi1 = np.where(labelled, label, fit.positive_rate[blocks])
        return _proposal(pi1, f, a, epsilon0 * (1.0 - labelled.mean()))

    q = current_q()
    kept_items, kept_counts, kept_w = [], [], []
    used = 0
    while used < budget:
        need = min(stage_size, budget - used)
        cdf = np.cumsum(q)
        cdf /= cdf[-1]
        size, drawn = stage_size, 0
        while need > 0:
            if drawn > 1000 * n + 10**7:
                raise RuntimeError("the proposal keeps missing the unverified items")
            draws, fresh = _draw_until(cdf, labelled, need, size, rng)
            drawn += draws.size
            if fresh.size:
                answers = np.asarray(oracle(fresh), dtype=bool)
                if answers.shape != fresh.shape:
                    raise ValueError("the oracle must answer one label per item")
                labelled[fresh] = True
                label[fresh] = answers
                np.add.at(pos, blocks[fresh], answers)
                np.add.at(neg, blocks[fresh], ~answers)
            uniq, counts = np.unique(draws, return_counts=True)
            kept_items.append(uniq)
            kept_counts.append(counts)
            kept_w.append(1.0 / (n * q[uniq]))
            need -= int(fresh.size)
            used += int(fresh.size)
            # The draws past the stage's last new label are dropped, so the batch size does not
            # change what is kept: grow it while the proposal mostly redraws verified items.
            size = min(2 * size, _MAX_BATCH) if fresh.size < need else size
        fit = em_fit(
            model,
            pos,
            neg,
            joint=fit.joint,
            log_posterior=fit.log_posterior,
            tol=em_tol,
            max_iter=em_max_iter,
        )
        em_iterations += fit.iterations
        stages += 1
        q = current_q()

    items = np.concatenate(kept_items)
    counts = np.concatenate(kept_counts)
    w = np.concatenate(kept_w)
    y = label[items]
    fi = f[items]
    losses = n * np.column_stack([y & fi, y & ~fi, fi]).astype(float)
    pp_true = float(np.count_nonzero(f))
    census = bool(labelled.all())
    if census:
        totals = np.array(
            [np.count_nonzero(label & f), np.count_nonzero(label & ~f), pp_true], dtype=float
        )
    else:
        totals = (losses * (counts * w)[:, None]).sum(axis=0) / counts.sum()
        if known_pp:
            totals[2] = pp_true
    with np.errstate(divide="ignore"):
        w_inf = np.where(q[items] > 0, 1.0 / (n * q[items]), 0.0)
    estimates, undefined = {}, []
    for name in measures:
        est, bad = _estimate(
            name,
            totals,
            (losses, w, w_inf, counts),
            n=n,
            beta=beta,
            level=level,
            known_pp=known_pp,
            labels=used,
            census=census,
        )
        estimates[name] = est
        if bad:
            undefined.append(name)
    return AISResult(
        estimates=MappingProxyType(estimates),
        labels_used=used,
        draws=int(counts.sum()),
        stages=stages,
        tp=float(totals[0]),
        fn=float(totals[1]),
        pp=float(totals[2]),
        undefined=tuple(undefined),
        items=items,
        counts=counts,
        weights=w,
        labels=y,
        em_iterations=em_iterations,
        proposal=q,
    )
