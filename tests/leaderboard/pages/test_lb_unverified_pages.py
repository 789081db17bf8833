"""On the pages an account whose address is not verified does nothing (issue 29, N1): signing
in sends the link again instead of a session; a session it has anyway (an administrator's
sign-in form) makes no team, joins none, accepts no invitation and submits no run: a 403 page
saying how to verify, nothing stored."""

from __future__ import annotations

import pytest
from account_support import NEWCOMER_PASSWORD as PASSWORD
from allauth.account.models import EmailAddress
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from leaderboard.models import Run, Team
from leaderboard.services.task_roles import invite_to_task
from leaderboard.services.teams import invite_to_team

pytestmark = pytest.mark.django_db


def assert_refused_page(response) -> None:
    assert response.status_code == 403
    text = response.content.decode()
    assert "verify your email address first" in text.lower()
    assert "newcomer@example.org" in text and "/accounts/login/" in text


def test_signing_in_sends_the_link_again_and_gives_no_session(newcomer, mailoutbox):
    client = Client()
    response = client.post("/accounts/login/", {"login": "newcomer", "password": PASSWORD})
    assert response.status_code == 302 and "confirm-email" in response["Location"]
    assert "_auth_user_id" not in client.session
    assert [m.to for m in mailoutbox] == [["newcomer@example.org"]]


def test_a_session_of_an_unverified_account_acts_on_no_page(
    newcomer, task, organizer, team, participant
):
    client = Client()
    client.force_login(newcomer)
    assert_refused_page(client.post("/teams/", {"name": "Newcomers"}))
    assert not Team.objects.filter(name="Newcomers").exists()
    team_key = invite_to_team(team=team, by=participant).key
    assert_refused_page(client.post(f"/teams/join/{team_key}/"))
    task_key = invite_to_task(task=task, role="annotator", by=organizer).key
    assert_refused_page(client.post(f"/invitations/{task_key}/"))
    assert not newcomer.teams.exists() and not task.annotators.filter(pk=newcomer.pk).exists()

    team.members.add(newcomer)  # however they got in, the run is refused
    upload = SimpleUploadedFile("run.tsv", b"k1\t0.9\n")
    assert_refused_page(
        client.post(f"/tasks/{task.slug}/submit/", {"team": team.pk, "file": upload})
    )
    assert not Run.objects.exists()

    EmailAddress.objects.filter(user=newcomer).update(verified=True)
    assert client.post(f"/invitations/{task_key}/").status_code == 302
    assert task.annotators.filter(pk=newcomer.pk).exists()
