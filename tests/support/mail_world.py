"""Test support for the site's own mail: a task with an organizer, two teams whose members have
addresses (one member has none), runs moved to the states that owe mail, and the pipeline's
messages run in this process (``PipelineDriver``), so that the mail lands in ``mailoutbox``."""

from __future__ import annotations

from dataclasses import dataclass

from account_support import user_with_address
from django.contrib.auth import get_user_model

from leaderboard.models import Run, Task, Team
from leaderboard.services.lifecycle import transition_run
from leaderboard.services.tasks import create_task
from leaderboard.services.teams import create_team

from pipeline_support import add_run, open_unchecked


@dataclass
class MailWorld:
    task: Task
    people: dict  # name -> user: ada, bea, nomail (team Alpha), otto (Beta), olga (organizer)
    alpha: Team
    beta: Team


def build_mail_world() -> MailWorld:
    people = {
        name: user_with_address(name, f"{name}@example.org", password="pw")
        for name in ("ada", "bea", "otto", "olga")
    }
    people["nomail"] = get_user_model().objects.create_user("nomail", password="pw")
    task = open_unchecked(
        create_task(slug="mailtask", title="Mail task", organizers=[people["olga"]])
    )
    alpha = create_team(name="Alpha", members=[people["ada"], people["bea"], people["nomail"]])
    beta = create_team(name="Beta", members=[people["otto"]])
    return MailWorld(task=task, people=people, alpha=alpha, beta=beta)


def finished_run(task: Task, team: Team, state: str, reason: str = "", name: str = "run") -> Run:
    """A run of ``team`` moved through the lifecycle to ``state`` (scored, partial or rejected)
    with ``reason``; a rejected one with two problems."""
    if state == Run.State.REJECTED:
        run = Run(task=task, team=team, name=name)
        transition_run(run, Run.State.RECEIVED, "received run.tsv")
        problems = [
            {"line": 1, "message": "score 'score' is not a number"},
            {"line": 7, "message": "key missing"},
        ]
        return transition_run(run, state, reason, errors=problems, error_count=9)
    run = add_run(task, team, [0, 1, 2], name=name)
    transition_run(run, Run.State.PLANNING, "planning the first round")
    transition_run(run, Run.State.ESTIMATING, "final estimation")
    return transition_run(run, state, reason)
