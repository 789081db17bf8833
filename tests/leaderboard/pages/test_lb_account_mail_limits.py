"""allauth's rate limits are on (issue 29): a password holder cannot have verification mails
sent without end. One mail per address per cooldown (``VERIFICATION_MAIL_COOLDOWN``)
and ``VERIFICATION_MAILS_PER_DAY`` a day, whatever asks for it (a sign-in to an unverified
account, the address page's re-send); past them no mail goes and the page says so; the counts are
shared by every web process (``CACHES["throttle"]``)."""

from __future__ import annotations

import pytest
from account_support import NEWCOMER_PASSWORD, newcomer, user_with_address
from allauth.account.models import EmailAddress
from django.core.cache import caches
from django.test import Client

pytestmark = pytest.mark.django_db

NO_MAIL = "No new verification mail was sent to newcomer@example.org"


def sign_in(client: Client):
    return client.post(
        "/accounts/login/", {"login": "newcomer", "password": NEWCOMER_PASSWORD}, follow=True
    )


def test_signing_in_unverified_sends_one_mail_per_cooldown_and_says_so(
    mailoutbox, rate_limit_clock
):
    newcomer()
    client = Client()
    first = sign_in(client)
    assert first.status_code == 200 and len(mailoutbox) == 1
    assert NO_MAIL not in first.content.decode()
    for _ in range(4):  # the right password, again and again: no more mail
        again = sign_in(client)
        assert again.status_code == 200 and NO_MAIL in again.content.decode()
        assert "Use the link in it" in again.content.decode()
    assert len(mailoutbox) == 1
    rate_limit_clock.move(179)
    sign_in(client)
    assert len(mailoutbox) == 1
    rate_limit_clock.move(2)  # the cooldown (180 s) has passed
    assert NO_MAIL not in sign_in(client).content.decode()
    assert [m.to for m in mailoutbox] == [["newcomer@example.org"]] * 2


def test_at_most_a_days_worth_of_verification_mails(mailoutbox, rate_limit_clock, settings):
    newcomer()
    client = Client()
    for _ in range(settings.VERIFICATION_MAILS_PER_DAY + 3):
        sign_in(client)
        rate_limit_clock.move(181)
    assert len(mailoutbox) == settings.VERIFICATION_MAILS_PER_DAY == 10
    rate_limit_clock.move(24 * 3600)
    sign_in(client)
    assert len(mailoutbox) == 11


def test_the_counts_are_shared_by_every_web_process(mailoutbox):
    newcomer()
    sign_in(Client())
    caches["default"].clear()  # per process without Redis: another process's would be empty
    assert NO_MAIL in sign_in(Client()).content.decode()
    assert len(mailoutbox) == 1


def test_the_address_page_resends_once_per_cooldown_and_says_so(mailoutbox, rate_limit_clock):
    user = user_with_address("holder", "holder@example.org", password=NEWCOMER_PASSWORD)
    client = Client()
    client.force_login(user)
    added = client.post(
        "/accounts/email/", {"action_add": "", "email": "second@example.org"}, follow=True
    )
    assert added.status_code == 200 and len(mailoutbox) == 1
    assert not EmailAddress.objects.get(email="second@example.org").verified
    for _ in range(3):
        again = client.post(
            "/accounts/email/", {"action_send": "", "email": "second@example.org"}, follow=True
        )
        assert again.status_code == 200
        assert "No new verification mail was sent to second@example.org" in again.content.decode()
    assert len(mailoutbox) == 1
    rate_limit_clock.move(181)
    client.post("/accounts/email/", {"action_send": "", "email": "second@example.org"})
    assert [m.to for m in mailoutbox] == [["second@example.org"]] * 2
