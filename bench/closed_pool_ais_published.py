"""Error and coverage of ``ais-published`` (paper 000's AIS, one run at a time) on a closed pool.

The campaigns are those of ``python -m evaluation.simulate POOL --design ais-published``
(:mod:`evaluation.simulation.closed_pool.campaigns`: ``--budget`` distinct labels per run, no
label shared across runs; campaign ``r`` of system ``i`` uses
``numpy.random.default_rng([seed, i, r])``); this script adds the AIS options the command line
does not offer (Dirichlet-tree depth, what the bins are cut on, the known ``pp``) and records the
machine and commit with the figures. The JSON is the command line's ``--json`` object with
``per_system``, plus ``tree_depth``, ``bin_transform``, ``known_pp``, ``machine`` and ``code``.

Usage::

    .venv/bin/python bench/closed_pool_ais_published.py [POOL] [--repeats 200] [--seed 0]
        [--systems svm-paper,...] [--budget 2000] [--measures precision,recall,f1]
        [--tree-depth 8] [--bin-transform logit|identity] [--known-pp] [--json] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys

from _util import code_version, machine

from evaluation.simulation.closed_pool.campaigns import simulate_closed_pool
from evaluation.simulation.closed_pool.command import closed_pool_request, format_closed_pool_table
from evaluation.simulation.closed_pool_data import load_closed_pool

DEFAULT_POOL = "/work/shared/data/closed-pool/abt-buy"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pool", nargs="?", default=DEFAULT_POOL)
    ap.add_argument("--repeats", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--systems", default=None, help="comma list of system names (default: all)")
    ap.add_argument("--budget", type=int, default=2000, help="labels per run")
    ap.add_argument("--measures", default="precision,recall,f1")
    ap.add_argument("--tree-depth", type=int, default=8, choices=(1, 2, 4, 8))
    ap.add_argument("--bin-transform", default="logit", choices=("logit", "identity"))
    ap.add_argument("--known-pp", action="store_true")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--out", help="also write the JSON object to this file")
    args = ap.parse_args(argv)
    data = load_closed_pool(args.pool)
    options = {"tree_depth": args.tree_depth, "bin_transform": args.bin_transform}
    options["known_pp"] = args.known_pp
    try:
        request = closed_pool_request(
            data,
            design="ais-published",
            measures=args.measures,
            budget=args.budget,
            systems=args.systems,
            repeats=args.repeats,
            seed=args.seed,
            confidence=0.95,
        )
    except ValueError as exc:
        ap.error(str(exc))
    summary = simulate_closed_pool(data, **request, design_options=options)
    result = {**summary.as_dict(), **options, "machine": machine(), "code": code_version()}
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=1)
            fh.write("\n")
    if args.json:
        print(json.dumps(result))
    else:
        print(format_closed_pool_table(summary, per_system=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
