"""A task's email domain policy: who may submit by the domains of their verified addresses
(allowed ones and their subdomains; none blocked); refused submissions store nothing; the
settings are validated like every task setting. Addresses and the policy's domains compared in
one normalised form (NFKC, lower case, IDNA's ASCII form: issue 29, N2)."""

from __future__ import annotations

import io

import pytest
from account_support import fullwidth
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from leaderboard.email_domains import (
    invalid_domains,
    matches,
    normalize_domain,
    normalize_email,
    parse_domains,
)
from leaderboard.models import Run
from leaderboard.selectors import UnverifiedEmail
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
    with pytest.raises(UnverifiedEmail):  # an address waiting for its link: nothing at all
        submit(task, team, participant)
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


@pytest.mark.parametrize(
    "typed",
    [
        f"x@{fullwidth('example')}.net",  # fullwidth letters
        "X@EXAMPLE.NET",
        "x@exa\u200bmple.net",  # a zero-width space, which IDNA ignores
        "x@ex\u00adample.net",  # a soft hyphen, likewise
        "x@example\u3002net",  # an ideographic full stop
        f"x@example{fullwidth('.')}net",  # a fullwidth full stop
        " x@example.net. ",
        f"{fullwidth('x')}@example.net",
    ],
)
def test_every_spelling_of_one_mailbox_is_one_address(typed):
    assert normalize_email(typed) == "x@example.net"


def test_a_unicode_domain_is_kept_in_its_ascii_form_and_a_bad_one_refused():
    assert normalize_email("Jörg@Bücher.Example") == "jörg@xn--bcher-kva.example"
    assert normalize_domain("xn--bcher-kva.example") == "xn--bcher-kva.example"
    with pytest.raises(ValueError, match="not a domain name"):
        normalize_domain("exa mple\u0378.net")
    assert parse_domains(f"{fullwidth('EXAMPLE')}.net, @Bücher.example") == [
        "example.net",
        "xn--bcher-kva.example",
    ]
    assert invalid_domains(fullwidth("example.net")) == []


def test_an_address_is_stored_normalised_however_it_is_saved(django_user_model):
    user = django_user_model.objects.create_user("x", email=f"X@{fullwidth('EXAMPLE')}.net")
    assert user.email == "x@example.net"
    with_address(user, f"x@{fullwidth('example')}.NET")
    assert EmailAddress.objects.get(user=user).email == "x@example.net"


def test_a_unicode_spelling_of_a_blocked_domain_is_blocked(task, team, participant):
    update_task(task=task, blocked_email_domains="example.net")
    with_address(participant, "pat@example.net")
    # A row stored before addresses were normalised is read normalised.
    EmailAddress.objects.filter(user=participant).update(email=f"pat@{fullwidth('example')}.net")
    assert refused(task, team, participant).code == "email_domain_blocked"
    # A policy typed in another spelling blocks the same domain.
    update_task(task=task, blocked_email_domains=f"{fullwidth('EXAMPLE')}.net")
    EmailAddress.objects.filter(user=participant).update(email="pat@example.net")
    assert refused(task, team, participant).code == "email_domain_blocked"
