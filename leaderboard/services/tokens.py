"""Writes of API tokens: create, rotate and revoke a user's one token.

A user has at most one token (``rest_framework.authtoken``). Its key is shown once, when it is
made; afterwards only whether it exists and when it was created can be read. Rotating replaces
the key in one transaction, so the old key stops working at once.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from rest_framework.authtoken.models import Token


class TokenExists(Exception):
    """The user already has a token (rotate it to get a new key)."""


def create_token(*, user) -> Token:
    """Make the user's token; raises :class:`TokenExists` if they already have one."""
    try:
        with transaction.atomic():
            if Token.objects.filter(user=user).exists():
                raise TokenExists(user.get_username())
            return Token.objects.create(user=user)
    except IntegrityError as exc:  # a concurrent create won the race
        raise TokenExists(user.get_username()) from exc


def rotate_token(*, user) -> Token:
    """Replace the user's token (or make one) with a new key; the old key is invalid at once."""
    with transaction.atomic():
        # Serialise concurrent rotations of one user on the user row.
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        Token.objects.filter(user=user).delete()
        return Token.objects.create(user=user)


def revoke_token(*, user) -> bool:
    """Delete the user's token; idempotent. Returns whether there was one."""
    deleted, _ = Token.objects.filter(user=user).delete()
    return bool(deleted)
