"""A closed pool's rank intervals side by side: paired differences (max-t) against Bonferroni.

Plays the campaigns of ``python -m evaluation.simulate`` on a closed pool (the pool's systems
arriving in file order, the adaptive design, ``budget`` labels for the task, a perfect oracle or
a panel; campaign ``r`` from the streams ``[seed, r]``) and ranks each finished campaign both
ways, from the same labels (:func:`evaluation.simulation.closed_pool.campaigns.run_pool_campaign`
with both rankings). Per measure and method: family coverage of ranks (with its Monte-Carlo
standard error), mean excess width, mean width and pairs resolved, as in the ``rank`` key.

Usage::

    nice -n 10 .venv/bin/python bench/closed_pool_rank_study.py POOL_DIR [--budget 500]
        [--repeats 100] [--annotators 0.95x5] [--seed 2026]

prints the figures as JSON (``bench/results/closed_pool_rank_study-*.json`` keep them).
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np
from _util import code_version, machine

from evaluation.core.measures import OPEN_MEASURES
from evaluation.simulation.campaigns import Annotators
from evaluation.simulation.closed_pool.campaigns import (
    rank_summary,
    run_pool_campaign,
    true_measures,
)
from evaluation.simulation.closed_pool_data import load_closed_pool
from evaluation.simulation.open_world.rank_report import RANKINGS


def study(args: argparse.Namespace) -> dict:
    data = load_closed_pool(args.data)
    systems = list(range(len(data.systems)))
    annotators = Annotators(args.annotators, gold_rate=0.05) if args.annotators else None
    truth = true_measures(data, systems, OPEN_MEASURES)
    started = time.perf_counter()
    campaigns = [
        run_pool_campaign(
            data,
            systems,
            "adaptive",
            budget=args.budget,
            measures=OPEN_MEASURES,
            level=0.95,
            seed=args.seed,
            repeat=r,
            annotators=annotators,
            rankings=RANKINGS,
        )
        for r in range(args.repeats)
    ]
    out: dict = {
        "data": data.name,
        "systems": len(systems),
        "budget": args.budget,
        "repeats": args.repeats,
        "annotators": args.annotators or "perfect oracle",
        "seed": args.seed,
        "judgments_mean": float(np.mean([c.judgments or c.labels for c in campaigns])),
        "seconds": round(time.perf_counter() - started, 1),
        "code": code_version(),
        "machine": machine(),
        "rank": {},
    }
    n = len(campaigns)
    for ranking in RANKINGS:
        summary = rank_summary(campaigns, truth, OPEN_MEASURES, 0.95, ranking)
        for m in OPEN_MEASURES:
            c = summary[m]["family_coverage"]
            # The binomial standard error, at least that of one repeat in 2n (0 and 1 observed).
            summary[m]["family_coverage_se"] = math.sqrt(max(c * (1 - c), 0.25 / n) / n)
        out["rank"][ranking] = summary
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data")
    parser.add_argument("--budget", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--annotators", default="", help="panel, e.g. 0.95x5 (default: oracle)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--json", action="store_true", help="accepted; the output is JSON")
    print(json.dumps(study(parser.parse_args()), indent=2))


if __name__ == "__main__":
    main()
