"""Is a run's precision bias the estimator's or the adaptive design's? One campaign, two samples.

Plays the campaigns of ``bench/annotator_error_claims.py`` (the febrl4 slice's three runs, all
planned in rounds until each meets its target) and estimates the precision of
``rule_names90_sn_surname`` and ``rule_all45_postcode`` twice from the final record:

* on the campaign's own sample, whose inclusion probabilities the planner raised round after
  round on the answers it saw (what the product reports);
* on a fresh Poisson sample drawn with the *same* final inclusion probabilities, independently
  of the answers, with exact labels.

The same estimator on the same probabilities: a bias in the first and none in the second is the
design's (probabilities that depend on the sample's own labels: the planner stops or samples on
according to what it saw), not the post-stratified Hajek estimator's.

Usage::

    .venv/bin/python bench/adaptive_bias.py [--campaigns 600] [--seed 7]
        [--target-half-width 0.03] [--annotators 1.0] [--json]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from _util import machine
from annotator_error_claims import SYSTEMS, campaign, load_slice, true_scores

from evaluation.core.labels import ItemLabels

RUNS = (1, 2)  # rule_names90_sn_surname, rule_all45_postcode


def exact_labels(truth: np.ndarray) -> ItemLabels:
    """Every item verified with its true label."""
    n = truth.size
    return ItemLabels(
        verified=np.ones(n, bool),
        value=truth.astype(float),
        variance=np.zeros(n),
        judgments=np.ones(n, np.int64),
        says_correct=truth.astype(np.int64),
        evidence=np.where(truth, np.inf, -np.inf),
        row=np.full(n, -1),
        evidence_levels=np.zeros(0),
        level=np.zeros(0, np.int64),
        scores=None,
        model=None,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--campaigns", type=int, default=600)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--target-half-width", type=float, default=0.03)
    parser.add_argument("--annotators", default="1.0")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    dataset, order = load_slice()
    truth_scores = true_scores(dataset, order)
    exact = exact_labels(dataset.truth)
    started = time.perf_counter()
    own, fresh = [], []
    for r in range(args.campaigns):
        state, design = campaign(
            dataset,
            order,
            args.seed,
            r,
            target_half_width=args.target_half_width,
            annotators=args.annotators,
        )
        rec = design.record(state)
        labels = design.labels(state, rec)
        drawn = np.random.default_rng([args.seed, r, 3]).random(dataset.truth.size)
        resampled = drawn < rec.inclusion
        own.append([design._precision(state, rec, k, labels).estimate.value for k in RUNS])
        fresh.append(
            [design._precision(state, rec, k, exact, resampled).estimate.value for k in RUNS]
        )
    truth = np.array([truth_scores[k][0] for k in RUNS])

    def summary(values) -> dict:
        errors = np.array(values, dtype=float) - truth
        counted = np.sum(~np.isnan(errors), axis=0)
        return {
            SYSTEMS[k]: {
                "bias": float(np.nanmean(errors[:, j])),
                "se": float(np.nanstd(errors[:, j], ddof=1) / np.sqrt(counted[j])),
                "sd": float(np.nanstd(errors[:, j], ddof=1)),
            }
            for j, k in enumerate(RUNS)
        }

    result = {
        "campaigns": args.campaigns,
        "seed": args.seed,
        "target_half_width": args.target_half_width,
        "annotators": args.annotators,
        "own_sample": summary(own),
        "fresh_sample_same_inclusion": summary(fresh),
        "seconds": round(time.perf_counter() - started, 1),
        "machine": machine(),
    }
    if args.json:
        print(json.dumps(result))
        return
    for key in ("own_sample", "fresh_sample_same_inclusion"):
        cells = ", ".join(
            f"{name} {v['bias']:+.4f} (se {v['se']:.4f})" for name, v in result[key].items()
        )
        print(f"{key}: precision bias {cells}")


if __name__ == "__main__":
    main()
