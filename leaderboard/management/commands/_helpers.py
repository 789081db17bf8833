"""What the commands of every app that act on one task share: the task by its slug, and the
arguments of a command that reads a file into a task."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from leaderboard.models import Task
from site_platform.commands import existing_file


def task_named(slug: str) -> Task:
    """The task called ``slug``, or a CommandError saying there is none."""
    task = Task.objects.filter(slug=slug).first()
    if task is None:
        raise CommandError(f"no task with slug {slug!r}")
    return task


class TaskCommand(BaseCommand):
    """A command on the task SLUG: that argument, and the task it names handed to
    ``handle_task`` (none: a CommandError)."""

    def add_arguments(self, parser):
        parser.add_argument("slug", help="the task's slug")

    def handle(self, *args, slug, **options):
        return self.handle_task(task_named(slug), **options)

    # The subclass's: ``handle_task(task, **its options)``.
    handle_task: Callable[..., object]


class TaskFileCommand(TaskCommand):
    """A command that reads FILE into the task SLUG (a run, the pool, the reference sample, gold
    items): those two arguments, and the task and the file, checked to exist, handed to
    ``load``. A subclass says what the file is (``file_help``; ``file_what`` in the refusal of
    a missing one) and adds its own options after them."""

    file_help = "the file"
    file_what = "file"

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("file", type=Path, help=self.file_help)

    def handle_task(self, task: Task, *, file: Path, **options):
        return self.load(task, existing_file(file, self.file_what), **options)

    # The subclass's: ``load(task, file, **its options)``.
    load: Callable[..., object]
