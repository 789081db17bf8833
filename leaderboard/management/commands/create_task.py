"""`manage.py create_task SLUG --title ...`: create a shared task from the command line, as a
draft (``open_task`` opens it once its checklist is complete)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from leaderboard.models import Task
from leaderboard.services.tasks import TaskSettingsError, create_task


def users_named(names: list[str], role: str) -> list:
    """The users called ``names``; one CommandError naming every unknown one."""
    User = get_user_model()
    found = {
        u.get_username(): u for u in User.objects.filter(**{f"{User.USERNAME_FIELD}__in": names})
    }
    missing = [n for n in names if n not in found]
    if missing:
        raise CommandError(
            f"no user named {', '.join(map(repr, missing))} (--{role}); create "
            "the account first, e.g. with `manage.py createsuperuser` or the admin"
        )
    return [found[n] for n in names]


class Command(BaseCommand):
    help = "Create a shared task (its organizers and annotators must already have accounts)."

    def add_arguments(self, parser):
        parser.add_argument("slug", help="short name used in URLs, e.g. febrl-2025")
        parser.add_argument("--title", required=True)
        parser.add_argument("--description", default="")
        parser.add_argument("--question", help="shown to annotators above every item")
        parser.add_argument(
            "--target-half-width",
            type=float,
            help="interval half-width every run should reach (default 0.05)",
        )
        parser.add_argument("--confidence", type=float, help="confidence level (default 0.95)")
        parser.add_argument(
            "--budget",
            type=int,
            help="most judgments the task may ask of annotators, gold answers "
            "included (default: no limit)",
        )
        parser.add_argument(
            "--judgments-per-item",
            type=int,
            help="judgments each new item gets at first; the planner may ask "
            "more where answers are doubtful (default 1)",
        )
        parser.add_argument(
            "--state",
            choices=Task.State.values,
            default=Task.State.DRAFT,
            help="default: draft; a new task has nothing of what opening needs yet, so open it "
            "with `open_task SLUG` after loading its data",
        )
        parser.add_argument(
            "--kind",
            choices=Task.Kind.values,
            help="open (default) or closed_pool: the organizer uploads the pool (load_pool) "
            "and every run scores every pool item",
        )
        parser.add_argument(
            "--measures",
            help="comma-separated measures the board shows (default precision,recall,f1; "
            "closed pools also accuracy, balanced_accuracy, mcc, fbeta)",
        )
        parser.add_argument(
            "--f-beta",
            type=float,
            help="the beta of the measure fbeta (default 1; shown as F0.5, F2, ...)",
        )
        parser.add_argument("--max-runs-per-team", type=int)
        parser.add_argument("--max-runs-per-team-per-day", type=int)
        parser.add_argument(
            "--organizer", action="append", default=[], metavar="USERNAME", help="may be repeated"
        )
        parser.add_argument(
            "--annotator", action="append", default=[], metavar="USERNAME", help="may be repeated"
        )

    def handle(self, *args, slug, title, organizer, annotator, **options):
        organizers = users_named(organizer, "organizer")
        annotators = users_named(annotator, "annotator")
        settings = {
            "description": options["description"],
            "state": options["state"],
            "question": options["question"],
            "target_half_width": options["target_half_width"],
            "confidence": options["confidence"],
            "label_budget": options["budget"],
            "judgments_per_item": options["judgments_per_item"],
            "kind": options["kind"],
            "measures": (
                [m.strip() for m in options["measures"].split(",") if m.strip()]
                if options["measures"] is not None
                else None
            ),
            "f_beta": options["f_beta"],
            "max_runs_per_team": options["max_runs_per_team"],
            "max_runs_per_team_per_day": options["max_runs_per_team_per_day"],
        }
        settings = {k: v for k, v in settings.items() if v is not None}
        try:
            with transaction.atomic():
                task = create_task(slug=slug, title=title, organizers=organizers, **settings)
                task.annotators.add(*annotators)
        except TaskSettingsError as exc:
            raise CommandError(exc.message) from None
        next_step = (
            f"; load its data, then `manage.py open_task {task.slug}` lists what it needs and "
            "opens it"
            if task.state == Task.State.DRAFT
            else ""
        )
        self.stdout.write(
            self.style.SUCCESS(
                f"created task {task.slug!r} ({task.state}): target ±{task.target_half_width:g} at "
                f"{task.confidence:g} confidence, budget "
                f"{task.label_budget if task.label_budget is not None else 'unlimited'} judgments, "
                f"{len(organizers)} organizer(s), {len(annotators)} annotator(s){next_step}"
            )
        )
