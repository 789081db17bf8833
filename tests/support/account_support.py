"""Test support for accounts: people with an address, verified as sign-up's mailed link leaves
them, or waiting for it as sign-up leaves them (``selectors.has_verified_email``)."""

from __future__ import annotations

from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model


def user_with_address(username: str, email: str, *, verified: bool = True, **fields):
    """A user whose primary address is ``email``, verified or not (allauth's row for it)."""
    user = get_user_model().objects.create_user(username, email=email, **fields)
    EmailAddress.objects.create(user=user, email=email, verified=verified, primary=True)
    return user


NEWCOMER_PASSWORD = "a-long-pass-42"


def newcomer():
    """An account as sign-up leaves it: ``newcomer@example.org``, its mailed link not opened
    yet (password :data:`NEWCOMER_PASSWORD`)."""
    return user_with_address(
        "newcomer", "newcomer@example.org", verified=False, password=NEWCOMER_PASSWORD
    )


def fullwidth(text: str) -> str:
    """``text`` in fullwidth forms (``example`` → U+FF45 U+FF58 ...), a spelling NFKC undoes."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)
