"""`manage.py submit_run SLUG FILE --team NAME --user USERNAME`: submit a run for a team."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.files import File
from django.core.management.base import CommandError

from leaderboard.management.commands._helpers import TaskFileCommand
from leaderboard.models import Run, Team
from leaderboard.services.ingest import submit_and_ingest
from leaderboard.services.runs import SubmissionError
from site_platform.commands import report_problems


class Command(TaskFileCommand):
    help = (
        "Submit FILE as a run of team NAME to task SLUG, as USERNAME (a member of the "
        "team): validated like a web upload, then queued for planning (or held for the "
        "organizers when most of its keys match no item and look malformed)."
    )
    file_help = "the run: TSV or JSON Lines, gzip is fine"

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--team", required=True, help="the team's name")
        parser.add_argument("--user", required=True, help="a member of the team")
        parser.add_argument("--name", default="", help="run name (default: run-N)")
        parser.add_argument("--description", default="")

    def load(self, task, file, *, team, user, name, description, **options):
        team_obj = Team.objects.filter(name=team).first()
        if team_obj is None:
            raise CommandError(f"no team named {team!r}")
        User = get_user_model()
        user_obj = User.objects.filter(**{User.USERNAME_FIELD: user}).first()
        if user_obj is None:
            raise CommandError(f"no user named {user!r}")
        try:
            with file.open("rb") as f:
                run = submit_and_ingest(
                    task=task,
                    team=team_obj,
                    user=user_obj,
                    upload=File(f, name=file.name),
                    file_name=file.name,
                    name=name,
                    description=description,
                )
        except SubmissionError as exc:
            report_problems(self.stderr, exc)
            where = f" (run {exc.run.pk} recorded as rejected)" if exc.run is not None else ""
            raise CommandError(f"{file}: {exc.message}{where}") from None
        self.stdout.write(
            self.style.SUCCESS(
                f"run {run.pk} {run.name!r} of team {team_obj.name!r}: {run.state}, "
                f"{run.n_predictions} predictions ({run.n_new_items} new items)"
            )
        )
        if run.state == Run.State.HELD:
            self.stdout.write(self.style.WARNING(run.reason))
