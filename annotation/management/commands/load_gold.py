"""Load a task's gold items (items with a known answer) from a ``key<TAB>correct|incorrect`` file.

All or nothing: any problem (unknown key, bad answer, a key twice) is reported with its line
number and nothing is stored. Loading the same file again changes nothing.
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.services import GoldFileError, load_gold
from leaderboard.models import Task


def _checked_lines(file: Path, lines):
    """The file's lines; a NUL byte stops the load (no database can hold it in a key)."""
    for number, line in enumerate(lines, start=1):
        if "\x00" in line:
            raise CommandError(f"{file}: nothing loaded, line {number} contains a NUL byte")
        yield line


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
            with file.open(encoding="utf-8-sig") as f:
                loaded = load_gold(task=task, lines=_checked_lines(file, f))
        except UnicodeDecodeError as exc:
            raise CommandError(f"{file} is not UTF-8 text: {exc}") from exc
        except GoldFileError as exc:
            raise CommandError(
                f"{file}: nothing loaded, {len(exc.errors)} problem(s):\n" + "\n".join(exc.errors)
            ) from exc
        self.stdout.write(
            f"gold items of task {task.slug}: {loaded.created} new, "
            f"{loaded.updated} changed, {loaded.unchanged} unchanged"
        )
