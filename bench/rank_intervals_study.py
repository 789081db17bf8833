"""Rank intervals side by side: paired differences (max-t) against Bonferroni on the marginals.

Plays campaigns of the ``default`` design on a data set (febrl4 by default), K systems chosen
at random and arriving in random order, answered by a perfect oracle or a panel; in each
campaign both methods rank the same final state (the same seeds, the same labels), per measure:

* family coverage: share of repeats in which every run's true rank range
  ``[1 + #truly better, K - #truly worse]`` lies in its rank interval (with its Monte-Carlo
  standard error);
* mean excess width: the rank interval's width minus the true range's width, over runs and
  repeats;
* pairs resolved: share of the pairs with a true difference >= 0.02 that the rank intervals
  order.

Usage::

    nice -n 10 .venv/bin/python bench/rank_intervals_study.py [--systems 12] [--repeats 100]
        [--annotators 0.95x5] [--seed 31] [--method max-t] [--target-half-width 0.05]
        [--order-share 0.1] [--json]

``--order-share`` switches on the planner's order option (:mod:`evaluation.core.order_rounds`):
once every run is planned, that share of the judgments more goes, in three rounds, to the items
where adjacent runs whose order is open disagree. Compare it with the option off at a tighter
``--target-half-width`` for the same judgments.
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
from evaluation.simulation.datasets import load_dataset
from evaluation.simulation.open_world.rank_campaigns import (
    RANK_METHODS,
    campaign_ranks,
    campaign_truth,
    rank_campaign,
    score_ranks,
)


def study(args: argparse.Namespace) -> dict:
    dataset = load_dataset(args.data)
    annotators = Annotators(args.annotators) if args.annotators else None
    scores = {(k, m): [] for k in RANK_METHODS for m in OPEN_MEASURES}
    judgments = []
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    for r in range(args.repeats):
        campaign = rank_campaign(
            dataset,
            n_systems=args.systems,
            reference_size=args.reference_size,
            seed=[args.seed, r],
            annotators=annotators,
            design_options={"target_half_width": args.target_half_width},
            order_share=args.order_share,
        )
        judgments.append(campaign.judgments)
        bonferroni, paired, _ = campaign_ranks(
            campaign, method=args.method, rng_seed=r, seconds=seconds
        )
        truth = campaign_truth(dataset, campaign)
        for m, measure in enumerate(OPEN_MEASURES):
            scores["paired", measure].append(score_ranks(paired[measure], truth[:, m]))
            scores["bonferroni", measure].append(score_ranks(bonferroni[measure], truth[:, m]))
    out: dict = {
        "data": args.data,
        "systems": args.systems,
        "repeats": args.repeats,
        "annotators": args.annotators or "perfect oracle",
        "method": args.method,
        "target_half_width": args.target_half_width,
        "order_share": args.order_share,
        "seed": args.seed,
        "judgments_mean": float(np.mean(judgments)),
        "seconds": round(time.perf_counter() - started, 1),
        # Per campaign, at its end: every run's estimates at the Bonferroni level, the paired
        # differences of the three measures, and their three max-t rank intervals.
        "seconds_per_campaign": {k: round(v / args.repeats, 4) for k, v in seconds.items()},
        "code": code_version(),
        "machine": machine(),
        "rank": {},
    }
    for kind in RANK_METHODS:
        out["rank"][kind] = {}
        for measure in OPEN_MEASURES:
            rows = scores[kind, measure]
            cover = np.array([s.covered for s in rows], float)
            excess = np.array([s.excess_width for s in rows])
            resolved = np.array([s.pairs_resolved for s in rows])
            out["rank"][kind][measure] = {
                "family_coverage": float(cover.mean()),
                "family_coverage_se": float(
                    math.sqrt(max(cover.mean() * (1 - cover.mean()), 0.25 / len(rows)) / len(rows))
                ),
                "excess_width_mean": float(excess.mean()),
                "excess_width_se": float(excess.std(ddof=1) / math.sqrt(len(rows)))
                if len(rows) > 1
                else 0.0,
                "width_mean": float(np.mean([s.width for s in rows])),
                "pairs_resolved": float(np.nanmean(resolved)),
            }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="/work/shared/data/febrl4")
    parser.add_argument("--systems", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--annotators", default="", help="panel, e.g. 0.95x5 (default: oracle)")
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--reference-size", type=int, default=300)
    parser.add_argument("--target-half-width", type=float, default=0.05)
    parser.add_argument("--method", choices=("max-t", "holm"), default="max-t")
    parser.add_argument(
        "--order-share",
        type=float,
        default=0.0,
        help="the planner's order option: spend this share of the judgments more, once every "
        "run is planned, where unresolved neighbours disagree (default 0: off)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out = study(args)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(
        f"{out['data']} K={out['systems']} repeats={out['repeats']} {out['annotators']} "
        f"judgments {out['judgments_mean']:.0f} ({out['seconds']} s; per campaign "
        f"{out['seconds_per_campaign']})"
    )
    print("method      measure    family coverage   excess width     width  pairs resolved")
    for kind, by_measure in out["rank"].items():
        for measure, f in by_measure.items():
            print(
                f"{kind:11s} {measure:9s}  {f['family_coverage']:.3f}"
                f" ± {f['family_coverage_se']:.3f}"
                f"   {f['excess_width_mean']:6.2f} ± {f['excess_width_se']:.2f}"
                f"   {f['width_mean']:6.2f}   {f['pairs_resolved']:.3f}"
            )


if __name__ == "__main__":
    main()
