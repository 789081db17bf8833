"""Simulated campaigns on a closed pool: error, bias and coverage of a design's estimates.

A campaign lets the pool's systems arrive one by one in a fixed order (the order given, by
default the pool's file order: system names sorted), verifies items with a perfect oracle
(``truth.tsv``) or a panel of fallible annotators and, once every system has arrived and the
budget is spent, scores every run's estimate of every measure against its true value.
Two kinds of design:

* a multi-system design of :data:`evaluation.core.closed_pool.POOL_DESIGNS` (``passive``, ...):
  one task, labels shared by all runs, ``budget`` labels for the whole task. At the ``k``-th of
  ``K`` arrivals the design may bring the task's labels up to ``round(budget * k / K)`` (an
  equal share per arrival; what a design leaves unspent carries over to the next arrival);
* ``ais-published`` (:func:`evaluation.core.closed_pool.ais_published.ais_published`): paper 000's
  AIS, one run at a time with its own labels, ``budget`` labels *per run* (the task pays
  ``K * budget``).

Campaign ``r`` of a multi-system design draws from ``default_rng([seed, r])``; ``ais-published``
draws for system ``i`` (its position in the pool's file order) from ``default_rng([seed, i, r])``,
as ``bench/closed_pool_ais_published.py`` always did, so a system's figures do not depend on
which other systems are simulated.

With annotators (:class:`..campaigns.Annotators`, multi-system designs only), each drawn item is
judged by the panel (gold items mixed in at the gold rate, from their own random stream so the
design draws what it draws with an oracle), and its label is what the product takes: the
annotator model fitted to every judgment so far, the answers' evidence deciding
(:meth:`evaluation.core.labels.ItemLabels.favoured`), refitted after every round so that earlier
labels can change. ``labels`` stays the distinct items verified; ``judgments`` counts every
answer, gold included.

Figures per measure, over runs x repeats: coverage (a 0/0 value counts as not covering), bias
and MSE over the defined values, the share of undefined values, the median half-width.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...core.closed_pool import (
    POOL_DESIGNS,
    MeasureEstimates,
    PoolDesign,
    PoolState,
    make_pool_design,
)
from ...core.closed_pool.ais_published import ais_published
from ...core.closed_pool.measures import CLOSED_POOL_MEASURES, measure_value
from ...core.closed_pool.paired import PoolModelDesign, pool_paired_differences
from ...core.labels import item_labels
from ...core.measures import OPEN_MEASURES
from ...core.ranking import (
    RankIntervals,
    bonferroni_level,
    paired_rank_intervals,
    rank_intervals,
)
from ...core.state import TaskState
from ..annotators import AnnotatorPanel, choose_gold
from ..campaigns import Annotators, Progress, repeat_campaigns, sample_sd
from ..closed_pool_data import ClosedPoolData
from ..open_world.rank_campaigns import score_ranks
from ..open_world.rank_report import RANKINGS, summarise_ranks

__all__ = [
    "CLOSED_POOL_DESIGNS",
    "PER_RUN_BUDGET_DESIGNS",
    "ClosedPoolSummary",
    "PoolCampaign",
    "arrival_caps",
    "pool_rank_intervals",
    "rank_summary",
    "run_pool_campaign",
    "simulate_closed_pool",
    "true_measures",
]

# Single-run baselines: they re-use no label, so their budget is per run.
PER_RUN_BUDGET_DESIGNS = ("ais-published",)
CLOSED_POOL_DESIGNS = (*sorted(POOL_DESIGNS), *PER_RUN_BUDGET_DESIGNS)


@dataclass(frozen=True)
class PoolCampaign:
    """One campaign: ``values``, ``low``, ``high`` of shape ``(runs, measures)`` in arrival order
    and the distinct labels the task paid for."""

    labels: int
    values: np.ndarray
    low: np.ndarray
    high: np.ndarray
    judgments: int = 0  # every answer, gold included (0 with an oracle)
    # With ``rankings`` (multi-system designs only): per ranking, the finished campaign's rank
    # intervals per measure (:func:`pool_rank_intervals`).
    ranks: dict[str, dict[str, RankIntervals]] = field(default_factory=dict)


def true_measures(
    data: ClosedPoolData, systems: Sequence[int], measures: Sequence[str]
) -> np.ndarray:
    """``(len(systems), len(measures))`` true values from ``truth.tsv`` (``nan`` where 0/0)."""
    out = np.empty((len(systems), len(measures)))
    for k, i in enumerate(systems):
        f = data.systems[i].predictions
        tp, fn = np.count_nonzero(data.truth & f), np.count_nonzero(data.truth & ~f)
        for j, m in enumerate(measures):
            out[k, j] = measure_value(m, tp, fn, pp=np.count_nonzero(f), n=data.n_items)
    return out


def arrival_caps(budget: int, n_runs: int) -> np.ndarray:
    """Labels of the task allowed once the ``k``-th run has arrived: ``round(budget * k / K)``."""
    return np.rint(budget * np.arange(1, n_runs + 1) / n_runs).astype(np.int64)


def _as_arrays(estimates: Sequence[MeasureEstimates], measures: Sequence[str]) -> tuple:
    cube = np.array([[[e[m].value, e[m].low, e[m].high] for m in measures] for e in estimates])
    return cube[..., 0], cube[..., 1], cube[..., 2]


def run_pool_campaign(
    data: ClosedPoolData,
    systems: Sequence[int],
    design: str,
    *,
    budget: int,
    measures: Sequence[str],
    level: float,
    seed: int,
    repeat: int,
    design_options: Mapping[str, Any] | None = None,
    annotators: Annotators | None = None,
    rankings: Sequence[str] = (),
) -> PoolCampaign:
    """One campaign of ``design`` with ``systems`` (indices into ``data.systems``) in this order;
    ``annotators``: a panel instead of the oracle (module docstring). ``rankings``
    (of :data:`..open_world.rank_report.RANKINGS`): rank the finished campaign's runs by
    each, from the same state (:attr:`PoolCampaign.ranks`)."""
    options = dict(design_options or {})
    truth = data.truth
    if design in PER_RUN_BUDGET_DESIGNS:
        if annotators is not None:
            raise ValueError(f"annotators apply to the multi-system designs, not {design!r}")
        results = [
            ais_published(
                data.systems[i].scores,
                data.systems[i].predictions,
                oracle=lambda items: truth[items],
                budget=budget,
                measures=tuple(measures),
                level=level,
                rng=np.random.default_rng([seed, i, repeat]),
                **options,
            )
            for i in systems
        ]
        values, low, high = _as_arrays([r.estimates for r in results], measures)
        return PoolCampaign(sum(r.labels_used for r in results), values, low, high)
    pool_design = make_pool_design(
        design, **{"confidence": level, "targets": tuple(measures), **options}
    )
    rng = np.random.default_rng([seed, repeat])
    state = PoolState(data.n_items)
    labeller = _Labeller(data, annotators, seed, repeat) if annotators is not None else None
    for i, cap in zip(systems, arrival_caps(budget, len(systems)), strict=True):
        system = data.systems[i]
        run = state.add_run(system.scores, system.predictions, name=system.name)
        while (room := int(cap) - state.n_labelled) > 0:
            items = pool_design.plan(state, run, budget=room, rng=rng)
            if items.size == 0:
                break
            if (
                items.size > room
                or np.unique(items).size != items.size
                or state.labelled[items].any()
            ):
                raise RuntimeError(
                    f"design {design!r} asked for {items.size} items with {room} labels left, "
                    "or for an item twice or already verified"
                )
            if labeller is None:
                state.set_labels(items, truth[items])
            else:
                labeller.label(state, items, pool_design)
    estimates = pool_design.estimate(state, level=level, measures=measures)
    values, low, high = _as_arrays(estimates, measures)
    judgments = labeller.panel.judgments if labeller is not None else 0
    ranks = {
        ranking: pool_rank_intervals(
            pool_design, state, estimates, measures, ranking=ranking, family_level=level
        )
        for ranking in rankings
    }
    return PoolCampaign(state.n_labelled, values, low, high, judgments, ranks)


def pool_rank_intervals(
    design: PoolDesign,
    state: PoolState,
    estimates: Sequence[MeasureEstimates],
    measures: Sequence[str],
    *,
    ranking: str,
    family_level: float,
) -> dict[str, RankIntervals]:
    """Per measure, the rank intervals of every run of a finished campaign: ``"paired"`` from
    every pairwise difference at once (max-t over :mod:`...core.closed_pool.paired`'s joint
    normal, as an open task's), ``"bonferroni"`` from each run's interval at the level
    ``1 - alpha / K`` (the state estimated again at that level). ``estimates`` are the state's,
    at ``family_level``."""
    if ranking == "paired":
        if not isinstance(design, PoolModelDesign):
            raise ValueError(f"--ranking paired needs the adaptive design, not {design.name!r}")
        paired = pool_paired_differences(design, state, estimates, measures=measures)
        return {
            m: paired_rank_intervals(
                paired[m], family_level=family_level, rng=np.random.default_rng(0)
            )
            for m in measures
        }
    if ranking != "bonferroni":
        raise ValueError(f"unknown ranking {ranking!r}; choose one of {RANKINGS}")
    level = bonferroni_level(family_level, state.n_runs)
    values, low, high = _as_arrays(design.estimate(state, level=level, measures=measures), measures)
    return {
        m: rank_intervals(
            values[:, k], low[:, k], high[:, k], family_level=family_level, level=level
        )
        for k, m in enumerate(measures)
    }


# The annotators' own random stream beside a campaign's: the design draws the same items from
# ``default_rng([seed, repeat])`` whoever answers.
ANNOTATOR_STREAM = 1


class _Labeller:
    """A panel judging a campaign's drawn items, and the labels the product makes of them."""

    def __init__(
        self, data: ClosedPoolData, annotators: Annotators, seed: int, repeat: int
    ) -> None:
        rng = np.random.default_rng([seed, repeat, ANNOTATOR_STREAM])
        self.answers = TaskState(data.n_items)
        gold = choose_gold(data.truth, np.arange(data.n_items), annotators.gold_items, rng)
        self.answers.set_gold(gold, data.truth[gold])
        self.panel = AnnotatorPanel(
            annotators.profiles, data.truth, gold, annotators.gold_rate, 1, rng
        )
        self.drawn = np.zeros(data.n_items, dtype=bool)
        self.no_class = np.full(data.n_items, -1, dtype=np.int64)

    def label(self, state: PoolState, items: np.ndarray, design: Any) -> None:
        """Judge ``items``, then the looks the design asks (while the panel has annotators left
        for them), and label every drawn item anew."""
        self.panel.answer_items(self.answers, items)
        self.drawn[items] = True
        self._relabel(state)
        ask = getattr(design, "looks", None)
        while ask is not None and (due := ask(state)).size:
            before = self._judgments_on(due)
            self.panel.answer_items(self.answers, np.empty(0, np.int64), due)
            if self._judgments_on(due) == before:
                break  # every annotator has judged them: nobody left to ask
            self._relabel(state)

    def _judgments_on(self, items: np.ndarray) -> int:
        return int(np.count_nonzero(np.isin(self.answers.judgments.items, items)))

    def _relabel(self, state: PoolState) -> None:
        resolved = item_labels(self.answers, item_class=self.no_class)
        known = np.flatnonzero(self.drawn & resolved.verified)
        state.set_labels(known, resolved.favoured(known))
        state.set_answers(self.answers)


@dataclass(frozen=True)
class ClosedPoolSummary:
    """Aggregates over repeats; :meth:`as_dict` gives the ``--json`` object.

    Per-measure dictionaries are over every run of every repeat; ``coverage_lowest`` is the
    lowest of the per-system coverages; ``per_system`` holds one row per system, in arrival
    order.
    """

    design: str
    dataset: str
    system_names: tuple[str, ...]
    measures: tuple[str, ...]
    budget: int
    budget_scope: str
    repeats: int
    seed: int
    confidence: float
    labels_mean: float
    labels_sd: float
    coverage: dict[str, float]
    coverage_lowest: dict[str, float]
    half_width_median: dict[str, float]
    bias: dict[str, float]
    bias_se: dict[str, float]
    mse: dict[str, float]
    undefined_share: dict[str, float]
    seconds: float
    per_system: list[dict[str, Any]] = field(default_factory=list)
    # With annotators: their specification, the gold rate and the judgments per campaign.
    annotators: str | None = None
    gold_rate: float | None = None
    judgments_mean: float | None = None
    # With ``rank=True`` (multi-system designs): the ``rank`` key
    # (:mod:`..open_world.rank_report`).
    rank: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        extra = (
            {}
            if self.annotators is None
            else {
                "annotators": self.annotators,
                "gold_rate": self.gold_rate,
                "judgments_mean": self.judgments_mean,
            }
        )
        return {
            "design": self.design,
            "dataset": self.dataset,
            "kind": "closed_pool",
            "systems": len(self.system_names),
            "system_names": list(self.system_names),
            "measures": list(self.measures),
            "budget": self.budget,
            "budget_scope": self.budget_scope,
            "repeats": self.repeats,
            "seed": self.seed,
            "confidence": self.confidence,
            "labels_mean": self.labels_mean,
            "labels_sd": self.labels_sd,
            "coverage": self.coverage,
            "coverage_lowest": self.coverage_lowest,
            "half_width_median": self.half_width_median,
            "bias": self.bias,
            "bias_se": self.bias_se,
            "mse": self.mse,
            "undefined_share": self.undefined_share,
            "seconds": self.seconds,
            **extra,
            "per_system": self.per_system,
            **({"rank": self.rank} if self.rank else {}),
        }


def simulate_closed_pool(
    data: ClosedPoolData,
    *,
    design: str,
    measures: Sequence[str] = OPEN_MEASURES,
    budget: int = 2000,
    systems: Sequence[int] | None = None,
    repeats: int = 1,
    seed: int = 0,
    confidence: float = 0.95,
    design_options: Mapping[str, Any] | None = None,
    annotators: Annotators | None = None,
    progress: Progress | None = None,
    ranking: str | None = None,
) -> ClosedPoolSummary:
    """Run ``repeats`` campaigns of ``design`` and summarise them (module docstring).

    ``systems`` are indices into ``data.systems`` in arrival order (default: all, file order);
    ``budget`` is for the whole task, or per run for :data:`PER_RUN_BUDGET_DESIGNS`;
    ``annotators``: a panel of fallible annotators instead of the oracle. ``ranking``
    (``"paired"`` or ``"bonferroni"``, multi-system designs): score the rank intervals of each
    finished campaign at family level ``confidence`` (:attr:`ClosedPoolSummary.rank`).
    """
    if design not in CLOSED_POOL_DESIGNS:
        raise ValueError(f"unknown design {design!r}; choose one of {list(CLOSED_POOL_DESIGNS)}")
    unknown = [m for m in measures if m not in CLOSED_POOL_MEASURES]
    if unknown or not measures:
        raise ValueError(
            f"measures must be some of {', '.join(CLOSED_POOL_MEASURES)}; got {list(measures)}"
        )
    if repeats < 1 or budget < 0:
        raise ValueError("repeats must be >= 1 and the budget >= 0")
    order = list(range(len(data.systems))) if systems is None else list(systems)
    if not order:
        raise ValueError("no system to simulate")
    truth = true_measures(data, order, measures)
    if design in PER_RUN_BUDGET_DESIGNS:
        ranking = None
    rankings = () if ranking is None else (ranking,)
    campaigns, seconds = repeat_campaigns(
        repeats,
        lambda r: run_pool_campaign(
            data,
            order,
            design,
            budget=budget,
            measures=measures,
            level=confidence,
            seed=seed,
            repeat=r,
            design_options=design_options,
            annotators=annotators,
            rankings=rankings,
        ),
        progress,
    )
    figures = _figures(campaigns, truth, measures)
    labels = np.array([c.labels for c in campaigns], dtype=float)
    names = tuple(data.systems[i].name for i in order)
    return ClosedPoolSummary(
        design=design,
        dataset=data.name,
        system_names=names,
        measures=tuple(measures),
        budget=budget,
        budget_scope="run" if design in PER_RUN_BUDGET_DESIGNS else "task",
        repeats=repeats,
        seed=seed,
        confidence=confidence,
        labels_mean=float(labels.mean()),
        labels_sd=sample_sd(labels),
        seconds=round(seconds, 3),
        per_system=_per_system(names, truth, measures, figures),
        annotators=None if annotators is None else annotators.spec,
        gold_rate=None if annotators is None else annotators.gold_rate,
        judgments_mean=None
        if annotators is None
        else float(np.mean([c.judgments for c in campaigns])),
        **{key: figures[key]["all"] for key in _POOLED},
        rank=rank_summary(campaigns, truth, measures, confidence, ranking) if ranking else {},
    )


def rank_summary(
    campaigns: Sequence[PoolCampaign],
    truth: np.ndarray,
    measures: Sequence[str],
    family_level: float,
    ranking: str,
) -> dict[str, Any]:
    """The ``rank`` object: each campaign's rank intervals by ``ranking``, scored against
    ``truth`` (``(runs, measures)``, :func:`true_measures`)."""
    scored = [
        {m: score_ranks(c.ranks[ranking][m], truth[:, k]) for k, m in enumerate(measures)}
        for c in campaigns
    ]
    method = campaigns[0].ranks[ranking][measures[0]].method
    return summarise_ranks(method, family_level, scored)


_POOLED = (
    "coverage",
    "coverage_lowest",
    "half_width_median",
    "bias",
    "bias_se",
    "mse",
    "undefined_share",
)


def _mean(x: np.ndarray) -> float:
    return float(x.mean()) if x.size else math.nan


def _figures(
    campaigns: Sequence[PoolCampaign], truth: np.ndarray, measures: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """Per figure: ``"all"`` (per measure, pooled over runs and repeats) and ``"systems"``
    (per measure, an array over systems)."""
    value = np.stack([c.values for c in campaigns])  # (repeats, runs, measures)
    low = np.stack([c.low for c in campaigns])
    high = np.stack([c.high for c in campaigns])
    defined = np.isfinite(value)
    covered = defined & (low - 1e-12 <= truth) & (truth <= high + 1e-12)
    err = np.where(defined, value - truth, np.nan)
    half = (high - low) / 2
    out: dict[str, dict[str, Any]] = {key: {"all": {}, "systems": {}} for key in _POOLED}
    for j, m in enumerate(measures):
        e = err[..., j]
        ok = defined[..., j]
        cov_sys = covered[..., j].mean(axis=0)
        out["coverage"]["all"][m] = float(covered[..., j].mean())
        out["coverage"]["systems"][m] = cov_sys
        out["coverage_lowest"]["all"][m] = float(cov_sys.min())
        out["half_width_median"]["all"][m] = float(np.median(half[..., j]))
        out["half_width_median"]["systems"][m] = np.median(half[..., j], axis=0)
        out["bias"]["all"][m] = _mean(e[ok])
        out["mse"]["all"][m] = _mean(e[ok] ** 2)
        out["undefined_share"]["all"][m] = float(1.0 - ok.mean())
        out["bias"]["systems"][m] = [_mean(e[ok[:, k], k]) for k in range(e.shape[1])]
        out["mse"]["systems"][m] = [_mean(e[ok[:, k], k] ** 2) for k in range(e.shape[1])]
        out["undefined_share"]["systems"][m] = 1.0 - ok.mean(axis=0)
        # The runs of one repeat share its labels: the bias's standard error comes from the
        # spread of per-repeat mean errors, the repeats being independent.
        per_repeat = np.array([_mean(e[r, ok[r]]) for r in range(e.shape[0]) if ok[r].any()])
        out["bias_se"]["all"][m] = (
            float(per_repeat.std(ddof=1) / math.sqrt(per_repeat.size))
            if per_repeat.size > 1
            else math.nan
        )
    return out


def _per_system(
    names: Sequence[str],
    truth: np.ndarray,
    measures: Sequence[str],
    figures: Mapping[str, Mapping[str, Any]],
) -> list[dict[str, Any]]:
    keys = ("coverage", "half_width_median", "bias", "mse", "undefined_share")
    return [
        {
            "system": name,
            "arrival": k + 1,
            "true": {m: float(truth[k, j]) for j, m in enumerate(measures)},
            **{key: {m: float(figures[key]["systems"][m][k]) for m in measures} for key in keys},
        }
        for k, name in enumerate(names)
    ]
