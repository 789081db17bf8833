"""Addresses on the account pages (issue 29, N2, N12): one mailbox is one account however its
address is spelt (stored, mailed and signed in with in one normalised form), and failed
sign-ins are counted per account whatever login named it, on the site's form, the admin's and
the API's token endpoint alike."""

from __future__ import annotations

import pytest
from account_support import fullwidth, user_with_address
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.test import APIClient

from leaderboard.services.sign_in import counted_name

pytestmark = pytest.mark.django_db

PASSWORD = "a long new secret 42"


def signup(email: str, username: str):
    return Client().post(
        "/accounts/signup/",
        {"email": email, "username": username, "password1": PASSWORD, "password2": PASSWORD},
    )


def test_a_unicode_spelling_is_stored_and_mailed_as_the_mailbox_it_reaches(
    mailoutbox, rate_limit_clock
):
    assert signup(f"x@{fullwidth('example')}.net", "fullwidth").status_code == 302
    assert mailoutbox[0].to == ["x@example.net"]
    assert EmailAddress.objects.get().email == "x@example.net"
    assert get_user_model().objects.get(username="fullwidth").email == "x@example.net"
    # The same mailbox spelt otherwise is the account that exists: none is made.
    for username, email in [("ascii", "x@example.net"), ("upper", "X@EXA\u200bMPLE.NET")]:
        rate_limit_clock.move(181)  # mail to one address: at most one per cooldown
        assert signup(email, username).status_code == 302
        assert not get_user_model().objects.filter(username=username).exists()
    assert EmailAddress.objects.count() == 1
    assert [m.to for m in mailoutbox] == [["x@example.net"]] * 3


def test_signing_in_with_another_spelling_of_the_address(mailoutbox):
    user_with_address("someone", "someone@example.net", password=PASSWORD)
    client = Client()
    response = client.post(
        "/accounts/login/", {"login": f"Someone@{fullwidth('EXAMPLE')}.net", "password": PASSWORD}
    )
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(get_user_model().objects.get().pk)


def test_every_login_of_one_account_is_counted_as_that_account():
    user_with_address("victim", "victim@example.org")
    names = ["victim", "VICTIM", "victim@example.org", f"Victim@{fullwidth('EXAMPLE')}.org"]
    assert {counted_name(name) for name in names} == {counted_name("victim")}
    assert counted_name("nobody") == counted_name("NOBODY ") != counted_name("victim")


def test_failed_sign_ins_are_counted_per_account_whatever_was_typed(settings):
    settings.LOGIN_FAILURE_LIMIT = 4
    user_with_address("victim", "victim@example.org", password=PASSWORD, is_staff=True)
    # Four guesses from four addresses, each naming the account another way, on three forms.
    guesses = [
        Client(REMOTE_ADDR="10.9.0.1").post(
            "/accounts/login/", {"login": "victim", "password": "guess-1"}
        ),
        Client(REMOTE_ADDR="10.9.0.2").post(
            "/accounts/login/", {"login": "VICTIM@example.org", "password": "guess-2"}
        ),
        Client(REMOTE_ADDR="10.9.0.3").post(
            "/admin/login/",
            {"username": f"victim@{fullwidth('example')}.org", "password": "guess-3"},
        ),
        APIClient(REMOTE_ADDR="10.9.0.4").post(
            "/api/token/", {"username": "Victim", "password": "guess-4"}, format="json"
        ),
    ]
    assert [response.status_code for response in guesses] == [200, 200, 200, 401]
    refused = Client(REMOTE_ADDR="10.9.0.5").post(
        "/accounts/login/", {"login": "victim", "password": PASSWORD}
    )
    assert refused.status_code == 429  # the account's allowance is spent, whatever was typed
