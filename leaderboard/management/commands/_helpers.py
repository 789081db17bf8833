"""What the commands of every app that act on one task share: the task by its slug, and the
arguments of a command that reads a file into a task."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from leaderboard.models import Task


def task_named(slug: str) -> Task:
    """The task called ``slug``, or a CommandError saying there is none."""
    task = Task.objects.filter(slug=slug).first()
    if task is None:
        raise CommandError(f"no task with slug {slug!r}")
    return task


class TaskFileCommand(BaseCommand):
    """A command that reads FILE into the task SLUG (a run, the pool, the reference sample, gold
    items): those two arguments; a subclass says what the file is (``file_help``) and adds its
    own options after them."""

    file_help = "the file"

    def add_arguments(self, parser):
        parser.add_argument("slug", help="the task's slug")
        parser.add_argument("file", type=Path, help=self.file_help)
