"""Notifications by mail: a run scored, partial or rejected mails its team's members, a team's
request to take part mails the task's organizers; owed in the event's transaction, sent by a
worker after it commits, at most once however often the message comes; each person may turn
each kind off; a mail tells only what its recipient may see (never another team's runs, never
a held board's states) and says how to turn it off."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.mail.backends.locmem import EmailBackend
from django.utils import timezone
from mail_world import finished_run
from sent_mail import link_to

from evaluation.services.watchdog import watchdog
from leaderboard.models import MailKind, MailOptOut, Notification, Run
from leaderboard.services.board import hold_board, publish_board
from leaderboard.services.lifecycle import transition_run
from leaderboard.services.notifications import (
    MailPreferenceError,
    send_notifications,
    set_mail_preferences,
)
from leaderboard.services.teams import approve_team, leave_team, request_approval

pytestmark = pytest.mark.django_db

SENT = Notification.State.SENT


@pytest.fixture
def world(mail_world):
    return mail_world


def mails_to(outbox, address: str) -> list:
    return [message for message in outbox if message.to == [address]]


# -- a run's mail --------------------------------------------------------------------------------


def test_a_scored_run_mails_each_member_with_an_address_once(
    world, pipeline, committed, mailoutbox
):
    with committed():
        run = finished_run(world.task, world.alpha, Run.State.SCORED, "precision ±0.04 met")
    assert mailoutbox == []  # owed, not sent: a worker sends it
    assert [name for name, _ in pipeline.sent] == ["evaluation.send_notifications"]
    pipeline.drain()
    assert sorted(m.to[0] for m in mailoutbox) == ["ada@example.org", "bea@example.org"]
    message = mails_to(mailoutbox, "ada@example.org")[0]
    assert message.subject == 'Run "run" on Mail task: scored'
    assert "is scored" in message.body and "precision ±0.04 met" in message.body
    assert link_to(message.body, "/runs/") == f"http://localhost:8000/runs/{run.pk}/"
    assert link_to(message.body, "/accounts/notifications/")  # how to turn it off
    assert set(Notification.objects.values_list("state", flat=True)) == {SENT}


def test_a_retried_or_repeated_message_sends_no_second_mail(world, pipeline, committed, mailoutbox):
    with committed():
        finished_run(world.task, world.alpha, Run.State.SCORED)
    (_, (ids,)) = pipeline.sent[0]
    assert send_notifications(ids) == {SENT: 2}
    assert send_notifications(ids) == {"not pending": 2}  # Celery redelivers, or retries
    pipeline.drain()
    assert len(mailoutbox) == 2


def test_a_refused_mail_is_tried_again_and_sent_once(
    world, pipeline, committed, mailoutbox, monkeypatch
):
    with committed():
        finished_run(world.task, world.alpha, Run.State.PARTIAL, "label budget spent")
    (_, (ids,)) = pipeline.sent[0]
    real = EmailBackend.send_messages
    monkeypatch.setattr(EmailBackend, "send_messages", lambda *a: (_ for _ in ()).throw(OSError))
    with pytest.raises(OSError):
        send_notifications(ids)
    assert Notification.objects.get(pk=ids[0]).state == Notification.State.PENDING
    monkeypatch.setattr(EmailBackend, "send_messages", real)
    assert send_notifications(ids) == {SENT: 2}
    assert len(mailoutbox) == 2
    assert "is partial" in mailoutbox[0].body and "label budget spent" in mailoutbox[0].body


def test_a_mail_the_server_keeps_refusing_fails_after_the_attempts(
    world, pipeline, committed, mailoutbox, monkeypatch, settings
):
    settings.PIPELINE_MAX_ATTEMPTS = 2
    with committed():
        finished_run(world.task, world.alpha, Run.State.SCORED)
    (_, (ids,)) = pipeline.sent[0]
    monkeypatch.setattr(EmailBackend, "send_messages", lambda *a: (_ for _ in ()).throw(OSError))
    with pytest.raises(OSError):
        send_notifications(ids[:1])
    assert send_notifications(ids[:1]) == {"failed": 1}
    failed = Notification.objects.get(pk=ids[0])
    assert (failed.state, failed.attempts, failed.note) == ("failed", 2, "OSError: ")
    assert send_notifications(ids[:1]) == {"not pending": 1} and mailoutbox == []


def test_a_rejected_run_mails_its_first_problems(world, pipeline, committed, mailoutbox):
    with committed():
        finished_run(world.task, world.alpha, Run.State.REJECTED, "9 problems in the file")
    pipeline.drain()
    body = mails_to(mailoutbox, "bea@example.org")[0].body
    assert "is rejected" in body and "does not count against your team's quota" in body
    assert "The first 2 of its 9 problems" in body
    assert "- line 1: score 'score' is not a number" in body and "- line 7: key missing" in body


@pytest.mark.parametrize(
    "state", [Run.State.QUEUED, Run.State.PLANNING, Run.State.AWAITING_LABELS, Run.State.FAILED]
)
def test_other_states_owe_no_mail(world, pipeline, committed, mailoutbox, state):
    run = Run.objects.create(task=world.task, team=world.alpha, name="r", state="queued")
    path = {
        Run.State.QUEUED: [],
        Run.State.PLANNING: ["planning"],
        Run.State.AWAITING_LABELS: ["planning", "awaiting_labels"],
        Run.State.FAILED: ["failed"],
    }[state]
    with committed():
        for step in path:
            transition_run(run, step, "a step")
    assert not Notification.objects.exists() and pipeline.sent == []


def test_a_mail_tells_nothing_of_another_team(world, pipeline, committed, mailoutbox):
    with committed():
        finished_run(world.task, world.beta, Run.State.SCORED, name="beta-secret-run")
        finished_run(world.task, world.alpha, Run.State.REJECTED, name="alpha-run")
    pipeline.drain()
    for message in mails_to(mailoutbox, "ada@example.org"):
        assert "beta" not in (message.subject + message.body).lower()
    assert [m.subject for m in mails_to(mailoutbox, "otto@example.org")] == [
        'Run "beta-secret-run" on Mail task: scored'
    ]


def test_a_member_who_turned_the_kind_off_gets_none(world, pipeline, committed, mailoutbox):
    set_mail_preferences(user=world.people["ada"], run_finished=False)
    with committed():
        finished_run(world.task, world.alpha, Run.State.SCORED)
    # Turned off after the mail was owed, before it was sent: not sent either.
    set_mail_preferences(user=world.people["bea"], run_finished=False)
    pipeline.drain()
    assert mailoutbox == []
    assert list(Notification.objects.values_list("recipient__username", "state", "note")) == [
        ("bea", "skipped", "turned off by its recipient")
    ]


def test_a_member_who_left_the_team_before_the_mail_gets_none(
    world, pipeline, committed, mailoutbox
):
    with committed():
        finished_run(world.task, world.alpha, Run.State.SCORED)
    leave_team(team=world.alpha, user=world.people["ada"])
    pipeline.drain()
    assert [m.to for m in mailoutbox] == [["bea@example.org"]]


# -- a held board ----------------------------------------------------------------------------------


def test_a_held_boards_states_are_mailed_when_it_is_published(
    world, pipeline, committed, mailoutbox
):
    hold_board(task=world.task)
    with committed():
        finished_run(world.task, world.alpha, Run.State.SCORED)
        rejected = finished_run(world.task, world.alpha, Run.State.REJECTED, name="bad")
    pipeline.drain()
    # A rejection rests on no label: told at once; a scored state waits for the board.
    assert {m.subject for m in mailoutbox} == {'Run "bad" on Mail task: rejected'}
    assert set(
        Notification.objects.exclude(run_event__run=rejected).values_list("state", flat=True)
    ) == {Notification.State.HELD}
    with committed():
        publish_board(task=world.task)
    pipeline.drain()
    assert sorted(m.subject for m in mailoutbox) == [
        'Run "bad" on Mail task: rejected',
        'Run "bad" on Mail task: rejected',
        'Run "run" on Mail task: scored',
        'Run "run" on Mail task: scored',
    ]


def test_after_a_hold_only_the_runs_latest_state_is_mailed(world, pipeline, committed, mailoutbox):
    hold_board(task=world.task)
    with committed():
        run = finished_run(world.task, world.alpha, Run.State.PARTIAL, "error rates unsure")
        transition_run(run, Run.State.SCORED, "met now")
    pipeline.drain()
    assert mailoutbox == []
    with committed():
        publish_board(task=world.task)
    pipeline.drain()
    assert [m.subject for m in mailoutbox] == ['Run "run" on Mail task: scored'] * 2
    assert set(
        Notification.objects.filter(run_event__state="partial").values_list("note", flat=True)
    ) == {"superseded by a later state of the run"}


# -- lost messages ---------------------------------------------------------------------------------


def test_the_watchdog_sends_mail_whose_message_was_lost(
    world, pipeline, committed, mailoutbox, settings
):
    with committed():
        finished_run(world.task, world.alpha, Run.State.SCORED)
    pipeline.sent.clear()  # the broker lost it
    later = timezone.now() + timedelta(seconds=settings.PIPELINE_STUCK_SECONDS + 1)
    with committed():
        assert watchdog(now=later)["mail"] == 2
    pipeline.drain()
    assert len(mailoutbox) == 2
    with committed():
        assert watchdog(now=later + timedelta(hours=1))["mail"] == 0


def test_the_watchdog_looks_again_at_mail_held_by_a_hold_lifted_without_a_publication(
    world, pipeline, committed, mailoutbox, settings
):
    hold_board(task=world.task)
    with committed():
        finished_run(world.task, world.alpha, Run.State.SCORED)
    pipeline.drain()
    assert mailoutbox == []
    later = timezone.now() + timedelta(seconds=settings.PIPELINE_STUCK_SECONDS + 1)
    with committed():
        assert watchdog(now=later)["mail"] == 2  # still held: looked at, held again
    pipeline.drain()
    assert mailoutbox == []
    assert set(Notification.objects.values_list("state", flat=True)) == {"held"}
    # The hold ends without a publication (as when an organizer moves the deadline).
    type(world.task).objects.filter(pk=world.task.pk).update(board_held=False)
    much_later = timezone.now() + timedelta(seconds=2 * settings.PIPELINE_STUCK_SECONDS + 2)
    with committed():
        assert watchdog(now=much_later)["mail"] == 2
    pipeline.drain()
    assert len(mailoutbox) == 2


# -- a team's request ------------------------------------------------------------------------------


def test_a_teams_request_mails_the_tasks_organizers_once(world, pipeline, committed, mailoutbox):
    with committed():
        approval = request_approval(task=world.task, team=world.beta, by=world.people["otto"])
        request_approval(task=world.task, team=world.beta, by=world.people["otto"])  # again
    pipeline.drain()
    assert [m.to for m in mailoutbox] == [["olga@example.org"]]
    message = mailoutbox[0]
    assert message.subject == 'Team "Beta" asks to take part in Mail task'
    assert "(asked by otto)" in message.body
    assert link_to(message.body, "/organize/") == "http://localhost:8000/tasks/mailtask/organize/"
    assert link_to(message.body, "/accounts/notifications/")
    assert Notification.objects.get().approval == approval


def test_a_request_approved_before_its_mail_goes_is_not_mailed(
    world, pipeline, committed, mailoutbox
):
    with committed():
        request_approval(task=world.task, team=world.beta, by=world.people["otto"])
    approve_team(task=world.task, team=world.beta, by=world.people["olga"])
    pipeline.drain()
    assert mailoutbox == [] and Notification.objects.get().note == "already approved"


def test_an_organizer_who_turned_requests_off_gets_none(world, pipeline, committed, mailoutbox):
    set_mail_preferences(user=world.people["olga"], team_request=False)
    with committed():
        request_approval(task=world.task, team=world.beta, by=world.people["otto"])
    pipeline.drain()
    assert mailoutbox == [] and not Notification.objects.exists()


# -- preferences -----------------------------------------------------------------------------------


def test_preferences_are_on_until_turned_off_and_idempotent(world):
    ada = world.people["ada"]
    assert set_mail_preferences(user=ada) == {"run_finished": True, "team_request": True}
    for _ in range(2):
        assert set_mail_preferences(user=ada, run_finished=False) == {
            "run_finished": False,
            "team_request": True,
        }
    assert MailOptOut.objects.get().kind == MailKind.RUN_FINISHED
    assert set_mail_preferences(user=ada, run_finished=True)["run_finished"] is True
    assert not MailOptOut.objects.exists()


def test_an_unknown_kind_is_refused(world):
    with pytest.raises(MailPreferenceError) as caught:
        set_mail_preferences(user=world.people["ada"], runs=False)
    assert caught.value.http_status == 400 and "runs" in caught.value.message
    assert not MailOptOut.objects.exists()


def test_mail_goes_through_the_configured_backend(world, pipeline, committed, settings, tmp_path):
    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    settings.EMAIL_FILE_PATH = tmp_path
    with committed():
        finished_run(world.task, world.alpha, Run.State.SCORED)
    pipeline.drain()
    text = "".join(path.read_text() for path in tmp_path.iterdir())
    assert text.count("To: ") == 2 and "ada@example.org" in text


def test_links_start_with_the_sites_address(world, pipeline, committed, mailoutbox, settings):
    settings.SITE_URL = "https://board.example.org"
    with committed():
        run = finished_run(world.task, world.alpha, Run.State.SCORED)
    pipeline.drain()
    assert link_to(mailoutbox[0].body, "/runs/") == f"https://board.example.org/runs/{run.pk}/"
    assert link_to(mailoutbox[0].body, "/accounts/notifications/") == (
        "https://board.example.org/accounts/notifications/"
    )
