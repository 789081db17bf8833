"""Shared output of the upload commands."""

from __future__ import annotations


def report_problems(stream, exc) -> None:
    """Write an upload's problems, one per line with its line number, to ``stream``."""
    for problem in exc.problems:
        where = f"line {problem.line}: " if problem.line is not None else ""
        stream.write(f"  {where}{problem.message}")
    if exc.total > len(exc.problems):
        stream.write(f"  ... and {exc.total - len(exc.problems)} more problem(s)")
