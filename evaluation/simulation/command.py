"""What ``python -m evaluation.simulate`` does alike for every kind of data set: the checks of
the options every kind takes, refusals, loading a data set, running the campaigns with a progress
bar, and printing their summary as one line of JSON or as the kind's table.

Each kind's command (:mod:`.open_world.command`, :mod:`.closed_pool.command`) reads its own
options and calls these; :mod:`.kinds` says which kind a data set is.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from typing import Any, Protocol, TextIO, TypeVar

from .dataset_files import DatasetError

__all__ = [
    "Summary",
    "check_common",
    "load",
    "number_text",
    "refuse",
    "simulate_and_report",
]

Data = TypeVar("Data")


class Summary(Protocol):
    """What the campaigns of every kind return: :meth:`as_dict` is the ``--json`` object."""

    def as_dict(self) -> dict[str, Any]: ...


def check_common(args: argparse.Namespace) -> str | None:
    """What is wrong with the options every kind takes (``--repeats``, ``--confidence``,
    ``--budget``), or ``None``."""
    if args.repeats < 1:
        return "--repeats must be at least 1"
    if not 0 < args.confidence < 1:
        return "--confidence must lie strictly between 0 and 1"
    if args.budget is not None and args.budget < 0:
        return "--budget must be at least 0"
    return None


def refuse(parser: argparse.ArgumentParser, problem: str) -> int:
    """Print the usage and ``problem``; the exit code of a refusal (2)."""
    parser.print_usage(sys.stderr)
    print(f"error: {problem}", file=sys.stderr)
    return 2


def load(loader: Callable[[str], Data], path: str) -> Data | None:
    """The data set at ``path``, or ``None`` once its problems are printed."""
    try:
        return loader(path)
    except DatasetError as exc:
        print(f"error: malformed data set: {exc}", file=sys.stderr)
        return None


def number_text(x: float | None, style: str = ".4f") -> str:
    """A figure of a table: ``nan`` where there is no finite value."""
    return "nan" if x is None or not math.isfinite(x) else format(x, style)


class _ProgressBar:
    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def __call__(self, done: int, total: int) -> None:
        width = 30
        filled = int(width * done / total)
        bar = "#" * filled + "-" * (width - filled)
        self.stream.write(f"\r[{bar}] {done}/{total} repeats")
        if done == total:
            self.stream.write("\n")
        self.stream.flush()


def _finite(value: Any) -> Any:
    """JSON has no NaN: non-finite numbers become ``null``."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def simulate_and_report(
    args: argparse.Namespace,
    run: Callable[[Callable[[int, int], None] | None], Summary],
    table: Callable[..., str],
) -> int:
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
