"""The closed-pool side of ``python -m evaluation.simulate``: its options and its table.

A data set directory with ``items.tsv`` is a closed pool (:mod:`..closed_pool_data`);
:func:`closed_pool_request` turns the command line into the arguments of
:func:`.campaigns.simulate_closed_pool`, refusing the options that belong to open-world
campaigns, and :func:`format_closed_pool_table` prints the result. :data:`CLOSED_POOL_COMMAND`
is the kind's entry in the command's registry (:mod:`..kinds`).
"""

from __future__ import annotations

import argparse
from typing import Any

from ...core.closed_pool import CLOSED_POOL_MEASURES
from ...core.measures import OPEN_MEASURES
from ..annotators import parse_annotators
from ..campaigns import Annotators
from ..closed_pool_data import ClosedPoolData, is_closed_pool, load_closed_pool
from ..command import check_common, load, number_text, refuse, simulate_and_report
from ..open_world.rank_report import format_rank_lines
from .campaigns import (
    CLOSED_POOL_DESIGNS,
    PER_RUN_BUDGET_DESIGNS,
    ClosedPoolSummary,
    simulate_closed_pool,
)

__all__ = [
    "CLOSED_POOL_COMMAND",
    "DEFAULT_BUDGET",
    "ClosedPoolCommand",
    "closed_pool_request",
    "format_closed_pool_table",
]

DEFAULT_BUDGET = 2000
# The designs whose estimates give paired differences (:mod:`...core.closed_pool.paired`).
PAIRED_DESIGNS = ("adaptive",)
# The options of open-world campaigns, which a closed pool refuses.
_OPEN_WORLD_ONLY = ("target_half_width", "reference_size", "interval", "hard_items")
# The options a closed pool's campaigns take.
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


class ClosedPoolCommand:
    """``python -m evaluation.simulate`` on a closed pool (:class:`..kinds.SimulationKind`)."""

    name = "closed_pool"
    designs = CLOSED_POOL_DESIGNS
    default_design = "adaptive"
    description = "a closed pool"

    def holds(self, path: str) -> bool:
        return is_closed_pool(path)

    def command(self, args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
        if problem := check_common(args):
            return refuse(parser, problem)
        data = load(load_closed_pool, args.dataset)
        if data is None:
            return 2
        design = args.design or self.default_design
        if args.ranking is None:
            args.ranking = "paired" if design in PAIRED_DESIGNS else "bonferroni"
        if args.ranking == "paired" and design not in PAIRED_DESIGNS:
            return refuse(
                parser,
                f"--ranking paired needs the adaptive design's paired differences; the "
                f"{design} design ranks by --ranking bonferroni",
            )
        for attr in _OPEN_WORLD_ONLY:
            if getattr(args, attr) is not None:
                flag = "--" + attr.replace("_", "-")
                return refuse(
                    parser, f"{flag} applies to open-world data sets, not to a closed pool"
                )
        try:
            request = closed_pool_request(
                data, **{name: getattr(args, name) for name in _CLOSED_POOL_OPTIONS}
            )
        except ValueError as exc:
            return refuse(parser, str(exc))
        return simulate_and_report(
            args,
            lambda progress: simulate_closed_pool(
                data, **request, progress=progress, ranking=args.ranking
            ),
            format_closed_pool_table,
        )


CLOSED_POOL_COMMAND = ClosedPoolCommand()


def _systems(text: str | None, data: ClosedPoolData) -> list[int]:
    """Indices into ``data.systems`` in arrival order: all, the first K, or the ones named."""
    names = [s.name for s in data.systems]
    if text is None:
        return list(range(len(names)))
    if text.strip().isdigit():
        k = int(text)
        if k < 1:
            raise ValueError("--systems must be at least 1")
        return list(range(min(k, len(names))))
    chosen = [t.strip() for t in text.split(",") if t.strip()]
    missing = [t for t in chosen if t not in names]
    if missing:
        raise ValueError(f"--systems: {data.name} has no system {', '.join(missing)}")
    if len(set(chosen)) != len(chosen):
        raise ValueError("--systems names a system twice")
    return [names.index(t) for t in chosen]


def closed_pool_request(
    data: ClosedPoolData,
    *,
    design: str | None,
    measures: str | None,
    budget: int | None,
    systems: str | None,
    repeats: int,
    seed: int,
    confidence: float,
    annotators: str | None = None,
    gold_rate: float | None = None,
) -> dict[str, Any]:
    """Keyword arguments of ``simulate_closed_pool`` from the command line's option values.

    ``measures`` and ``systems`` are the options' texts (comma lists; ``systems`` may be a
    number K, the first K systems); ``None`` means the default. Raises ``ValueError`` naming
    the option at fault. ``annotators`` (with ``gold_rate``, default 0.05): a panel of
    fallible annotators instead of the oracle, for the multi-system designs.
    """
    design = design or ClosedPoolCommand.default_design
    if design not in CLOSED_POOL_DESIGNS:
        raise ValueError(
            f"--design {design} is an open-world design; on a closed pool choose one of "
            f"{', '.join(CLOSED_POOL_DESIGNS)}"
        )
    chosen: tuple[str, ...] = OPEN_MEASURES
    if measures is not None:
        chosen = tuple(m.strip() for m in measures.split(",") if m.strip())
        unknown = [m for m in chosen if m not in CLOSED_POOL_MEASURES]
        if unknown or not chosen or len(set(chosen)) != len(chosen):
            raise ValueError(
                f"--measures: a comma list of distinct names from {', '.join(CLOSED_POOL_MEASURES)}"
            )
    return {
        "design": design,
        "measures": chosen,
        "budget": DEFAULT_BUDGET if budget is None else budget,
        "systems": _systems(systems, data),
        "repeats": repeats,
        "seed": seed,
        "confidence": confidence,
        "annotators": _annotators(annotators, gold_rate, design),
    }


def _annotators(spec: str | None, gold_rate: float | None, design: str) -> Annotators | None:
    if spec is None:
        if gold_rate is not None:
            raise ValueError("--gold-rate applies with --annotators")
        return None
    if design in PER_RUN_BUDGET_DESIGNS:
        raise ValueError(f"--annotators applies to the multi-system designs, not {design}")
    parse_annotators(spec)  # raises ValueError naming what is wrong
    rate = 0.05 if gold_rate is None else gold_rate
    if not 0 <= rate < 1:
        raise ValueError("--gold-rate must lie in [0, 1)")
    return Annotators(spec, gold_rate=rate)


def format_closed_pool_table(summary: ClosedPoolSummary, *, per_system: bool = False) -> str:
    """The readable report printed without ``--json``."""
    s = summary
    k = len(s.system_names)
    if s.budget_scope == "run":
        budget = (
            f"budget {s.budget} labels per run ({s.design} re-uses no label: "
            f"the task pays for up to {k} x {s.budget})"
        )
    else:
        budget = f"budget {s.budget} labels for the whole task, shared by all {k} runs"
    lines = [
        f"design {s.design} on closed pool {s.dataset}: {k} systems arriving in turn x "
        f"{s.repeats} repeats (seed {s.seed}), intervals at {s.confidence:.0%}",
        f"{budget}; labels per repeat: {s.labels_mean:.1f} (sd {s.labels_sd:.1f})    "
        f"{s.seconds:.1f} s",
        *(
            [
                f"annotators {s.annotators}, gold rate {s.gold_rate:g}: "
                f"{s.judgments_mean:.1f} judgments per repeat (gold included)"
            ]
            if s.annotators is not None
            else []
        ),
        "",
        f"{'measure':<18} {'coverage':>8} {'lowest':>7} {'median half-width':>18} "
        f"{'bias':>9} {'(se)':>8} {'MSE':>9} {'undefined':>9}",
    ]
    for m in s.measures:
        lines.append(
            f"{m:<18} {number_text(s.coverage[m], '.3f'):>8} "
            f"{number_text(s.coverage_lowest[m], '.3f'):>7} "
            f"{number_text(s.half_width_median[m]):>18} {number_text(s.bias[m]):>9} "
            f"{number_text(s.bias_se[m]):>8} {number_text(s.mse[m], '.2e'):>9} "
            f"{number_text(s.undefined_share[m], '.3f'):>9}"
        )
    if per_system:
        lines += [
            "",
            f"{'system':<24} {'measure':<18} {'true':>7} {'coverage':>8} {'half-width':>10} "
            f"{'bias':>9} {'MSE':>9} {'undefined':>9}",
        ]
        for row in s.per_system:
            for m in s.measures:
                lines.append(
                    f"{row['system'][:24]:<24} {m:<18} {number_text(row['true'][m]):>7} "
                    f"{number_text(row['coverage'][m], '.3f'):>8} "
                    f"{number_text(row['half_width_median'][m]):>10} "
                    f"{number_text(row['bias'][m]):>9} "
                    f"{number_text(row['mse'][m], '.2e'):>9} "
                    f"{number_text(row['undefined_share'][m], '.3f'):>9}"
                )
    lines += format_rank_lines(s.rank)
    return "\n".join(lines)
