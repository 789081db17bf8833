"""Load a task's gold items (items with a known answer) from a ``key<TAB>correct|incorrect`` file.

All or nothing: any problem (unknown key, bad answer, a key twice, a NUL byte, text that is not
UTF-8) is reported with its line number and nothing is stored. Loading the same file again
changes nothing. The organize page and ``POST /api/tasks/<slug>/gold/`` load the same way
(``annotation.services.upload_gold``).
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.services import GoldFileError, upload_gold
from leaderboard.models import Task


class Command(BaseCommand):
    help = (
        "Load gold items of task SLUG from FILE: one 'key<TAB>correct|incorrect' line per "
        "item (blank lines and '#' comments are skipped)."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="the task's slug")
        parser.add_argument("file", type=Path, help="the gold file (UTF-8)")

    def handle(self, *args, slug, file, **options):
        task = Task.objects.filter(slug=slug).first()
        if task is None:
            raise CommandError(f"no task with slug {slug!r}")
        if not file.is_file():
            raise CommandError(f"gold file not found: {file}")
        try:
            with file.open("rb") as f:
                loaded = upload_gold(task=task, upload=f)
        except GoldFileError as exc:
            raise CommandError(
                f"{file}: nothing loaded, {len(exc.errors)} problem(s):\n" + "\n".join(exc.errors)
            ) from exc
        self.stdout.write(
            f"gold items of task {task.slug}: {loaded.created} new, "
            f"{loaded.updated} changed, {loaded.unchanged} unchanged"
        )
