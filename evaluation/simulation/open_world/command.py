"""The open-world side of ``python -m evaluation.simulate``: its options and its table.

A data set directory without ``items.tsv`` is an open-world one (:mod:`..datasets`): its options
are checked (:func:`check_options`), its campaigns run (:func:`.campaigns.simulate`), and
:func:`format_table` prints the result. :data:`OPEN_WORLD_COMMAND` is the kind's entry in the
command's registry (:mod:`..kinds`).
"""

from __future__ import annotations

import argparse
import math
import sys

from ...core.designs import DESIGNS
from ...core.measures import OPEN_MEASURES
from ..annotators import parse_annotators
from ..campaigns import Annotators
from ..closed_pool_data import is_closed_pool
from ..command import check_common, load, number_text, refuse, simulate_and_report
from ..datasets import load_dataset
from .campaigns import SimulationSummary, simulate
from .rank_report import OpenWorldRanks, format_rank_lines

__all__ = ["OPEN_WORLD_COMMAND", "OpenWorldCommand", "check_options", "format_table"]

# Open-world defaults of the options a closed pool refuses (None tells "not given").
_OPEN_WORLD_DEFAULTS = {"target_half_width": 0.05, "reference_size": 300, "gold_rate": 0.05}


class OpenWorldCommand:
    """``python -m evaluation.simulate`` on an open-world data set
    (:class:`..kinds.SimulationKind`)."""

    name = "open"
    designs = tuple(sorted(DESIGNS))
    default_design = "default"
    description = "an open-world data set"

    def holds(self, path: str) -> bool:
        return not is_closed_pool(path)

    def command(self, args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
        args.design = args.design or self.default_design
        for key, value in _OPEN_WORLD_DEFAULTS.items():
            if getattr(args, key) is None:
                setattr(args, key, value)
        if args.ranking is None:
            args.ranking = "paired" if args.design == "default" else "bonferroni"
        problem = check_options(args)
        if problem:
            return refuse(parser, problem)
        dataset = load(load_dataset, args.dataset)
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
            hard_share, hard_accuracy = (
                _hard_items(args.hard_items) if args.hard_items else (0.0, 0.5)
            )
            annotators = Annotators(
                args.annotators,
                gold_rate=args.gold_rate,
                hard_share=hard_share,
                hard_accuracy=hard_accuracy,
            )
        return simulate_and_report(
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
                ranker=OpenWorldRanks(args.ranking, args.confidence),
            ),
            format_table,
        )


OPEN_WORLD_COMMAND = OpenWorldCommand()


def check_options(args: argparse.Namespace) -> str | None:
    """What is wrong with the options for an open-world data set (their defaults filled in),
    or ``None``; ``--systems`` becomes a number."""
    if args.design not in DESIGNS:
        return f"--design {args.design} is for closed pools (a data set with items.tsv)"
    if args.measures is not None:
        return "--measures applies to closed pools only (a data set with items.tsv)"
    if args.ranking == "paired" and args.design != "default":
        return (
            f"--ranking paired needs the default design's paired differences; the "
            f"{args.design} design ranks by --ranking bonferroni"
        )
    return (
        _check_systems(args)
        or check_common(args)
        or _check_targets(args)
        or _check_annotators(args)
    )


def _check_systems(args: argparse.Namespace) -> str | None:
    if args.systems is None:
        return None
    try:
        args.systems = int(args.systems)
    except ValueError:
        return "--systems must be a number of systems on an open-world data set"
    return "--systems must be at least 1" if args.systems < 1 else None


def _check_targets(args: argparse.Namespace) -> str | None:
    if not 0 < args.target_half_width < 0.5:
        return "--target-half-width must lie strictly between 0 and 0.5"
    if args.reference_size < 0:
        return "--reference-size must be at least 0"
    if args.interval is not None and args.design != "default":
        return "--interval applies to the default design only (published uses Wald intervals)"
    return None


def _check_annotators(args: argparse.Namespace) -> str | None:
    if not 0 <= args.gold_rate < 1:
        return "--gold-rate must lie in [0, 1)"
    if args.annotators is not None:
        try:
            parse_annotators(args.annotators)
        except ValueError as exc:
            return f"--annotators: {exc}"
    if args.hard_items is None:
        return None
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
            f"{m:<10} {number_text(s.coverage[m], '.3f'):>9} "
            f"{number_text(s.half_width_median[m]):>18} "
            f"{number_text(s.bias[m]):>9} {number_text(s.bias_se.get(m, math.nan)):>8}"
        )
        if noisy:
            row += (
                f" {number_text(s.coverage_at_stop[m], '.3f'):>13}"
                f" {number_text(s.bias_at_stop[m]):>13}"
            )
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
                f"{number_text(b['precision']):>8} {number_text(b['recall']):>8}"
            )
    lines += format_rank_lines(s.rank)
    return "\n".join(lines)
