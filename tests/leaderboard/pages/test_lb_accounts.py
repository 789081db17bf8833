"""Accounts (django-allauth behind ``leaderboard.views.accounts``): sign-up with email
verification, password reset and change by mail, the registration setting, and the brakes on
sign-up and reset (429 past the limit, nothing created, no mail sent)."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.test import Client
from sent_mail import link_to, mail_files, use_file_mail

pytestmark = pytest.mark.django_db

PASSWORD = "a long new secret 42"


def signup(client, username="newcomer", email="newcomer@example.org", **extra):
    return client.post(
        "/accounts/signup/",
        {"email": email, "username": username, "password1": PASSWORD, "password2": PASSWORD},
        **extra,
    )


def signed_in_as(client) -> str | None:
    user_id = client.session.get("_auth_user_id")
    return get_user_model().objects.get(pk=user_id).username if user_id else None


def test_sign_up_sends_a_verification_link_and_signing_in_waits_for_it(mailoutbox):
    client = Client()
    response = signup(client)
    assert response.status_code == 302
    assert urlsplit(response["Location"]).path == "/accounts/confirm-email/"
    assert signed_in_as(client) is None
    assert len(mailoutbox) == 1 and mailoutbox[0].to == ["newcomer@example.org"]
    # Before the address is verified the password is right but the sign-in waits for it.
    other = Client()
    refused = other.post("/accounts/login/", {"login": "newcomer", "password": PASSWORD})
    assert urlsplit(refused["Location"]).path == "/accounts/confirm-email/"
    assert signed_in_as(other) is None
    link = link_to(mailoutbox[0].body, "/accounts/confirm-email/")
    path = urlsplit(link).path
    assert client.get(path).status_code == 200
    assert client.post(path).status_code == 302
    assert EmailAddress.objects.get(email="newcomer@example.org").verified
    signed = Client()
    assert signed.post("/accounts/login/", {"login": "newcomer@example.org", "password": PASSWORD})
    assert signed_in_as(signed) == "newcomer"


def test_a_forged_verification_link_verifies_nothing(mailoutbox):
    signup(Client())
    client = Client()
    page = client.get("/accounts/confirm-email/forged-key/")
    assert "expired or is invalid" in page.content.decode()
    client.post("/accounts/confirm-email/forged-key/")
    assert not EmailAddress.objects.get(email="newcomer@example.org").verified


def test_a_taken_name_or_address_creates_nothing(mailoutbox, rate_limit_clock):
    signup(Client())
    rate_limit_clock.move(181)  # mail to one address: at most one per cooldown
    again = signup(Client(), email="other@example.org")
    assert again.status_code == 200 and "already" in again.content.decode()
    # A taken address is answered like a new one (it tells nobody who has an account); its
    # owner is told by mail instead.
    taken = signup(Client(), username="someone-else")
    assert taken.status_code == 302
    assert not get_user_model().objects.filter(username="someone-else").exists()
    assert [message.to for message in mailoutbox] == [["newcomer@example.org"]] * 2


def test_password_reset_by_mail_sets_a_new_password(mailoutbox):
    user = get_user_model().objects.create_user("resetme", "resetme@example.org", "old pw 1234")
    EmailAddress.objects.create(user=user, email=user.email, verified=True, primary=True)
    client = Client()
    response = client.post("/accounts/password/reset/", {"email": "resetme@example.org"})
    assert response.status_code == 302
    link = link_to(mailoutbox[0].body, "/accounts/password/reset/key/")
    form = client.get(urlsplit(link).path, follow=True)
    assert form.status_code == 200
    done = client.post(
        form.redirect_chain[-1][0] if form.redirect_chain else urlsplit(link).path,
        {"password1": PASSWORD, "password2": PASSWORD},
    )
    assert done.status_code == 302
    user.refresh_from_db()
    assert user.check_password(PASSWORD)


def test_password_reset_of_an_unknown_address_sends_no_reset_link(mailoutbox):
    response = Client().post("/accounts/password/reset/", {"email": "nobody@example.org"})
    assert response.status_code == 302  # the same answer: it tells nobody who has an account
    assert all("/password/reset/key/" not in message.body for message in mailoutbox)


def test_password_change_needs_the_old_password():
    user = get_user_model().objects.create_user("changer", password="old pw 1234")
    client = Client()
    client.force_login(user)
    wrong = client.post(
        "/accounts/password/change/",
        {"oldpassword": "wrong", "password1": PASSWORD, "password2": PASSWORD},
    )
    assert wrong.status_code == 200
    user.refresh_from_db()
    assert user.check_password("old pw 1234")
    right = client.post(
        "/accounts/password/change/",
        {"oldpassword": "old pw 1234", "password1": PASSWORD, "password2": PASSWORD},
    )
    assert right.status_code == 302
    user.refresh_from_db()
    assert user.check_password(PASSWORD)


def test_an_account_made_by_an_administrator_signs_in_without_an_address():
    get_user_model().objects.create_user("made-by-admin", password="admin pw 1234")
    client = Client()
    response = client.post(
        "/accounts/login/", {"login": "made-by-admin", "password": "admin pw 1234"}
    )
    assert response.status_code == 302
    assert signed_in_as(client) == "made-by-admin"


@pytest.mark.parametrize("mode", ["closed", "invite"])
def test_closed_or_invite_only_registration_refuses_sign_up(settings, mailoutbox, mode):
    settings.REGISTRATION = mode
    client = Client()
    page = client.get("/accounts/signup/")
    assert page.status_code == 403
    assert ("invitation" in page.content.decode()) == (mode == "invite")
    refused = signup(client)
    assert refused.status_code == 403
    assert not get_user_model().objects.filter(username="newcomer").exists()
    assert mailoutbox == []


def test_sign_up_is_braked_per_address(settings, mailoutbox):
    settings.SIGNUP_LIMIT = 2
    client = Client(REMOTE_ADDR="10.1.0.1")
    assert signup(client, "one", "one@example.org").status_code == 302
    assert signup(client, "two", "two@example.org").status_code == 302
    refused = signup(client, "three", "three@example.org")
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) == settings.ACCOUNT_ATTEMPT_WINDOW
    assert "Too many sign-ups" in refused.content.decode()
    assert not get_user_model().objects.filter(username="three").exists()
    assert len(mailoutbox) == 2
    # Another address is counted on its own.
    assert signup(Client(REMOTE_ADDR="10.1.0.2"), "four", "four@example.org").status_code == 302


def test_password_reset_is_braked_per_address_and_per_email_asked(settings, mailoutbox):
    settings.PASSWORD_RESET_LIMIT = 2
    get_user_model().objects.create_user("victim", "victim@example.org", "pw 12345678")
    for i in range(2):
        response = Client(REMOTE_ADDR=f"10.2.0.{i}").post(
            "/accounts/password/reset/", {"email": "victim@example.org"}
        )
        assert response.status_code == 302
    sent = len(mailoutbox)
    refused = Client(REMOTE_ADDR="10.2.0.9").post(
        "/accounts/password/reset/", {"email": "VICTIM@example.org"}
    )
    assert refused.status_code == 429
    assert "Too many password reset requests" in refused.content.decode()
    assert len(mailoutbox) == sent
    client = Client(REMOTE_ADDR="10.2.0.20")
    for i in range(2):
        client.post("/accounts/password/reset/", {"email": f"other-{i}@example.org"})
    assert client.post("/accounts/password/reset/", {"email": "x@example.org"}).status_code == 429


def test_the_file_backend_of_the_test_settings_writes_the_verification_mail(settings, tmp_path):
    use_file_mail(settings, tmp_path)
    signup(Client())
    (mail,) = mail_files(tmp_path)
    assert "newcomer@example.org" in mail
    assert "/accounts/confirm-email/" in link_to(mail, "/accounts/confirm-email/")
