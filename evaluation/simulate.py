"""``python -m evaluation.simulate``: budget planning and the label-efficiency benchmark.

Runs simulated evaluation campaigns on a labelled data set (``truth.tsv``, ``systems/*.tsv``,
``items.jsonl``) and reports labels spent, target attainment, coverage, interval widths and bias.
With ``--annotators`` a panel of fallible annotators answers instead of a perfect oracle, a share
of all judgments goes to gold items, and judgments and the coverage at stop are reported too.
A closed-pool data set (a directory with ``items.tsv``) runs closed-pool campaigns instead
(:mod:`evaluation.simulate_closed_pool`).
Exit codes: 0 success, 2 bad arguments or a malformed data set (the message names file and line).
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from evaluation.core.designs import DESIGNS
from evaluation.core.intervals import INTERVAL_METHODS
from evaluation.core.measures import OPEN_MEASURES
from evaluation.simulate_closed_pool import closed_pool_request, format_closed_pool_table
from evaluation.simulation.annotators import parse_annotators
from evaluation.simulation.campaigns import Annotators, SimulationSummary, simulate
from evaluation.simulation.closed_pool_campaigns import CLOSED_POOL_DESIGNS, simulate_closed_pool
from evaluation.simulation.closed_pool_data import is_closed_pool, load_closed_pool
from evaluation.simulation.datasets import DatasetError, load_dataset

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m evaluation.simulate",
        description="Simulate on-demand evaluation on a labelled data set: how many labels a "
        "design needs and whether its intervals cover the true scores.",
    )
    p.add_argument(
        "dataset",
        metavar="DATASET_DIR",
        help="directory with truth.tsv and systems/; with items.tsv too it is a closed pool",
    )
    p.add_argument(
        "--design",
        choices=[*sorted(DESIGNS), *CLOSED_POOL_DESIGNS],
        default=None,
        help=f"sampling design: {', '.join(sorted(DESIGNS))} (default: default) on an "
        f"open-world data set, {', '.join(CLOSED_POOL_DESIGNS)} (default: adaptive) on a "
        "closed pool",
    )
    p.add_argument(
        "--systems",
        default=None,
        metavar="K",
        help="systems per repeat, chosen at random (default: all); on a closed pool the first "
        "K systems in file order, or a comma list of system names, arriving in that order",
    )
    p.add_argument(
        "--measures",
        default=None,
        metavar="LIST",
        help="closed pool only: comma list of precision, recall, f1, accuracy, "
        "balanced_accuracy, mcc (default: precision,recall,f1)",
    )
    p.add_argument("--repeats", type=int, default=20, metavar="R", help="default: %(default)s")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="default: %(default)s")
    p.add_argument(
        "--target-half-width",
        type=float,
        default=None,
        metavar="H",
        help="precision half-width each run should reach (default: 0.05; open-world only)",
    )
    p.add_argument(
        "--confidence",
        type=float,
        default=0.95,
        metavar="C",
        help="confidence level of every interval (default: %(default)s)",
    )
    p.add_argument(
        "--reference-size",
        type=int,
        default=None,
        metavar="N",
        help="true items in the reference sample (default: 300; open-world only)",
    )
    p.add_argument(
        "--interval",
        choices=INTERVAL_METHODS,
        default=None,
        help="interval family of the default design (default: clopper-pearson)",
    )
    p.add_argument(
        "--budget",
        type=int,
        default=None,
        metavar="LABELS",
        help="label budget per repeat (default: unlimited); on a closed pool (default: 2000) "
        "the labels for the whole task, shared by all runs, except for ais-published, which "
        "re-uses no label: there it is the labels per run",
    )
    p.add_argument(
        "--annotators",
        default=None,
        metavar="SPEC",
        help="fallible annotators instead of a perfect oracle: comma list of "
        "accuracies (0.95) or sensitivity:specificity (0.99:0.85), each with "
        "an optional xN, e.g. 0.98,0.95x2,0.9,0.5",
    )
    p.add_argument(
        "--gold-rate",
        type=float,
        default=None,
        metavar="R",
        help="share of all judgments spent on gold items, with --annotators (default: 0.05)",
    )
    p.add_argument(
        "--hard-items",
        default=None,
        metavar="SHARE:ACCURACY",
        help="with --annotators: a share of items on which every annotator is right "
        "only with this probability (correlated errors, which the annotator "
        "model assumes away), e.g. 0.1:0.7",
    )
    p.add_argument("--per-system", action="store_true", help="also print a row per system")
    p.add_argument("--json", action="store_true", help="print one line of JSON")
    return p


# Open-world defaults of the options a closed pool refuses (None tells "not given").
_OPEN_WORLD_DEFAULTS = {"target_half_width": 0.05, "reference_size": 300, "gold_rate": 0.05}
_OPEN_WORLD_ONLY = ("target_half_width", "reference_size", "interval", "hard_items")
_CLOSED_POOL_OPTIONS = (
    "design",
    "measures",
    "budget",
    "systems",
    "repeats",
    "seed",
    "confidence",
    "annotators",
    "gold_rate",
)


def _check_common(args) -> str | None:
    if args.repeats < 1:
        return "--repeats must be at least 1"
    if not 0 < args.confidence < 1:
        return "--confidence must lie strictly between 0 and 1"
    if args.budget is not None and args.budget < 0:
        return "--budget must be at least 0"
    return None


def _check(args) -> str | None:
    if args.design not in DESIGNS:
        return f"--design {args.design} is for closed pools (a data set with items.tsv)"
    if args.measures is not None:
        return "--measures applies to closed pools only (a data set with items.tsv)"
    if args.systems is not None:
        try:
            args.systems = int(args.systems)
        except ValueError:
            return "--systems must be a number of systems on an open-world data set"
        if args.systems < 1:
            return "--systems must be at least 1"
    if problem := _check_common(args):
        return problem
    if not 0 < args.target_half_width < 0.5:
        return "--target-half-width must lie strictly between 0 and 0.5"
    if args.reference_size < 0:
        return "--reference-size must be at least 0"
    if args.interval is not None and args.design != "default":
        return "--interval applies to the default design only (published uses Wald intervals)"
    if not 0 <= args.gold_rate < 1:
        return "--gold-rate must lie in [0, 1)"
    if args.annotators is not None:
        try:
            parse_annotators(args.annotators)
        except ValueError as exc:
            return f"--annotators: {exc}"
    if args.hard_items is not None:
        if args.annotators is None:
            return "--hard-items needs --annotators"
        try:
            share, accuracy = _hard_items(args.hard_items)
        except ValueError:
            return "--hard-items must be SHARE:ACCURACY, e.g. 0.1:0.7"
        if not (0 < share < 1 and 0 <= accuracy <= 1):
            return "--hard-items: the share must lie in (0, 1) and the accuracy in [0, 1]"
    return None


def _hard_items(text: str) -> tuple[float, float]:
    share, accuracy = text.split(":")
    return float(share), float(accuracy)


class _ProgressBar:
    def __init__(self, stream):
        self.stream = stream

    def __call__(self, done: int, total: int) -> None:
        width = 30
        filled = int(width * done / total)
        bar = "#" * filled + "-" * (width - filled)
        self.stream.write(f"\r[{bar}] {done}/{total} repeats")
        if done == total:
            self.stream.write("\n")
        self.stream.flush()


def _fmt(x: float, digits: int = 4) -> str:
    return "nan" if not math.isfinite(x) else f"{x:.{digits}f}"


def format_table(summary: SimulationSummary, *, per_system: bool = False) -> str:
    """The readable report printed without ``--json``."""
    s = summary
    lines = [
        f"design {s.design} on {s.dataset}: {s.systems} systems x {s.repeats} repeats "
        f"(seed {s.seed}), target half-width {s.target_half_width} at {s.confidence:.0%}, "
        f"reference sample {s.reference_size}",
        f"labels per repeat: {s.labels_mean:.1f} (sd {s.labels_sd:.1f})    "
        f"target met: {s.target_met:.3f}    rounds per repeat: {s.rounds_mean:.1f}    "
        f"{s.seconds:.1f} s",
    ]
    noisy = s.annotators is not None
    if noisy:
        lines.append(
            f"annotators {s.annotators}, gold rate {s.gold_rate}: judgments per repeat "
            f"{s.judgments_mean:.1f} ({s.gold_judgments_mean:.1f} on gold)"
        )
        if s.hard_items is not None:
            lines.append(
                f"hard items: {s.hard_items[0]:.0%} of items, on which every annotator "
                f"is right with probability {s.hard_items[1]}"
            )
    lines += [
        "",
        f"{'metric':<10} {'coverage':>9} {'median half-width':>18} {'bias':>9} "
        f"{'(se)':>8}" + (f" {'cov. at stop':>13} {'bias at stop':>13}" if noisy else ""),
    ]
    for m in OPEN_MEASURES:
        row = (
            f"{m:<10} {_fmt(s.coverage[m], 3):>9} {_fmt(s.half_width_median[m]):>18} "
            f"{_fmt(s.bias[m]):>9} {_fmt(s.bias_se.get(m, math.nan)):>8}"
        )
        if noisy:
            row += f" {_fmt(s.coverage_at_stop[m], 3):>13} {_fmt(s.bias_at_stop[m]):>13}"
        lines.append(row)
    if per_system:
        lines += [
            "",
            f"{'system':<32} {'cells':>5} {'cov P':>6} {'cov R':>6} {'cov F1':>6} "
            f"{'hw P':>7} {'bias P':>8} {'bias R':>8}",
        ]
        for row in s.per_system:
            c, h, b = row["coverage"], row["half_width_median"], row["bias"]
            lines.append(
                f"{row['system'][:32]:<32} {row['cells']:>5} {c['precision']:>6.2f} "
                f"{c['recall']:>6.2f} {c['f1']:>6.2f} {h['precision']:>7.4f} "
                f"{_fmt(b['precision']):>8} {_fmt(b['recall']):>8}"
            )
    return "\n".join(lines)


def _finite(value):
    """JSON has no NaN: non-finite numbers become ``null``."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _refuse(parser: argparse.ArgumentParser, problem: str) -> int:
    parser.print_usage(sys.stderr)
    print(f"error: {problem}", file=sys.stderr)
    return 2


def _load(loader, path: str):
    """The data set at ``path``, or ``None`` once its problems are printed."""
    try:
        return loader(path)
    except DatasetError as exc:
        print(f"error: malformed data set: {exc}", file=sys.stderr)
        return None


def _simulate_and_report(args, run, table) -> int:
    """``run(progress)`` the campaigns, then print their summary as JSON or as ``table``."""
    progress = None if args.json or not sys.stderr.isatty() else _ProgressBar(sys.stderr)
    try:
        summary = run(progress)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    if args.json:
        out = summary.as_dict()
        if not args.per_system:
            out.pop("per_system")
        print(json.dumps(_finite(out), allow_nan=False))
    else:
        print(table(summary, per_system=args.per_system))
    return 0


def _main_closed_pool(args, parser: argparse.ArgumentParser) -> int:
    if problem := _check_common(args):
        return _refuse(parser, problem)
    data = _load(load_closed_pool, args.dataset)
    if data is None:
        return 2
    for attr in _OPEN_WORLD_ONLY:
        if getattr(args, attr) is not None:
            flag = "--" + attr.replace("_", "-")
            return _refuse(parser, f"{flag} applies to open-world data sets, not to a closed pool")
    try:
        request = closed_pool_request(
            data, **{name: getattr(args, name) for name in _CLOSED_POOL_OPTIONS}
        )
    except ValueError as exc:
        return _refuse(parser, str(exc))
    return _simulate_and_report(
        args,
        lambda progress: simulate_closed_pool(data, **request, progress=progress),
        format_closed_pool_table,
    )


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if is_closed_pool(args.dataset):
        return _main_closed_pool(args, parser)
    args.design = args.design or "default"
    for key, value in _OPEN_WORLD_DEFAULTS.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    problem = _check(args)
    if problem:
        return _refuse(parser, problem)
    dataset = _load(load_dataset, args.dataset)
    if dataset is None:
        return 2
    if not dataset.truth.any():
        print(f"error: {args.dataset}: truth.tsv lists no correct item", file=sys.stderr)
        return 2
    options = {}
    if args.interval is not None:
        options["interval"] = args.interval
    if args.budget is not None:
        options["budget"] = args.budget
    annotators = None
    if args.annotators is not None:
        hard_share, hard_accuracy = _hard_items(args.hard_items) if args.hard_items else (0.0, 0.5)
        annotators = Annotators(
            args.annotators,
            gold_rate=args.gold_rate,
            hard_share=hard_share,
            hard_accuracy=hard_accuracy,
        )
    return _simulate_and_report(
        args,
        lambda progress: simulate(
            dataset,
            design=args.design,
            systems=args.systems,
            repeats=args.repeats,
            seed=args.seed,
            target_half_width=args.target_half_width,
            confidence=args.confidence,
            reference_size=args.reference_size,
            design_options=options,
            progress=progress,
            annotators=annotators,
        ),
        format_table,
    )


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # e.g. piped into `head`: not an error of ours
        sys.stderr.close()
        sys.exit(0)
