"""Through the API an account whose address is not verified does nothing (issue 29, N1): no
token for its password, a token or session it holds refused on every route (403
``unverified_email``, saying how to verify), nothing stored; once verified, the same calls work.
Anonymous reads stay open."""

from __future__ import annotations

import pytest
from account_support import NEWCOMER_PASSWORD as PASSWORD
from account_support import fullwidth
from allauth.account.models import EmailAddress
from rest_framework.test import APIClient

from leaderboard.models import ApiToken, Team
from leaderboard.services.task_roles import invite_to_task
from leaderboard.services.teams import invite_to_team
from leaderboard.services.tokens import _issue

pytestmark = pytest.mark.django_db


def assert_unverified(response) -> None:
    assert response.status_code == 403, response.content
    error = response.json()["error"]
    assert error["code"] == "unverified_email"
    assert "newcomer@example.org" in error["message"] and "/accounts/login/" in error["message"]


def test_no_token_for_the_password_of_an_unverified_account(newcomer):
    client = APIClient()
    body = {"username": "newcomer", "password": PASSWORD}
    assert_unverified(client.post("/api/token/", body, format="json"))
    assert_unverified(client.post("/api/token/rotate/", body, format="json"))
    assert not ApiToken.objects.exists()
    # A wrong password is told as before: only the password's holder learns the address waits.
    wrong = client.post("/api/token/", {**body, "password": "nope"}, format="json")
    assert wrong.status_code == 401
    EmailAddress.objects.filter(user=newcomer).update(verified=True)
    assert client.post("/api/token/", body, format="json").status_code == 201


def test_a_token_held_from_before_works_only_once_verified(newcomer, task, organizer, team):
    key = _issue(newcomer).key  # made before this rule, or before the address changed
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    team_key = invite_to_team(team=team, by=team.members.get()).key
    task_key = invite_to_task(task=task, role="annotator", by=organizer).key
    for method, path, body in [
        ("get", "/api/me/", None),
        ("get", f"/api/tasks/{task.slug}/", None),
        ("post", "/api/teams/", {"name": "Newcomers"}),
        ("post", "/api/teams/join/", {"key": team_key}),
        ("post", "/api/invitations/accept/", {"key": task_key}),
        ("post", f"/annotate/api/tasks/{task.slug}/claim", {"count": 1}),
    ]:
        assert_unverified(getattr(client, method)(path, body, format="json"))
    assert not Team.objects.filter(name="Newcomers").exists()
    assert not newcomer.teams.exists() and not task.annotators.filter(pk=newcomer.pk).exists()
    assert APIClient().get(f"/api/tasks/{task.slug}/").status_code == 200  # anonymous reads

    EmailAddress.objects.filter(user=newcomer).update(verified=True)
    assert client.post("/api/teams/join/", {"key": team_key}, format="json").status_code == 200
    accepted = client.post("/api/invitations/accept/", {"key": task_key}, format="json")
    assert accepted.status_code == 200


def test_a_session_of_an_unverified_account_is_refused_too(newcomer):
    client = APIClient()
    client.force_login(newcomer)  # however it got one (an administrator's sign-in form)
    assert_unverified(client.post("/api/teams/", {"name": "Newcomers"}, format="json"))
    assert not Team.objects.exists()


def test_a_token_for_the_address_in_another_spelling(newcomer):
    EmailAddress.objects.filter(user=newcomer).update(verified=True)
    login = f"Newcomer@{fullwidth('EXAMPLE')}.org"
    made = APIClient().post("/api/token/", {"username": login, "password": PASSWORD}, format="json")
    assert made.status_code == 201
    assert ApiToken.objects.get().user == newcomer
