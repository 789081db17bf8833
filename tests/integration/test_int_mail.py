"""Mail through a real Celery worker and Redis: a run the worker rejects mails its team once,
sent by the worker after the rejection commits (the worker's console backend prints it)."""

from __future__ import annotations

import io

import pytest
from mail_world import build_mail_world

from leaderboard.models import Notification, Run
from leaderboard.services.runs import submit_run

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_a_run_the_worker_rejects_is_mailed_to_its_team_once(celery_worker, wait_for):
    world = build_mail_world()
    upload = io.BytesIO(b"k1\tnot-a-number\n")
    run = submit_run(
        task=world.task,
        team=world.alpha,
        user=world.people["ada"],
        upload=upload,
        file_name="run.tsv",
        name="bad-run",
    )
    assert run.state == Run.State.RECEIVED  # the worker validates it

    def sent():
        states = list(Notification.objects.values_list("recipient__username", "state"))
        return states if {state for _, state in states} == {"sent"} else None

    states = wait_for(sent, timeout=60, message="the worker to send the team's mail")
    assert sorted(states) == [("ada", "sent"), ("bea", "sent")]
    assert Run.objects.get(pk=run.pk).state == Run.State.REJECTED
    log = celery_worker.log_path.read_text()
    assert log.count('Subject: Run "bad-run" on Mail task: rejected') == 2
    assert "To: ada@example.org" in log and "To: bea@example.org" in log
