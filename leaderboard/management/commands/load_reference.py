"""`manage.py load_reference SLUG FILE`: replace a task's reference sample of true items."""

from __future__ import annotations

from django.core.files import File
from django.core.management.base import CommandError

from leaderboard.management.commands._helpers import TaskFileCommand
from leaderboard.selectors import reference_size
from leaderboard.services.reference import upload_reference
from leaderboard.services.runs import SubmissionError
from site_platform.commands import report_problems
from site_platform.errors import ServiceError


class Command(TaskFileCommand):
    help = (
        "Replace the reference sample of task SLUG with FILE: one true item per line, "
        '`key<TAB>group` (TSV) or {"key", "group", "payload"} (JSONL); gzip is fine.'
    )
    file_help = "the reference sample: TSV or JSON Lines, gzip is fine"

    def load(self, task, file, **options):
        try:
            with file.open("rb") as f:
                upload_reference(
                    task=task, user="manage.py", upload=File(f, name=file.name), file_name=file.name
                )
        except SubmissionError as exc:
            report_problems(self.stderr, exc)
            raise CommandError(f"{file}: {exc.message}") from None
        except ServiceError as exc:  # a draw of the sample built in the product is verifying
            raise CommandError(f"{file}: {exc.message}") from None
        size = reference_size(task)
        self.stdout.write(
            self.style.SUCCESS(
                f"reference sample of {task.slug!r}: {size.summary} (version {size.version})"
            )
        )
