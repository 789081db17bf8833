"""A reference sample built in the product, simulated: how often a candidate ends with the wrong
label, how many judgments a candidate costs, and how often a draw cannot complete, by panel of
annotators, share of true candidates and confidence.

Each draw is ``--candidates`` candidates, each true with the given rate; a panel judges them,
one judgment each by an annotator chosen at random, then every doubtful candidate gets a further
look by another annotator until none is due (the rule the service follows:
:func:`evaluation.core.candidates.candidate_labels`, played by
:func:`evaluation.simulation.reference_draws.simulate_draw`). A candidate's label is as its
answers stand, whether it is resolved or not: true when its posterior is above one half, unless
that overrules every answer it got.

Reported per cell: the share of draws that complete (every candidate resolved), the share of
candidates left doubtful with every judgment they can get (stuck), the share misclassified among
the resolved candidates (what a complete draw writes; its standard error resamples draws), among
the stuck ones (what the organizer's "settle" decides) and among all; the share of false items
in the sample a settled draw writes (candidates labelled true that are false, over those
labelled true: what biases recall, docs/STATISTICS.md), all of them and those the settling put
there, and the share of true candidates it leaves out; and the judgments per candidate.

Usage::

    .venv/bin/python bench/reference_sample_looks.py [--draws 100] [--candidates 60]
        [--seed 2026] [--panels "1.0x2;0.95,0.9;0.95,0.9,0.7"] [--rates 0.05,0.1,0.2,0.3]
        [--confidence 0.9,0.95,0.99] [--json]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from _util import machine

from evaluation.simulation.annotators import parse_annotators
from evaluation.simulation.reference_draws import simulate_draw

PANELS = "1.0x2;0.95,0.9;0.95,0.9,0.7;0.95x3;0.95,0.9x3,0.7"


def ratio(numer: list[int], denom: list[int]) -> tuple[float, float]:
    """``sum(numer) / sum(denom)`` over draws, and its standard error resampling draws."""
    a, b = np.asarray(numer, dtype=float), np.asarray(denom, dtype=float)
    if not b.sum():
        return float("nan"), float("nan")
    share = a.sum() / b.sum()
    residual = a - share * b
    return float(share), float(np.sqrt(a.size / (a.size - 1) * residual @ residual) / b.sum())


def cell(profiles, rate: float, confidence: float, draws: int, n: int, seed: int) -> dict:
    """One setting's draws (seeded by the setting, so cells can be run alone)."""
    rng = np.random.default_rng([seed, round(rate * 1000), round(confidence * 1000), n])
    outcomes = []
    for _ in range(draws):
        truth = rng.random(n) < rate
        outcomes.append(simulate_draw(truth, profiles, confidence=confidence, rng=rng))
    share, se = ratio(
        [o.misclassified_resolved for o in outcomes],
        [o.candidates - o.exhausted for o in outcomes],
    )
    stuck, stuck_se = ratio(
        [o.misclassified_exhausted for o in outcomes], [o.exhausted for o in outcomes]
    )
    labelled = [o.labelled_true for o in outcomes]
    sample, sample_se = ratio([o.false_in for o in outcomes], labelled)
    settled, settled_se = ratio([o.false_in_exhausted for o in outcomes], labelled)
    missing, missing_se = ratio(
        [o.misclassified - o.false_in for o in outcomes], [o.true for o in outcomes]
    )
    return {
        "complete": float(np.mean([o.complete for o in outcomes])),
        "exhausted": float(np.mean([o.exhausted / o.candidates for o in outcomes])),
        "misclassified_resolved": share,
        "misclassified_resolved_se": se,
        "misclassified_stuck": stuck,
        "misclassified_stuck_se": stuck_se,
        "settled_sample_false": sample,
        "settled_sample_false_se": sample_se,
        "settled_sample_false_by_settling": settled,
        "settled_sample_false_by_settling_se": settled_se,
        "settled_sample_missing": missing,
        "settled_sample_missing_se": missing_se,
        "misclassified": float(np.mean([o.misclassified / o.candidates for o in outcomes])),
        "judgments_per_candidate": float(np.mean([o.judgments / o.candidates for o in outcomes])),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=100)
    parser.add_argument("--candidates", type=int, default=60)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--panels", default=PANELS, help="annotator panels, separated by ';'")
    parser.add_argument("--rates", default="0.05,0.1,0.2,0.3")
    parser.add_argument("--confidence", default="0.9,0.95,0.99")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    started = time.perf_counter()
    rows = []
    for panel in args.panels.split(";"):
        profiles = parse_annotators(panel)
        for rate in map(float, args.rates.split(",")):
            for confidence in map(float, args.confidence.split(",")):
                row = {"panel": panel, "rate": rate, "confidence": confidence}
                row |= cell(profiles, rate, confidence, args.draws, args.candidates, args.seed)
                rows.append(row)
                if not args.json:
                    print(
                        f"{panel:16} true {rate:.2f} confidence {confidence:.2f}: complete "
                        f"{row['complete']:.2f}, doubtful left {row['exhausted']:.3f}, wrong "
                        f"among resolved {row['misclassified_resolved']:.4f} (se "
                        f"{row['misclassified_resolved_se']:.4f}), wrong among stuck "
                        f"{row['misclassified_stuck']:.4f} (se {row['misclassified_stuck_se']:.4f}"
                        f"), wrong in all {row['misclassified']:.4f}, false in the settled "
                        f"sample {row['settled_sample_false']:.4f} (se "
                        f"{row['settled_sample_false_se']:.4f}; by the settling "
                        f"{row['settled_sample_false_by_settling']:.4f}), true left out "
                        f"{row['settled_sample_missing']:.4f} (se "
                        f"{row['settled_sample_missing_se']:.4f}), judgments per candidate "
                        f"{row['judgments_per_candidate']:.2f}",
                        flush=True,
                    )
    result = {
        "draws": args.draws,
        "candidates": args.candidates,
        "seed": args.seed,
        "rows": rows,
        "seconds": round(time.perf_counter() - started, 1),
        "machine": machine(),
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{result['seconds']} s")


if __name__ == "__main__":
    main()
