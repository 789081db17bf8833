"""`manage.py open_task SLUG [--check]`: show a task's readiness checklist, and open the task
when nothing on it is missing (as the organize page's button and ``PATCH state`` do)."""

from __future__ import annotations

from django.core.management.base import CommandError

from leaderboard.kinds import kind_for
from leaderboard.management.commands._helpers import TaskCommand
from leaderboard.models import Task
from leaderboard.selectors import Readiness
from leaderboard.services.tasks import TaskNotReady, set_task_state


def checklist_lines(readiness: Readiness) -> list[str]:
    """One line per check: ``ok``, ``missing`` (keeps the task from opening) or ``note`` (a
    point of information that falls short)."""
    lines = []
    for check in readiness.checks:
        mark = "ok" if check.ok else "missing" if check.missing else "note"
        lines.append(f"  {mark:8s} {check.label}: {check.state}")
    return lines


class Command(TaskCommand):
    help = (
        "Open task SLUG (a draft, or a closed task again) if its readiness checklist has nothing "
        "missing; --check only prints the checklist."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument(
            "--check", action="store_true", help="print the checklist and change nothing"
        )

    def handle_task(self, task, *, check, **options):
        readiness = kind_for(task).readiness(task)
        verdict = "ready to open" if readiness.ready else "not ready to open"
        self.stdout.write(f"task {task.slug!r} ({task.state}): {verdict}")
        self.stdout.write("\n".join(checklist_lines(readiness)))
        if check:
            return
        if task.state == Task.State.OPEN:
            self.stdout.write(f"task {task.slug!r} is already open")
            return
        try:
            set_task_state(task=task, state=Task.State.OPEN)
        except TaskNotReady as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(self.style.SUCCESS(f"task {task.slug!r} is open: it takes runs"))
