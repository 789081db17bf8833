"""Do the other runs' estimates stay unbiased when a run is withdrawn and its requests cancelled?

Plays the campaigns of ``tests/support/design_campaigns.py`` (``withdrawal_campaign``): on the
synthetic task, ``broad`` is planned first and withdrawn while its second round is still out;
``near_one_scored`` and ``near_zero`` come after it, a perfect oracle answering every item a run
that stays predicts. Three arms on the same seeds:

* ``withdrawn``: the run is withdrawn in the engine (``TaskState.withdraw_runs``: its rounds stay
  in the record, the pool loses the items only it predicts), what the service does;
* ``pool_unchanged``: its own pending items are left unanswered all the same, but it stays in
  the pool (cancelling its requests without taking its items out of the pool);
* ``kept``: no withdrawal, every item asked is answered (the design's own biases, for
  reference).

Prints, per run that stays and measure, the bias of the estimate (mean error against the truth),
its Monte-Carlo standard error and the coverage of the 95% interval.

Usage::

    .venv/bin/python bench/withdrawal_bias.py [--campaigns 1000] [--seed 5000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
from _util import REPO, machine

sys.path.insert(0, os.path.join(REPO, "tests", "support"))

from evaluation.core.measures import OPEN_MEASURES
from evaluation.simulation.open_world.campaigns import true_scores

from design_campaigns import (
    WITHDRAWAL_ARMS,
    WITHDRAWAL_KEPT,
    synthetic_dataset,
    withdrawal_estimates,
)


def summary(dataset, est: np.ndarray) -> dict:
    truths = true_scores(dataset)
    index = {s.name: k for k, s in enumerate(dataset.systems)}
    out: dict = {}
    for k, name in enumerate(WITHDRAWAL_KEPT):
        for m, metric in enumerate(OPEN_MEASURES):
            truth = truths[index[name], m]
            value, low, high = est[:, k, m, 0], est[:, k, m, 1], est[:, k, m, 2]
            err = value - truth
            out[f"{name} {metric}"] = {
                "bias": float(err.mean()),
                "se": float(err.std(ddof=1) / np.sqrt(err.size)),
                "coverage": float(((low - 1e-12 <= truth) & (truth <= high + 1e-12)).mean()),
            }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--campaigns", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=5000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    dataset = synthetic_dataset()
    started = time.perf_counter()
    arms = {
        arm: summary(dataset, withdrawal_estimates(dataset, args.campaigns, args.seed, arm=arm))
        for arm in WITHDRAWAL_ARMS
    }
    result = {
        "campaigns": args.campaigns,
        "seed": args.seed,
        "arms": arms,
        "seconds": round(time.perf_counter() - started, 1),
        "machine": machine(),
    }
    if args.json:
        print(json.dumps(result))
        return
    for arm, rows in arms.items():
        print(arm)
        for key, row in rows.items():
            print(
                f"  {key:26s} bias {row['bias']:+.4f} (se {row['se']:.4f}) "
                f"coverage {row['coverage']:.3f}"
            )
    print(f"{result['seconds']} s")


if __name__ == "__main__":
    main()
