"""Simulated open-world campaigns on a labelled data set: budget planning and the benchmark.

Each repeat picks systems at random, lets them arrive in random order, draws a reference sample
of true items, runs a design with simulated answers (each arriving run planned in rounds until the
design stops), then scores the final estimates of every run against the truth (STATISTICS.md §5).
Answers come from a perfect oracle, or from a panel of fallible annotators with gold items
(:mod:`..annotators`); then the estimates each run showed when the planner declared it
done are scored too (``coverage_at_stop``: what a participant sees).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from ...core.designs import make_design
from ...core.measures import OPEN_MEASURES
from ...core.state import TaskState
from ..annotators import AnnotatorPanel, PerfectOracle, choose_gold
from ..campaigns import Annotators, Progress, repeat_campaigns, sample_sd
from ..datasets import Dataset

__all__ = [
    "RepeatOutcome",
    "SimulationSummary",
    "run_repeat",
    "simulate",
    "true_scores",
]


@dataclass(frozen=True)
class RepeatOutcome:
    """One simulated campaign.

    ``estimates`` has shape ``(runs, 3 metrics, 3)`` holding value, low, high; ``truth`` has shape
    ``(runs, 3)``; ``systems`` are the indices into ``Dataset.systems`` in arrival order.
    ``stop_estimates`` has the shape of ``estimates``: each run's estimates when the planner
    declared it done. ``judgments`` counts every answer, gold included.
    """

    labels: int
    rounds: int
    systems: np.ndarray
    truth: np.ndarray
    estimates: np.ndarray
    gave_up: int
    judgments: int = 0
    gold_judgments: int = 0
    stop_estimates: np.ndarray | None = None
    rank: Any = None  # the ranker's scores of the finished campaign's ranks (``--ranking``)


class Ranker(Protocol):
    """Scores a finished campaign's rank intervals and summarises them over the repeats
    (:class:`.rank_report.OpenWorldRanks`)."""

    def score(self, state: TaskState, design: Any, order: np.ndarray, truth: np.ndarray) -> Any: ...

    def summary(self, repeats: list) -> dict: ...


@dataclass(frozen=True)
class SimulationSummary:
    """Aggregates over repeats; :meth:`as_dict` gives the ``--json`` object."""

    design: str
    dataset: str
    systems: int
    repeats: int
    seed: int
    target_half_width: float
    confidence: float
    reference_size: int
    labels_mean: float
    labels_sd: float
    target_met: float
    coverage: dict
    half_width_median: dict
    bias: dict
    seconds: float
    rounds_mean: float = math.nan
    bias_se: dict = field(default_factory=dict)
    per_system: list = field(default_factory=list)
    # Only with fallible annotators (``annotators`` given):
    annotators: str | None = None
    gold_rate: float | None = None
    judgments_mean: float = math.nan
    gold_judgments_mean: float = math.nan
    coverage_at_stop: dict = field(default_factory=dict)
    bias_at_stop: dict = field(default_factory=dict)
    hard_items: tuple | None = None  # (share, accuracy) of hard items, when simulated
    rank: dict = field(default_factory=dict)  # with a ranker (``--ranking``): the ``rank`` key

    def as_dict(self) -> dict:
        out = {
            "design": self.design,
            "dataset": self.dataset,
            "systems": self.systems,
            "repeats": self.repeats,
            "seed": self.seed,
            "target_half_width": self.target_half_width,
            "confidence": self.confidence,
            "reference_size": self.reference_size,
            "labels_mean": self.labels_mean,
            "labels_sd": self.labels_sd,
            "target_met": self.target_met,
            "coverage": self.coverage,
            "half_width_median": self.half_width_median,
            "bias": self.bias,
            "bias_se": self.bias_se,
            "rounds_mean": self.rounds_mean,
            "seconds": self.seconds,
            "per_system": self.per_system,
        }
        if self.annotators is not None:
            out.update(
                {
                    "annotators": self.annotators,
                    "gold_rate": self.gold_rate,
                    "judgments_mean": self.judgments_mean,
                    "gold_judgments_mean": self.gold_judgments_mean,
                    "coverage_at_stop": self.coverage_at_stop,
                    "bias_at_stop": self.bias_at_stop,
                }
            )
            if self.hard_items is not None:
                out["hard_items"] = {"share": self.hard_items[0], "accuracy": self.hard_items[1]}
        if self.rank:
            out["rank"] = self.rank
        return out


def true_scores(dataset: Dataset) -> np.ndarray:
    """``(systems, 3)`` array of true precision, recall and F1 against the whole gold set."""
    out = np.zeros((len(dataset.systems), 3))
    for k, system in enumerate(dataset.systems):
        tp = float(np.count_nonzero(dataset.truth[system.items]))
        p = tp / system.items.size
        r = tp / dataset.n_truth if dataset.n_truth else math.nan
        out[k] = p, r, (2 * p * r / (p + r) if p + r > 0 else 0.0)
    return out


def run_repeat(
    dataset: Dataset,
    design,
    *,
    n_systems: int | None,
    reference_size: int,
    rng: np.random.Generator,
    campaign_rng: np.random.Generator | None = None,
    truth_scores: np.ndarray | None = None,
    annotators: Annotators | None = None,
    annotator_rng: np.random.Generator | None = None,
    ranker: Ranker | None = None,
) -> RepeatOutcome:
    """One campaign with ``design`` (a design object) on a fresh task state.

    ``campaign_rng`` picks the systems, their order and the reference sample (``rng`` when
    omitted); ``rng`` drives the design's draws; ``annotator_rng`` the panel's choices and
    answers (a perfect oracle answers when ``annotators`` is ``None``). ``ranker`` scores the
    finished campaign's rank intervals (:attr:`RepeatOutcome.rank`).
    """
    truth_scores = true_scores(dataset) if truth_scores is None else truth_scores
    campaign_rng = rng if campaign_rng is None else campaign_rng
    total = len(dataset.systems)
    k = total if n_systems is None else min(n_systems, total)
    order = campaign_rng.permutation(total)[:k]
    truth_ids = np.flatnonzero(dataset.truth)
    ref = campaign_rng.choice(truth_ids, size=min(reference_size, truth_ids.size), replace=False)
    return _campaign(
        dataset,
        design,
        order,
        np.sort(ref),
        rng,
        truth_scores,
        annotators,
        annotator_rng if annotator_rng is not None else rng,
        ranker=ranker,
    )


def simulate(
    dataset: Dataset,
    *,
    design: str,
    systems: int | None = None,
    repeats: int = 1,
    seed: int = 0,
    target_half_width: float = 0.05,
    confidence: float = 0.95,
    reference_size: int = 300,
    design_options: dict | None = None,
    annotators: Annotators | None = None,
    progress: Progress | None = None,
    ranker: Ranker | None = None,
) -> SimulationSummary:
    """Run ``repeats`` campaigns and summarise labels, target attainment, coverage and bias.

    Repeat ``r`` uses the generator ``default_rng([seed, r])``: results are reproducible and
    repeats of the two designs see the same systems, orders and reference samples. With
    ``annotators``, a panel of fallible annotators answers (its own stream
    ``default_rng([seed, r, 2])``), and judgments and coverage at stop are reported too. With
    ``ranker``, each repeat's rank intervals are scored on its finished state and summarised
    (:attr:`SimulationSummary.rank`).
    """
    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    if reference_size < 0:
        raise ValueError("reference size must be >= 0")
    options = dict(design_options or {})
    if annotators is not None and design == "default":
        options.setdefault("max_judgments_per_item", len(annotators.profiles))
    truth_scores = true_scores(dataset)

    def campaign(r: int) -> RepeatOutcome:
        d = make_design(
            design, target_half_width=target_half_width, confidence=confidence, **options
        )
        # The campaign's choices (systems, order, reference) come first from their own stream,
        # so that both designs face the same campaigns.
        return run_repeat(
            dataset,
            d,
            n_systems=systems,
            reference_size=reference_size,
            rng=np.random.default_rng([seed, r]),
            campaign_rng=np.random.default_rng([seed, r, 1]),
            truth_scores=truth_scores,
            annotators=annotators,
            annotator_rng=np.random.default_rng([seed, r, 2]),
            ranker=ranker,
        )

    outcomes, seconds = repeat_campaigns(repeats, campaign, progress)
    summary = _summarise(
        dataset,
        design,
        repeats,
        seed,
        target_half_width,
        confidence,
        reference_size,
        outcomes,
        seconds,
    )
    if ranker is not None:
        summary = replace(summary, rank=ranker.summary([o.rank for o in outcomes]))
    if annotators is None:
        return summary
    return _with_judgments(summary, annotators, outcomes)


def _answerer(dataset, order, annotators, design, rng, state):
    if annotators is None:
        return PerfectOracle(dataset.truth)
    union = np.unique(np.concatenate([dataset.systems[i].items for i in order]))
    gold = choose_gold(dataset.truth, union, annotators.gold_items, rng)
    state.set_gold(gold, dataset.truth[gold])
    hard = None
    if annotators.hard_share > 0:
        hard = rng.random(dataset.truth.size) < annotators.hard_share
        hard[gold] = False
    return AnnotatorPanel(
        annotators.profiles,
        dataset.truth,
        gold,
        annotators.gold_rate,
        getattr(design, "judgments_per_item", 1),
        rng,
        hard=hard,
        hard_accuracy=annotators.hard_accuracy,
    )


def _as_array(estimates) -> np.ndarray:
    return np.array(
        [
            [[getattr(e, m).value, getattr(e, m).low, getattr(e, m).high] for m in OPEN_MEASURES]
            for e in estimates
        ]
    )


def _campaign(
    dataset,
    design,
    order,
    reference,
    rng,
    truth_scores,
    annotators=None,
    annotator_rng=None,
    max_rounds: int = 200,
    ranker: Ranker | None = None,
):
    state = TaskState(len(dataset.keys))
    state.set_reference(reference)
    answerer = _answerer(dataset, order, annotators, design, annotator_rng, state)
    rounds = gave_up = 0
    at_stop = []
    for idx in order:
        system = dataset.systems[idx]
        run = state.add_run(system.items, system.scores, name=system.name)
        for _ in range(max_rounds):
            plan = design.plan(state, run, rng=rng)
            rounds += 1
            answerer.answer(state, plan)
            if plan.done:
                gave_up += plan.status not in ("met", "exhausted")
                break
        else:
            gave_up += 1
        at_stop.append(_as_array(design.estimate(state, runs=[run]))[0])
    est = _as_array(design.estimate(state))
    return RepeatOutcome(
        state.n_labelled,
        rounds,
        order,
        truth_scores[order],
        est,
        gave_up,
        judgments=answerer.judgments,
        gold_judgments=getattr(answerer, "gold_judgments", 0),
        stop_estimates=np.array(at_stop) if at_stop else None,
        rank=(
            ranker.score(state, design, order, truth_scores[order]) if ranker is not None else None
        ),
    )


def _with_judgments(
    summary: SimulationSummary, annotators: Annotators, outcomes
) -> SimulationSummary:
    """The summary with judgments and the coverage and bias of the estimates at stop."""
    est = np.concatenate([o.stop_estimates for o in outcomes])
    truth = np.concatenate([o.truth for o in outcomes])
    value, low, high = est[..., 0], est[..., 1], est[..., 2]
    covered = (low - 1e-12 <= truth) & (truth <= high + 1e-12)
    err = value - truth
    coverage = {m: float(covered[:, k].mean()) for k, m in enumerate(OPEN_MEASURES)}
    bias = {
        m: float(np.nanmean(err[:, k])) if np.isfinite(err[:, k]).any() else math.nan
        for k, m in enumerate(OPEN_MEASURES)
    }
    return replace(
        summary,
        annotators=annotators.spec,
        gold_rate=annotators.gold_rate,
        judgments_mean=float(np.mean([o.judgments for o in outcomes])),
        gold_judgments_mean=float(np.mean([o.gold_judgments for o in outcomes])),
        coverage_at_stop=coverage,
        bias_at_stop=bias,
        hard_items=(
            (annotators.hard_share, annotators.hard_accuracy) if annotators.hard_share > 0 else None
        ),
    )


def _summarise(
    dataset, design, repeats, seed, target, confidence, reference_size, outcomes, seconds
) -> SimulationSummary:
    labels = np.array([o.labels for o in outcomes], dtype=float)
    est = np.concatenate([o.estimates for o in outcomes])  # (cells, metric, 3)
    truth = np.concatenate([o.truth for o in outcomes])  # (cells, metric)
    value, low, high = est[..., 0], est[..., 1], est[..., 2]
    covered = (low - 1e-12 <= truth) & (truth <= high + 1e-12)
    half = (high - low) / 2
    err = value - truth
    coverage, median, bias, bias_se = {}, {}, {}, {}
    # Runs of one repeat share the reference sample and the draws, so the standard error of the
    # bias comes from the spread of per-repeat mean errors (repeats are independent).
    repeat_of_cell = np.concatenate([np.full(len(o.systems), r) for r, o in enumerate(outcomes)])
    for m, name in enumerate(OPEN_MEASURES):
        coverage[name] = float(covered[:, m].mean())
        median[name] = float(np.median(half[:, m]))
        finite = np.isfinite(err[:, m])
        e = err[finite, m]
        bias[name] = float(e.mean()) if e.size else math.nan
        per_repeat = np.array(
            [
                e_r.mean()
                for r in range(len(outcomes))
                if (e_r := err[(repeat_of_cell == r) & finite, m]).size
            ]
        )
        bias_se[name] = (
            float(per_repeat.std(ddof=1) / math.sqrt(per_repeat.size))
            if per_repeat.size > 1
            else math.nan
        )
    met = float(np.mean(half[:, 0] <= target + 1e-12))
    per_system = _per_system(dataset, outcomes, covered, half, err)
    k = len(outcomes[0].systems)
    return SimulationSummary(
        design=design,
        dataset=dataset.name,
        systems=k,
        repeats=repeats,
        seed=seed,
        target_half_width=target,
        confidence=confidence,
        reference_size=reference_size,
        labels_mean=float(labels.mean()),
        labels_sd=sample_sd(labels),
        target_met=met,
        coverage=coverage,
        half_width_median=median,
        bias=bias,
        seconds=round(seconds, 3),
        rounds_mean=float(np.mean([o.rounds for o in outcomes])),
        bias_se=bias_se,
        per_system=per_system,
    )


def _per_system(dataset, outcomes, covered, half, err) -> list:
    names = np.concatenate([[dataset.systems[i].name for i in o.systems] for o in outcomes])
    rows = []
    for name in sorted(set(names)):
        sel = names == name
        rows.append(
            {
                "system": str(name),
                "cells": int(sel.sum()),
                "coverage": {m: float(covered[sel, k].mean()) for k, m in enumerate(OPEN_MEASURES)},
                "half_width_median": {
                    m: float(np.median(half[sel, k])) for k, m in enumerate(OPEN_MEASURES)
                },
                "bias": {
                    m: float(np.nanmean(err[sel, k]))
                    if np.isfinite(err[sel, k]).any()
                    else math.nan
                    for k, m in enumerate(OPEN_MEASURES)
                },
            }
        )
    return rows
