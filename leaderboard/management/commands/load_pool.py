"""`manage.py load_pool SLUG FILE [--payloads FILE]`: upload a closed-pool task's items, once."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

from django.core.files import File
from django.core.management.base import CommandError

from leaderboard.management.commands._helpers import TaskFileCommand
from leaderboard.services.pool import upload_pool
from site_platform.commands import existing_file, report_problems
from site_platform.errors import ServiceError


class Command(TaskFileCommand):
    help = (
        "Create the pool of closed-pool task SLUG from FILE: one key per line (TSV) or "
        '{"key", "payload"} (JSONL); --payloads adds a JSONL file of {"key", "payload"}. '
        "Once; runs are refused until it is uploaded; gzip is fine."
    )
    file_help = "the pool's keys: TSV or JSON Lines, gzip is fine"

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--payloads", type=Path, help="JSON Lines: {key, payload} per line")

    def load(self, task, file, *, payloads, **options):
        if payloads is not None:
            existing_file(payloads)
        try:
            with ExitStack() as stack:
                f = stack.enter_context(file.open("rb"))
                p = stack.enter_context(payloads.open("rb")) if payloads else None
                n = upload_pool(
                    task=task,
                    user="manage.py",
                    upload=File(f, name=file.name),
                    payloads=File(p, name=payloads.name) if p and payloads else None,
                )
        except ServiceError as exc:
            report_problems(self.stderr, exc)
            raise CommandError(exc.message) from None
        self.stdout.write(self.style.SUCCESS(f"pool of {task.slug!r}: {n:,} items"))
