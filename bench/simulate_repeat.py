"""Speed of one simulated campaign (one ``simulate`` repeat) at K systems, for both designs.

Target (issue): one repeat at K=40 systems on febrl4 takes <= 2 s, for ``default`` and
``published``. Data loading is timed separately and excluded from the per-repeat figures.

Per-repeat seconds come from ``simulate``'s ``progress`` callback (called after every repeat),
so the public entry point is measured as is; a repeat's time includes building the design, the
campaign (all runs planned in rounds against the simulated annotator) and the final
``estimate``. ``true_scores`` (once per ``simulate`` call) and the summary are reported apart.

Usage::

    .venv/bin/python bench/simulate_repeat.py [DATASET] [--repeats 10] [--systems 40]
        [--designs default published] [--seed 0] [--json] [--profile]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time

from _util import format_hotspots, machine, peak_rss_mib, profile_call

from evaluation.simulation.datasets import load_dataset
from evaluation.simulation.open_world.campaigns import simulate

DEFAULT_DATASET = "/work/shared/data/febrl4"
TARGET_SECONDS = 2.0


def bench_design(dataset, design: str, *, systems: int, repeats: int, seed: int) -> dict:
    marks = []

    def progress(done, total):
        marks.append(time.perf_counter())

    started = time.perf_counter()
    summary = simulate(
        dataset, design=design, systems=systems, repeats=repeats, seed=seed, progress=progress
    )
    finished = time.perf_counter()
    # simulate() starts its own clock after true_scores(); its `seconds` covers the repeats.
    loop_start = marks[-1] - summary.seconds if marks else started
    edges = [loop_start, *marks]
    per_repeat = [b - a for a, b in itertools.pairwise(edges)]
    return {
        "design": design,
        "systems": summary.systems,
        "repeats": repeats,
        "per_repeat_s": [round(s, 4) for s in per_repeat],
        "mean_s": statistics.fmean(per_repeat),
        "median_s": statistics.median(per_repeat),
        "min_s": min(per_repeat),
        "max_s": max(per_repeat),
        "setup_s": loop_start - started,  # true_scores() and argument checks
        "summary_s": finished - marks[-1],
        "total_s": finished - started,
        "labels_mean": summary.labels_mean,
        "rounds_mean": summary.rounds_mean,
        "target_s": TARGET_SECONDS,
        "meets_target": max(per_repeat) <= TARGET_SECONDS,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset", nargs="?", default=DEFAULT_DATASET)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--systems", type=int, default=40)
    ap.add_argument("--designs", nargs="+", default=["default", "published"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true", help="print one JSON object instead")
    ap.add_argument(
        "--profile",
        action="store_true",
        help="also cProfile one extra simulate() of --profile-repeats per design",
    )
    ap.add_argument("--profile-repeats", type=int, default=3)
    ap.add_argument("--save", metavar="PATH", help="also write the JSON object to PATH")
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args(argv)

    host = machine()  # before the run: the commit whose code is imported and measured
    t0 = time.perf_counter()
    dataset = load_dataset(args.dataset)
    load_s = time.perf_counter() - t0
    info = {
        "dataset": dataset.name,
        "path": args.dataset,
        "items": len(dataset.keys),
        "systems_available": len(dataset.systems),
        "n_truth": dataset.n_truth,
        "load_s": load_s,
    }

    results = [
        bench_design(dataset, d, systems=args.systems, repeats=args.repeats, seed=args.seed)
        for d in args.designs
    ]

    profiles = {}
    if args.profile:
        for d in args.designs:
            _, rows, _text = profile_call(
                simulate,
                dataset,
                design=d,
                systems=args.systems,
                repeats=args.profile_repeats,
                seed=args.seed,
                top=args.top,
            )
            profiles[d] = rows

    out = {
        "machine": host,
        "data": info,
        "results": results,
        "profiles": profiles,
        "peak_rss_mib": peak_rss_mib(),
    }
    if args.save:
        with open(args.save, "w") as fh:
            json.dump(out, fh, indent=2, default=float)
    if args.json:
        json.dump(out, sys.stdout, indent=2)
        print()
        return 0

    print(
        f"dataset {info['dataset']} ({info['items']} items, {info['systems_available']} "
        f"systems, {info['n_truth']} true); load_dataset {load_s:.3f} s (excluded below)"
    )
    print(
        f"K={args.systems} systems, {args.repeats} repeats, seed {args.seed}; "
        f"target <= {TARGET_SECONDS:.1f} s per repeat"
    )
    header = (
        f"{'design':<10} {'mean s':>8} {'median':>8} {'min':>8} {'max':>8} "
        f"{'labels':>8} {'rounds':>7}  target"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        print(
            f"{r['design']:<10} {r['mean_s']:8.3f} {r['median_s']:8.3f} {r['min_s']:8.3f} "
            f"{r['max_s']:8.3f} {r['labels_mean']:8.1f} {r['rounds_mean']:7.1f}  "
            f"{'ok' if r['meets_target'] else 'MISSED'}"
        )
    print(f"peak RSS {out['peak_rss_mib']:.0f} MiB")
    for d, rows in profiles.items():
        print()
        print(format_hotspots(rows, f"simulate(design={d!r}, repeats={args.profile_repeats})"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
