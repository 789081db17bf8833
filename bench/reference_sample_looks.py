"""A reference sample built in the product, simulated: how often a candidate ends with the wrong
label, how many judgments a candidate costs, and how often a draw cannot complete, by panel of
annotators, share of true candidates and confidence.

Each draw is ``--candidates`` candidates, each true with the given rate; a panel judges them,
one judgment each by an annotator chosen at random, then every doubtful candidate gets a further
look by another annotator until none is due (the rule the service follows:
:func:`evaluation.core.candidates.candidate_labels`, played by
:func:`evaluation.simulation.reference_draws.simulate_draw`). A candidate's label is true when
its posterior is above one half, whether it is resolved or not.

Reported per cell: the share of draws that complete (every candidate resolved), the share of
candidates left doubtful with every judgment they can get, the share misclassified among the
resolved candidates (what a complete draw writes; its standard error resamples draws) and among
all, and the judgments per candidate.

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


def cell(profiles, rate: float, confidence: float, draws: int, n: int, seed: int) -> dict:
    """One setting's draws (seeded by the setting, so cells can be run alone)."""
    rng = np.random.default_rng([seed, round(rate * 1000), round(confidence * 1000), n])
    outcomes = []
    for _ in range(draws):
        truth = rng.random(n) < rate
        outcomes.append(simulate_draw(truth, profiles, confidence=confidence, rng=rng))
    wrong = np.array([o.misclassified_resolved for o in outcomes], dtype=float)
    resolved = np.array([o.candidates - o.exhausted for o in outcomes], dtype=float)
    share = wrong.sum() / resolved.sum() if resolved.sum() else float("nan")
    residual = wrong - share * resolved
    se = float(np.sqrt(draws / (draws - 1) * residual @ residual) / resolved.sum())
    return {
        "complete": float(np.mean([o.complete for o in outcomes])),
        "exhausted": float(np.mean([o.exhausted / o.candidates for o in outcomes])),
        "misclassified_resolved": float(share),
        "misclassified_resolved_se": se,
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
                        f"{row['misclassified_resolved_se']:.4f}), wrong in all "
                        f"{row['misclassified']:.4f}, judgments per candidate "
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
