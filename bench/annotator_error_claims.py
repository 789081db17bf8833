"""How often the claims of the annotator-error integration test fail, simulated in the core.

``tests/integration/test_int_annotator_error.py`` runs one campaign through the service: the
three runs ``ecm_dob``, ``rule_names90_sn_surname`` and ``rule_all45_postcode`` of
``tests/data/febrl4_slice``, 150 reference items, 60 gold items (half correct), 20% gold
judgments, annotators of 0.97, 0.9 and 0.6, target +-0.05 at 95%, at most two judgments per
item. It claims (1) every true precision, recall and F1 inside its Bonferroni interval at family
level 99.9%, (2) the good annotator's (se + sp) / 2 above 0.85, (3) the poor one's below 0.85
and the lowest of the three. The test runs once per CI run, so its claims are set to fail in
well under 1% of campaigns (the levels 99% and 0.9 / 0.75 of engine 1.6 failed in 2.2%).
Which answers reach the worker first depends on timing, so the test cannot be seeded; this
script plays the same campaign in the core (all three runs planned in rounds, answers after
each round) with seeds ``[seed, r]`` and counts the campaigns in which each claim fails.

It also reports each run's coverage at 95% and bias, per measure; ``--target-half-width`` and
``--annotators`` play the same campaigns with another target or panel (the claims about the
annotators assume the default panel's order: good, fair, poor).

Usage::

    .venv/bin/python bench/annotator_error_claims.py [--campaigns 300] [--seed 7] [--json]
        [--target-half-width 0.05] [--annotators 0.97,0.9,0.6]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from _util import machine

from evaluation.core.designs import make_design
from evaluation.core.measures import OPEN_MEASURES
from evaluation.core.state import TaskState
from evaluation.simulation.annotators import AnnotatorPanel, choose_gold, parse_annotators
from evaluation.simulation.datasets import load_dataset

SLICE = Path(__file__).resolve().parents[1] / "tests" / "data" / "febrl4_slice"
SYSTEMS = ("ecm_dob", "rule_names90_sn_surname", "rule_all45_postcode")
PANEL = "0.97,0.9,0.6"
FAMILY_LEVEL = 0.999
ACCURACY_SPLIT = 0.85
GOLD_RATE = 0.2
GOLD_ITEMS = 60


def load_slice():
    """The febrl4 slice and the indices of the test's three runs in it, in the test's order."""
    dataset = load_dataset(SLICE)
    names = [s.name for s in dataset.systems]
    return dataset, [names.index(name) for name in SYSTEMS]


def campaign(
    dataset,
    order,
    seed: int,
    r: int,
    *,
    gold_rate: float = GOLD_RATE,
    gold_items: int = GOLD_ITEMS,
    target_half_width: float = 0.05,
    annotators: str = PANEL,
    max_rounds: int = 200,
):
    """One campaign; returns the final state and design."""
    design = make_design(
        "default",
        target_half_width=target_half_width,
        confidence=0.95,
        max_judgments_per_item=2,
    )
    rng = np.random.default_rng([seed, r])
    campaign_rng = np.random.default_rng([seed, r, 1])
    answer_rng = np.random.default_rng([seed, r, 2])
    truth = dataset.truth
    state = TaskState(len(dataset.keys))
    state.set_reference(
        np.sort(campaign_rng.choice(np.flatnonzero(truth), size=150, replace=False))
    )
    pool = np.unique(np.concatenate([dataset.systems[i].items for i in order]))
    gold = choose_gold(truth, pool, gold_items, answer_rng)
    state.set_gold(gold, truth[gold])
    panel = AnnotatorPanel(
        parse_annotators(annotators),
        truth,
        gold,
        gold_rate,
        getattr(design, "judgments_per_item", 1),
        answer_rng,
    )
    runs = [
        state.add_run(dataset.systems[i].items, dataset.systems[i].scores, name=SYSTEMS[k])
        for k, i in enumerate(order)
    ]
    done: set[int] = set()
    for _ in range(max_rounds):
        plans = []
        for run in runs:
            if run not in done:
                plan = design.plan(state, run, rng=rng)
                plans.append(plan)
                if plan.done:
                    done.add(run)
        for plan in plans:
            panel.answer(state, plan)
        if len(done) == len(runs):
            break
    return state, design


MEASURES = OPEN_MEASURES


def true_scores(dataset, order) -> list[tuple[float, float, float]]:
    """Each run's true precision, recall and F1."""
    truth = dataset.truth
    scores = []
    for i in order:
        items = dataset.systems[i].items
        hits = int(truth[items].sum())
        p, r = hits / items.size, hits / int(truth.sum())
        scores.append((p, r, 2 * p * r / (p + r)))
    return scores


def covered(scores, estimates) -> np.ndarray:
    """(run, measure) whether the interval holds the true value."""
    return np.array(
        [
            [
                getattr(est, m).low - 1e-9 <= value <= getattr(est, m).high + 1e-9
                for m, value in zip(MEASURES, truth, strict=True)
            ]
            for truth, est in zip(scores, estimates, strict=True)
        ]
    )


def errors(scores, estimates) -> np.ndarray:
    """(run, measure) point estimate minus truth; NaN where only bounds are reported."""
    return np.array(
        [
            [
                np.nan if getattr(est, m).value is None else getattr(est, m).value - value
                for m, value in zip(MEASURES, truth, strict=True)
            ]
            for truth, est in zip(scores, estimates, strict=True)
        ],
        dtype=float,
    )


def claims(scores, state, design) -> dict:
    """Which of the test's three claims fail on the final state (the annotator claims need the
    default panel: good, fair, poor)."""
    level = 1 - (1 - FAMILY_LEVEL) / (3 * len(scores))
    outcome = {"joint": not covered(scores, design.estimate(state, level=level)).all()}
    model = design.labels(state, design.record(state)).model
    if len(model.annotators) == 3:
        by_id = np.argsort(model.annotators)
        accuracy = (model.sensitivity[by_id] + model.specificity[by_id]) / 2
        outcome["good"] = bool(accuracy[0] <= ACCURACY_SPLIT)
        outcome["poor"] = bool(accuracy[2] >= ACCURACY_SPLIT or accuracy[2] >= accuracy[:2].min())
    return outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--campaigns", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--gold-rate", type=float, default=GOLD_RATE)
    parser.add_argument("--gold-items", type=int, default=GOLD_ITEMS)
    parser.add_argument("--target-half-width", type=float, default=0.05)
    parser.add_argument("--annotators", default=PANEL)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    dataset, order = load_slice()
    scores = true_scores(dataset, order)
    started = time.perf_counter()
    failed = {"joint": 0, "good": 0, "poor": 0, "any": 0}
    judgments, hits, errs = [], [], []
    for r in range(args.campaigns):
        state, design = campaign(
            dataset,
            order,
            args.seed,
            r,
            gold_rate=args.gold_rate,
            gold_items=args.gold_items,
            target_half_width=args.target_half_width,
            annotators=args.annotators,
        )
        outcome = claims(scores, state, design)
        for key, bad in outcome.items():
            failed[key] += bad
        failed["any"] += any(outcome.values())
        judgments.append(state.judgments.items.size)
        estimates = design.estimate(state, level=0.95)
        hits.append(covered(scores, estimates))
        errs.append(errors(scores, estimates))
    coverage, bias = np.mean(hits, axis=0), np.nanmean(errs, axis=0)
    bias_se = np.nanstd(errs, axis=0, ddof=1) / np.sqrt(np.sum(~np.isnan(errs), axis=0))
    result = {
        "campaigns": args.campaigns,
        "seed": args.seed,
        "gold_rate": args.gold_rate,
        "gold_items": args.gold_items,
        "target_half_width": args.target_half_width,
        "annotators": args.annotators,
        "failed": failed,
        "judgments_mean": float(np.mean(judgments)),
        "coverage": {
            SYSTEMS[k]: dict(zip(MEASURES, map(float, coverage[k]), strict=True))
            for k in range(len(order))
        },
        "bias": {
            SYSTEMS[k]: dict(zip(MEASURES, map(float, bias[k]), strict=True))
            for k in range(len(order))
        },
        "bias_se": {
            SYSTEMS[k]: dict(zip(MEASURES, map(float, bias_se[k]), strict=True))
            for k in range(len(order))
        },
        "bounds_only": int(np.isnan(errs).any(axis=2).sum()),
        "seconds": round(time.perf_counter() - started, 1),
        "machine": machine(),
    }
    if args.json:
        print(json.dumps(result))
        return
    print(
        f"{args.campaigns} campaigns: a claim failed in {failed['any']} "
        f"(joint {failed['joint']}, good annotator {failed['good']}, poor annotator "
        f"{failed['poor']}); {result['judgments_mean']:.1f} judgments per campaign"
    )
    for k, name in enumerate(SYSTEMS):
        cells = ", ".join(
            f"{m} {coverage[k, j]:.3f} ({bias[k, j]:+.4f})" for j, m in enumerate(MEASURES)
        )
        print(f"  {name}: coverage at 95% (bias) {cells}")


if __name__ == "__main__":
    main()
