"""Helpers of the management commands of every app: an input file that must exist, accounts by
username, and an upload's problems written one per line. (A task by its slug is the
leaderboard's: ``leaderboard.management.commands._helpers.task_named``.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from .errors import ServiceError


def existing_file(path: Path, what: str = "file") -> Path:
    """``path``, or a CommandError saying the ``what`` is not found when no such file exists."""
    if not path.is_file():
        raise CommandError(f"{what} not found: {path}")
    return path


def users_named(names: list[str], role: str) -> list[Any]:
    """The users called ``names``; one CommandError naming every unknown one (``role``: the
    option that named them)."""
    User = get_user_model()
    found = {
        u.get_username(): u for u in User.objects.filter(**{f"{User.USERNAME_FIELD}__in": names})
    }
    missing = [n for n in names if n not in found]
    if missing:
        raise CommandError(
            f"no user named {', '.join(map(repr, missing))} (--{role}); create "
            "the account first, e.g. with `manage.py createsuperuser` or the admin"
        )
    return [found[n] for n in names]


def report_problems(stream: Any, exc: ServiceError) -> None:
    """Write an upload's problems, one per line with its line number, to ``stream``."""
    for problem in exc.problems:
        where = f"line {problem.line}: " if problem.line is not None else ""
        stream.write(f"  {where}{problem.message}")
    if exc.total > len(exc.problems):
        stream.write(f"  ... and {exc.total - len(exc.problems)} more problem(s)")
