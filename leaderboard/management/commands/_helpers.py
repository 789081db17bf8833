"""What the commands of every app that act on one task share: the task by its slug."""

from __future__ import annotations

from django.core.management.base import CommandError

from leaderboard.models import Task


def task_named(slug: str) -> Task:
    """The task called ``slug``, or a CommandError saying there is none."""
    task = Task.objects.filter(slug=slug).first()
    if task is None:
        raise CommandError(f"no task with slug {slug!r}")
    return task
