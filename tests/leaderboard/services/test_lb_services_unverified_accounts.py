"""Only accounts whose address is verified act (issue 29, N1): an API token, a team made or
joined, a run, an invitation to a task accepted are refused (403 ``unverified_email``, the
message saying how to verify) and store nothing; an account with no address to verify (made by
an administrator or the demo) acts, and one that verifies acts from then on."""

from __future__ import annotations

import io

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.core.management import CommandError, call_command

from leaderboard.models import ApiToken, Run, TaskInvitation, Team
from leaderboard.selectors import UnverifiedEmail, has_verified_email
from leaderboard.services.runs import submit_run
from leaderboard.services.task_roles import accept_task_invitation, invite_to_task
from leaderboard.services.teams import create_team, invite_to_team, join_team
from leaderboard.services.tokens import create_token, rotate_token

pytestmark = pytest.mark.django_db


def verify(user) -> None:
    EmailAddress.objects.filter(user=user).update(verified=True)


def refused(action) -> UnverifiedEmail:
    with pytest.raises(UnverifiedEmail) as caught:
        action()
    error = caught.value
    assert (error.code, error.http_status) == ("unverified_email", 403)
    assert "newcomer@example.org" in error.message and "/accounts/login/" in error.message
    return error


def test_the_rule_verified_or_no_address_to_verify(newcomer):
    assert not has_verified_email(newcomer)
    verify(newcomer)
    assert has_verified_email(newcomer)
    made_by_admin = get_user_model().objects.create_user("admin-made")
    assert has_verified_email(made_by_admin)
    # An address typed by an administrator but never verified is waited for like sign-up's.
    typed = get_user_model().objects.create_user("typed", email="typed@example.org")
    assert not has_verified_email(typed)
    assert not has_verified_email(AnonymousUser())


def test_no_token_until_verified(newcomer):
    refused(lambda: create_token(user=newcomer))
    refused(lambda: rotate_token(user=newcomer))
    with pytest.raises(CommandError, match="verify your email address first"):
        call_command("api_token", "newcomer")
    assert not ApiToken.objects.exists()
    verify(newcomer)
    assert create_token(user=newcomer).key


def test_no_team_made_or_joined_until_verified(newcomer, team, participant):
    refused(lambda: create_team(name="Newcomers", members=[newcomer]))
    assert not Team.objects.filter(name="Newcomers").exists()
    key = invite_to_team(team=team, by=participant).key
    refused(lambda: join_team(key=key, user=newcomer))
    assert not team.members.filter(pk=newcomer.pk).exists()
    verify(newcomer)
    assert join_team(key=key, user=newcomer) == team


def test_no_invitation_to_a_task_accepted_until_verified(newcomer, task, organizer):
    key = invite_to_task(task=task, role="annotator", by=organizer).key
    refused(lambda: accept_task_invitation(key=key, user=newcomer))
    assert not task.annotators.filter(pk=newcomer.pk).exists()
    assert TaskInvitation.objects.get().used_at is None
    verify(newcomer)
    accept_task_invitation(key=key, user=newcomer)
    assert task.annotators.filter(pk=newcomer.pk).exists()


def test_no_run_until_verified(newcomer, task, team, sent_jobs):
    team.members.add(newcomer)  # however they got in: the submission itself is refused
    upload = io.BytesIO(b"k1\t0.9\n")
    upload.name = "run.tsv"

    def submit():
        upload.seek(0)
        return submit_run(task=task, team=team, user=newcomer, upload=upload, enqueue=False)

    refused(submit)
    assert not Run.objects.exists()
    verify(newcomer)
    assert submit().state == Run.State.RECEIVED
