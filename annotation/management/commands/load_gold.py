"""Load a task's gold items (items with a known answer) from a ``key<TAB>correct|incorrect`` file.

All or nothing: any problem (unknown key, bad answer, a key twice, a NUL byte, text that is not
UTF-8) is reported with its line number and nothing is stored. Loading the same file again
changes nothing. The organize page and ``POST /api/tasks/<slug>/gold/`` load the same way
(``annotation.services.upload_gold``).
"""

from __future__ import annotations

from django.core.management.base import CommandError

from annotation.services import GoldFileError, upload_gold
from leaderboard.management.commands._helpers import TaskFileCommand


class Command(TaskFileCommand):
    help = (
        "Load gold items of task SLUG from FILE: one 'key<TAB>correct|incorrect' line per "
        "item (blank lines and '#' comments are skipped)."
    )
    file_help = "the gold file (UTF-8)"
    file_what = "gold file"

    def load(self, task, file, **options):
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
