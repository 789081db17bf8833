"""Speed of the ``adaptive`` closed-pool design on a large synthetic pool.

Target (issue 15): on a pool of 700,000 items with 20 runs, one planning round <= 2 s and an
estimate of every measure for the 20 runs <= 2 s.

The synthetic pool: ``--items`` items, ``--positives`` of them positive (1 in 1,000 by default,
as in entity matching). Run ``j`` scores positives ``Beta(a_j, 2)`` and negatives
``Beta(1, b_j)`` (``a_j ~ U(2, 6)``, ``b_j ~ U(8, 40)``) and predicts positive above its own
threshold (``U(0.5, 0.8)``). The runs arrive one by one; after each arrival the design plans
rounds until the task holds ``--labels`` x (arrivals so far / runs) labels (answered from the
synthetic truth). Then the timed part: ``--repeats`` planning rounds (each answered) and
``--repeats`` estimates of all six measures for every run.

Usage::

    .venv/bin/python bench/closed_pool_speed.py            # 700k items, 20 runs, 2,000 labels
    .venv/bin/python bench/closed_pool_speed.py --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
from _util import code_version, machine, peak_rss_mib

from evaluation.core.closed_pool import CLOSED_POOL_MEASURES, AdaptivePoolDesign, PoolState
from evaluation.core.measures import OPEN_MEASURES


def synthetic_pool(items: int, positives: int, runs: int, rng: np.random.Generator):
    truth = np.zeros(items, dtype=bool)
    truth[rng.choice(items, positives, replace=False)] = True
    outputs = []
    for _ in range(runs):
        a, b, threshold = rng.uniform(2, 6), rng.uniform(8, 40), rng.uniform(0.5, 0.8)
        scores = np.where(truth, rng.beta(a, 2, items), rng.beta(1, b, items))
        outputs.append((scores, scores > threshold))
    return truth, outputs


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--items", type=int, default=700_000)
    p.add_argument("--positives", type=int, default=700)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--labels", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()

    rng = np.random.default_rng(args.seed)
    truth, outputs = synthetic_pool(args.items, args.positives, args.runs, rng)
    design = AdaptivePoolDesign(targets=OPEN_MEASURES)
    state = PoolState(args.items)
    arrival = []
    started = time.perf_counter()
    for k, (scores, predictions) in enumerate(outputs, start=1):
        t0 = time.perf_counter()
        run = state.add_run(scores, predictions)
        cap = args.labels * k // args.runs
        while state.n_labelled < cap:
            items = design.plan(state, run, budget=cap - state.n_labelled, rng=rng)
            if not items.size:
                break
            state.set_labels(items, truth[items])
        arrival.append(time.perf_counter() - t0)
    setup = time.perf_counter() - started

    plan_times, estimate_times = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        items = design.plan(state, args.runs - 1, budget=50, rng=rng)
        plan_times.append(time.perf_counter() - t0)
        state.set_labels(items, truth[items])
        t0 = time.perf_counter()
        design.estimate(state, level=0.95, measures=CLOSED_POOL_MEASURES)
        estimate_times.append(time.perf_counter() - t0)

    result = {
        "items": args.items,
        "runs": args.runs,
        "labels": state.n_labelled,
        "setup_seconds": round(setup, 2),
        "arrival_seconds_median": round(statistics.median(arrival), 3),
        "plan_round_seconds": [round(t, 3) for t in plan_times],
        "plan_round_seconds_median": round(statistics.median(plan_times), 3),
        "estimate_seconds": [round(t, 3) for t in estimate_times],
        "estimate_seconds_median": round(statistics.median(estimate_times), 3),
        "peak_rss_mib": round(peak_rss_mib()),
        "code": code_version(),
        "machine": machine(),
    }
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:28s} {value}")


if __name__ == "__main__":
    main()
