"""A task's email domain policy: who may submit by the domains of their verified addresses
(allowed ones and their subdomains; none blocked); refused submissions store nothing; the
settings are validated like every task setting."""

from __future__ import annotations

import io

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from leaderboard.email_domains import invalid_domains, matches, parse_domains
from leaderboard.models import Run
from leaderboard.services.runs import SubmissionError, submit_run
from leaderboard.services.tasks import TaskSettingsError, update_task

pytestmark = pytest.mark.django_db


def upload() -> io.BytesIO:
    stream = io.BytesIO(b"k1\t0.9\nk2\t0.1\n")
    stream.name = "run.tsv"
    return stream


def with_address(user, email: str, *, verified: bool = True):
    EmailAddress.objects.create(user=user, email=email, verified=verified, primary=True)
    return user


def submit(task, team, user):
    return submit_run(task=task, team=team, user=user, upload=upload(), enqueue=False)


def refused(task, team, user) -> SubmissionError:
    with pytest.raises(SubmissionError) as caught:
        submit(task, team, user)
    assert caught.value.http_status == 403
    assert not Run.objects.filter(task=task).exists()
    return caught.value


def test_lists_are_parsed_and_matched_by_domain_and_subdomain():
    assert parse_domains(" Uni.EDU, @lab.org\nexample.com ") == [
        "uni.edu",
        "lab.org",
        "example.com",
    ]
    assert matches("cs.uni.edu", ["uni.edu"]) == "uni.edu"
    assert matches("notuni.edu", ["uni.edu"]) is None
    assert invalid_domains("uni.edu, dom@in!, -bad.org,localhost") == ["dom@in!", "-bad.org"]


def test_a_blocked_domain_is_refused_and_nothing_is_stored(task, team, participant):
    update_task(task=task, blocked_email_domains="spam.example")
    with_address(participant, "pat@mail.spam.example")
    error = refused(task, team, participant)
    assert error.code == "email_domain_blocked"
    assert "mail.spam.example" in error.message and "linkage" in error.message


def test_only_allowed_domains_may_submit(task, team, participant):
    update_task(task=task, allowed_email_domains="uni.edu")
    error = refused(task, team, participant)  # no address at all
    assert error.code == "email_domain_not_allowed" and "uni.edu" in error.message
    with_address(participant, "pat@cs.uni.edu", verified=False)
    assert refused(task, team, participant).code == "email_domain_not_allowed"
    EmailAddress.objects.filter(user=participant).update(verified=True)
    assert submit(task, team, participant).state == Run.State.RECEIVED


def test_without_a_policy_anyone_in_a_team_submits(task, team, participant):
    assert submit(task, team, participant).state == Run.State.RECEIVED


def test_a_bad_domain_list_is_refused_and_changes_nothing(task):
    with pytest.raises(TaskSettingsError) as caught:
        update_task(task=task, allowed_email_domains="uni.edu, not/a/domain")
    assert caught.value.field_errors == {
        "allowed_email_domains": ["not a domain name: not/a/domain"]
    }
    task.refresh_from_db()
    assert task.allowed_email_domains == ""


def test_the_submit_page_and_the_api_name_the_refusal(task, team, participant, client):
    update_task(task=task, blocked_email_domains="spam.example")
    with_address(participant, "pat@spam.example")
    api = APIClient()
    api.force_authenticate(participant)
    response = api.post(
        f"/api/tasks/{task.slug}/runs/", {"file": upload(), "name": "x"}, format="multipart"
    )
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "email_domain_blocked"
    client.force_login(participant)
    page = client.post(f"/tasks/{task.slug}/submit/", {"file": upload(), "name": "y"})
    assert page.status_code == 403
    assert "may not submit" in page.content.decode()
    assert not Run.objects.exists()
    assert get_user_model().objects.filter(pk=participant.pk).exists()
