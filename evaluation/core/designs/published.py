"""The ``published`` design: a faithful reproduction of Chaganty et al. (EMNLP 2017), paper 003.

It is the baseline the product is measured against, flaws included (STATISTICS.md §2-3):

* each run ``j`` gets ``n_j`` i.i.d. draws (with replacement) from ``p_j``, uniform on ``X_j``;
* precision of target ``i`` is the multiple-importance estimator
  ``P_i = sum_j (w_ij / n_j) sum_{x drawn for j} p_i(x) f(x) / q_i(x)`` with per-target mixture
  weights ``w_ij ∝ n_j <p_i, p_j>`` and ``q_i = sum_j w_ij p_j``;
  its variance is ``sum_j (w_ij^2 / n_j) Var_{x~p_j}[p_i f / q_i]`` (empirical), and the
  interval is Wald's;
* recall is ``theta * nu`` with ``theta`` the share of the reference sample inside the union and
  ``nu`` the self-normalised importance-weighted share of the verified-correct draws inside
  ``X_i``, with the same per-target proposal ``q_i`` (biased upward when ``i`` has disjoint
  neighbours: §3.2); the variance uses the corrected product formula of §3.4;
* the planner, once per run, picks by bisection the smallest ``n_m >= 1`` whose conservative
  variance (empirical for earlier draws, the all-correct bound
  ``(w_mm^2 / n) sum_{x in X_m} p_m(x) (p_m(x) / q_m(x))^2`` for the new draws) meets the target.
  It never re-plans: there are no rounds.

The paper assumes every verified label is true. Given fallible annotators' judgments, this design
plugs in the annotator model's posterior means (:mod:`..labels`) and ignores their uncertainty, as
the paper would.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np
from scipy import sparse

from ..intervals import normal_quantile, wald_interval
from ..labels import ItemLabels, item_labels
from ..reference import ReferenceRatio, reference_ratio
from ..results import IntervalEstimate, Plan, RunEstimate
from ..state import TaskState
from .common import RecallParts, checked_level, f1_estimate, validate_common_options

__all__ = ["PublishedDesign"]


@dataclass
class _DrawRecord:
    """I.i.d. draws per run, in order, and which items were sent for verification."""

    draws: list[np.ndarray | None] = field(default_factory=list)
    seeds: list[int | None] = field(default_factory=list)
    requested: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    labels_cache: tuple[tuple[int, int], ItemLabels] | None = None

    def grow(self, n_items: int) -> None:
        extra = n_items - self.requested.size
        if extra > 0:
            self.requested = np.concatenate([self.requested, np.zeros(extra, bool)])


def _membership(state: TaskState, n_runs: int) -> sparse.csc_matrix:
    """Item x run incidence matrix of the first ``n_runs`` runs."""
    rows = np.concatenate([state.runs[j].items for j in range(n_runs)])
    cols = np.concatenate([np.full(state.runs[j].size, j) for j in range(n_runs)])
    data = np.ones(rows.size, dtype=np.float64)
    return sparse.csc_matrix((data, (rows, cols)), shape=(state.n_items, n_runs))


class PublishedDesign:
    """Paper 003's design (see the module docstring). ``interval`` is always Wald."""

    name = "published"

    def __init__(
        self,
        *,
        target_half_width: float = 0.05,
        confidence: float = 0.95,
        budget: int | None = None,
        max_draws: int = 1_000_000,
    ):
        validate_common_options(target_half_width, confidence, "wald", budget)
        self.target_half_width = float(target_half_width)
        self.confidence = float(confidence)
        self.budget = budget
        self.max_draws = int(max_draws)

    def record(self, state: TaskState) -> _DrawRecord:
        rec = state.design_state.get(self.name)
        if rec is None:
            rec = _DrawRecord()
            state.design_state[self.name] = rec
        if not isinstance(rec, _DrawRecord):
            raise ValueError("this task state was sampled by another design")
        rec.grow(state.n_items)
        return rec

    def labels(self, state: TaskState) -> ItemLabels:
        """Every item's label view (one prior class for the annotator model: the paper has no
        strata), cached until labels or judgments change."""
        rec = self.record(state)
        key = (state.labels_version, state.n_items)
        if rec.labels_cache is None or rec.labels_cache[0] != key:
            rec.labels_cache = (
                key,
                item_labels(state, item_class=np.zeros(state.n_items, np.int64)),
            )
        return rec.labels_cache[1]

    def prepare(self, state: TaskState, run: int) -> None:
        """The label view (the draw itself needs the newest record)."""
        del run
        self.labels(state)

    # -- planning ---------------------------------------------------------------------------
    def required_draws(self, state: TaskState, run: int) -> int:
        """Smallest ``n >= 1`` whose conservative variance meets the target (bisection)."""
        rec = self.record(state)
        earlier = [j for j, d in enumerate(rec.draws) if j != run and d is not None and d.size]
        earlier_draws = [cast(np.ndarray, rec.draws[j]) for j in earlier]  # not None: drawn
        x_m = state.runs[run].items
        size_m = x_m.size
        sizes = np.array([state.runs[j].size for j in earlier], dtype=float)
        n_j = np.array([d.size for d in earlier_draws], dtype=float)
        if earlier:
            member = _membership(state, state.n_runs)
            overlap = np.asarray(member[x_m][:, earlier].sum(axis=0)).ravel()
            inner = overlap / (size_m * sizes)  # <p_m, p_j>
            base = n_j * inner  # unnormalised w_mj for j < m
            # A(x) = sum_j base_j 1[x in X_j] / |X_j| at X_m's items and at earlier draws.
            scale = base / sizes
            a_own = member[x_m][:, earlier] @ scale
            draw_items = np.concatenate(earlier_draws)
            owner = np.concatenate([np.full(d.size, k) for k, d in enumerate(earlier_draws)])
            a_draw = member[draw_items][:, earlier] @ scale
            in_m = np.isin(draw_items, x_m)
            f_draw = np.nan_to_num(self.labels(state).value[draw_items])
        else:
            base = np.zeros(0)
            a_own = np.zeros(size_m)
        inner_mm = 1.0 / size_m
        z = normal_quantile(self.confidence)
        target_var = (self.target_half_width / z) ** 2

        def variance(n: int) -> float:
            norm = base.sum() + n * inner_mm
            w_mm = n * inner_mm / norm
            q_own = (a_own + n * inner_mm / size_m) / norm
            own: float = (w_mm**2 / n) * float(np.sum((1.0 / size_m) * (1.0 / size_m / q_own) ** 2))
            if not earlier:
                return own
            q_draw = (a_draw + in_m * n * inner_mm / size_m) / norm
            with np.errstate(invalid="ignore", divide="ignore"):
                y = np.where(in_m, f_draw / size_m / q_draw, 0.0)
            w = base / norm
            total = own
            counts = np.bincount(owner, minlength=len(earlier))
            sums = np.bincount(owner, weights=y, minlength=len(earlier))
            sq = np.bincount(owner, weights=y * y, minlength=len(earlier))
            with np.errstate(invalid="ignore", divide="ignore"):
                var_j = np.where(counts > 1, (sq - sums**2 / counts) / (counts - 1), 0.0)
            total += float(np.sum(w**2 * np.maximum(var_j, 0.0) / n_j))
            return total

        if variance(1) <= target_var:
            return 1
        lo, hi = 1, 2
        while variance(hi) > target_var and hi < self.max_draws:
            lo, hi = hi, min(hi * 2, self.max_draws)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if variance(mid) <= target_var:
                hi = mid
            else:
                lo = mid
        return hi

    def plan(self, state: TaskState, run: int, *, rng: np.random.Generator) -> Plan:
        """Draw the run's ``n_m`` i.i.d. items once; later calls ask for nothing more."""
        rec = self.record(state)
        while len(rec.draws) <= run:
            rec.draws.append(None)
            rec.seeds.append(None)
        if rec.draws[run] is not None:
            return Plan(run, 2, np.empty(0, np.int64), "gave_up")
        n = self.required_draws(state, run)
        seed = int(rng.integers(2**63 - 1))
        items = state.runs[run].items
        drawn = items[np.random.default_rng(seed).integers(0, items.size, size=n)]
        verified = self.labels(state).verified
        new = np.unique(drawn[~rec.requested[drawn] & ~verified[drawn]])
        status = "sample"
        if self.budget is not None:
            remaining = self.budget - int(np.count_nonzero(rec.requested))
            if new.size > remaining:
                status = "budget_exhausted"
                keep = (
                    np.isin(drawn, new[: max(remaining, 0)])
                    | rec.requested[drawn]
                    | (verified[drawn])
                )
                drawn = drawn[keep]
                new = new[: max(remaining, 0)]
        rec.draws[run] = drawn
        rec.seeds[run] = seed
        rec.requested[new] = True
        return Plan(
            run,
            1,
            new,
            status,
            expected_labels=float(new.size),
            seed=seed,
            details={"draws": int(drawn.size)},
        )

    # -- estimation -------------------------------------------------------------------------
    def estimate(
        self, state: TaskState, runs: Sequence[int] | None = None, *, level: float | None = None
    ) -> list[RunEstimate]:
        """Precision, recall and F1 with Wald intervals for ``runs`` (default: every run).

        ``level`` overrides the confidence of every interval (default: the design's
        ``confidence``); planning always uses the design's ``confidence``.
        """
        level = self.confidence if level is None else checked_level(level)
        rec = self.record(state)
        runs = list(range(state.n_runs) if runs is None else runs)
        drawn_runs = [j for j, d in enumerate(rec.draws) if d is not None and d.size]
        draws = [cast(np.ndarray, rec.draws[j]) for j in drawn_runs]  # not None: drawn
        ref = state.reference
        theta = reference_ratio(ref, state.in_union[ref.items]) if ref.size else None
        out = []
        if not drawn_runs:
            for i in runs:
                nan = IntervalEstimate(math.nan, 0.0, 1.0, level, "no-draws", 0)
                out.append(RunEstimate(i, nan, nan, nan))
            return out
        member = _membership(state, state.n_runs)
        sizes = np.array([r.size for r in state.runs], dtype=float)
        draw_items = np.concatenate(draws)
        owner = np.concatenate([np.full(d.size, k) for k, d in enumerate(draws)])
        labels = self.labels(state)
        labelled = labels.verified[draw_items]
        draw_items, owner = draw_items[labelled], owner[labelled]
        n_j = np.bincount(owner, minlength=len(drawn_runs)).astype(float)
        f = labels.value[draw_items]
        b = member[draw_items].toarray()  # draws x runs, 1 if the draw lies in X_r
        overlap = (member.T @ member[:, drawn_runs]).toarray()  # runs x drawn runs
        inner = overlap / (sizes[:, None] * sizes[drawn_runs][None, :])
        for i in runs:
            base = np.where(n_j > 0, n_j * inner[i], 0.0)
            if base.sum() <= 0:
                nan = IntervalEstimate(math.nan, 0.0, 1.0, level, "no-draws", 0)
                out.append(RunEstimate(i, nan, nan, nan))
                continue
            w = base / base.sum()
            q = b[:, drawn_runs] @ (w / sizes[drawn_runs])
            p_i = b[:, i] / sizes[i]
            with np.errstate(invalid="ignore", divide="ignore"):
                y = np.where(q > 0, p_i * f / np.where(q > 0, q, 1.0), 0.0)
                inv_q = np.where(q > 0, 1.0 / np.where(q > 0, q, 1.0), 0.0)
            means, var_j = _group_moments(y, owner, len(drawn_runs))
            value = float(np.sum(w * means))
            var = float(np.sum(np.where(n_j > 0, w**2 * var_j / np.maximum(n_j, 1), 0.0)))
            low, high = wald_interval(value, var, level=level)
            used = int(np.unique(draw_items[(b[:, i] > 0) & (w[owner] > 0)]).size)
            precision = IntervalEstimate(value, low, high, level, "mixture-is/wald", used)
            recall = _mixture_recall(
                b[:, i],
                f,
                inv_q,
                weights=w,
                owner=owner,
                draws_per_run=n_j,
                theta=theta,
                labels=used + ref.size,
                level=level,
            )
            f1 = f1_estimate(precision, var, recall, level=level, method="wald", covariance="zero")
            out.append(RunEstimate(i, precision, recall.estimate, f1))
        return out


def _mixture_recall(
    in_run: np.ndarray,
    f: np.ndarray,
    inv_q: np.ndarray,
    *,
    weights: np.ndarray,
    owner: np.ndarray,
    draws_per_run: np.ndarray,
    theta: ReferenceRatio | None,
    labels: int,
    level: float,
) -> RecallParts:
    """Recall ``theta * nu`` of one run from the mixture draws, with a Wald interval.

    ``nu``, the run's share of the union's correct items, is a ratio of importance-weighted means
    over the draws (``in_run``: 1 where a draw lies in the run; ``f``: its label; ``inv_q``: one
    over the mixture density; ``weights``, ``owner``, ``draws_per_run``: the mixture weight of
    each drawing run, the run each draw belongs to, the draws of each); ``theta``, the union's
    share of the reference sample (``None`` without one). Variances by the delta method, the two
    factors independent (paper 003).
    """
    num_terms = f * in_run * inv_q
    den_terms = f * inv_q
    n_j = draws_per_run
    scale = np.where(n_j > 0, weights / np.maximum(n_j, 1), 0.0)
    numer = float(np.sum(scale[owner] * num_terms))
    denom = float(np.sum(scale[owner] * den_terms))
    if denom <= 0 or theta is None or theta.trials == 0:
        est = IntervalEstimate(math.nan, 0.0, 1.0, level, "theta-nu/wald", labels)
        return RecallParts(est, math.inf)
    nu = numer / denom
    lin = (num_terms - nu * den_terms) / denom
    _, var_j = _group_moments(lin, owner, n_j.size)
    var_nu = float(np.sum(np.where(n_j > 0, weights**2 * var_j / np.maximum(n_j, 1), 0.0)))
    th = theta.value
    var_th = th * (1 - th) / theta.trials
    value = th * nu
    var = th * th * var_nu + nu * nu * var_th + var_th * var_nu
    low, high = wald_interval(value, var, level=level)
    return RecallParts(IntervalEstimate(value, low, high, level, "theta-nu/wald", labels), var)


def _group_moments(
    values: np.ndarray, owner: np.ndarray, groups: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per-group mean and sample variance (``ddof=1``; 0 for groups with fewer than 2 values)."""
    counts = np.bincount(owner, minlength=groups).astype(float)
    sums = np.bincount(owner, weights=values, minlength=groups)
    sq = np.bincount(owner, weights=values * values, minlength=groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / np.maximum(counts, 1), 0.0)
        var = np.where(counts > 1, (sq - counts * means**2) / np.maximum(counts - 1, 1), 0.0)
    return means, np.maximum(var, 0.0)
