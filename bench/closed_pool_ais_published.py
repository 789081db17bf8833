"""Error and coverage of ``ais-published`` (paper 000's AIS, one run at a time) on a closed pool.

For every system of the pool (or ``--systems``), ``--repeats`` campaigns of ``--budget`` distinct
labels each (2,000 by default, the issue's anchors), one run at a time and no label shared across
runs. Per system and measure: MSE and bias of the value (over the campaigns where it is defined),
coverage of the Wald interval (over all campaigns; an undefined value's interval is the whole
range), share of campaigns where the value is undefined (0/0), median half-width; and the mean
labels, draws and seconds per campaign. Campaign ``r`` of system ``i`` uses
``numpy.random.default_rng([seed, i, r])``.

Usage::

    .venv/bin/python bench/closed_pool_ais_published.py [POOL] [--repeats 200] [--seed 0]
        [--systems svm-paper ...] [--budget 2000] [--measures precision,recall,f1]
        [--tree-depth 8] [--bin-transform logit|identity] [--known-pp] [--json] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
from _util import code_version, machine

from evaluation.core.closed_pool import MEASURES, measure_value
from evaluation.core.closed_pool.published import ais_published
from evaluation.simulation.closed_pool_data import load_closed_pool

DEFAULT_POOL = "/work/shared/data/closed-pool/abt-buy"


def bench_system(system, truth, index: int, args) -> dict:
    f = system.predictions
    tp, fn, pp = np.sum(truth & f), np.sum(truth & ~f), np.sum(f)
    n = truth.size
    true = {m: float(measure_value(m, tp, fn, pp=pp, n=n)) for m in args.measures}
    values = {m: [] for m in args.measures}
    covered = dict.fromkeys(args.measures, 0)
    half = {m: [] for m in args.measures}
    labels, draws, seconds = [], [], []
    for r in range(args.repeats):
        started = time.perf_counter()
        result = ais_published(
            system.scores,
            f,
            oracle=lambda items: truth[items],
            budget=args.budget,
            measures=tuple(args.measures),
            tree_depth=args.tree_depth,
            n_bins=256,
            bin_transform=args.bin_transform,
            known_pp=args.known_pp,
            rng=np.random.default_rng([args.seed, index, r]),
        )
        seconds.append(time.perf_counter() - started)
        labels.append(result.labels_used)
        draws.append(result.draws)
        for m in args.measures:
            est = result[m]
            values[m].append(est.value)
            covered[m] += est.covers(true[m])
            half[m].append(est.half_width)
    out = {
        "system": system.name,
        "true": true,
        "mse": {},
        "bias": {},
        "coverage": {},
        "undefined_share": {},
        "half_width_median": {},
        "labels_mean": float(np.mean(labels)),
        "draws_mean": float(np.mean(draws)),
        "seconds_mean": float(np.mean(seconds)),
    }
    for m in args.measures:
        v = np.asarray(values[m])
        defined = ~np.isnan(v)
        err = v[defined] - true[m]
        out["mse"][m] = float(np.mean(err**2)) if err.size else None
        out["bias"][m] = float(np.mean(err)) if err.size else None
        out["coverage"][m] = covered[m] / args.repeats
        out["undefined_share"][m] = float(np.mean(~defined))
        out["half_width_median"][m] = float(np.median(half[m]))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pool", nargs="?", default=DEFAULT_POOL)
    ap.add_argument("--repeats", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--systems", nargs="+", default=None, help="system names (default: all)")
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--measures", default="precision,recall,f1")
    ap.add_argument("--tree-depth", type=int, default=8, choices=(1, 2, 4, 8))
    ap.add_argument("--bin-transform", default="logit", choices=("logit", "identity"))
    ap.add_argument("--known-pp", action="store_true")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--out", help="also write the JSON object to this file")
    args = ap.parse_args(argv)
    args.measures = [m.strip() for m in args.measures.split(",") if m.strip()]
    unknown = sorted(set(args.measures) - set(MEASURES))
    if unknown:
        ap.error(f"unknown measures {unknown}; known: {', '.join(MEASURES)}")
    data = load_closed_pool(args.pool)
    names = [s.name for s in data.systems]
    chosen = names if args.systems is None else args.systems
    missing = sorted(set(chosen) - set(names))
    if missing:
        ap.error(f"no such systems in {data.name}: {missing}; it has {names}")
    started = time.perf_counter()
    systems = []
    for name in chosen:
        index = names.index(name)
        systems.append(bench_system(data.systems[index], data.truth, index, args))
        row = systems[-1]
        print(
            f"{data.name} {name}: "
            + "  ".join(
                f"{m} mse {row['mse'][m]:.3g} cov {row['coverage'][m]:.2f}"
                if row["mse"][m] is not None
                else f"{m} undefined"
                for m in args.measures
            )
            + f"  ({row['seconds_mean']:.2f} s/campaign)",
            file=sys.stderr,
        )
    result = {
        "pool": data.name,
        "n_items": data.n_items,
        "positives": int(data.truth.sum()),
        "design": "ais-published",
        "repeats": args.repeats,
        "budget": args.budget,
        "seed": args.seed,
        "tree_depth": args.tree_depth,
        "bin_transform": args.bin_transform,
        "known_pp": args.known_pp,
        "systems": systems,
        "seconds": round(time.perf_counter() - started, 1),
        "machine": machine(),
        "code": code_version(),
    }
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=1)
            fh.write("\n")
    if args.json:
        print(json.dumps(result))
        return 0
    width = max(len(s["system"]) for s in systems)
    print(f"{data.name}: ais-published, {args.budget} labels, {args.repeats} repeats")
    for s in systems:
        for m in args.measures:
            mse = "undefined" if s["mse"][m] is None else f"{s['mse'][m]:.3g}"
            bias = "" if s["bias"][m] is None else f"{s['bias'][m]:+.3g}"
            print(
                f"  {s['system']:<{width}}  {m:<17} mse {mse:>9}  bias {bias:>10}  "
                f"coverage {s['coverage'][m]:.3f}  undefined {s['undefined_share'][m]:.3f}"
            )
        print(
            f"  {s['system']:<{width}}  labels {s['labels_mean']:.0f}  draws "
            f"{s['draws_mean']:.0f}  {s['seconds_mean']:.2f} s/campaign"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
