"""Writes of API tokens: create, rotate and revoke a user's one token.

A user has at most one token (:class:`~leaderboard.models.ApiToken`). Only the key's digest is
stored: the key is returned once, when it is made, and cannot be read again. Rotating replaces the
token in one transaction, so the old key stops working at once. A password change revokes the
token (``leaderboard.signals``): whoever learnt the old password may have made one. Only an
account whose address is verified gets one (``selectors.has_verified_email``); the API refuses
every request of one that is not, so a token made before does not work either.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from site_platform.errors import ServiceError

from ..models import ApiToken
from ..selectors import check_verified_email

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class TokenExists(ServiceError):
    """The user already has a token (rotate it to get a new key)."""

    code = "token_exists"
    http_status = 409

    def __init__(self) -> None:
        super().__init__(
            "you already have a token: POST /api/token/rotate/ for a new key "
            "(the old one stops working)"
        )


@dataclass(frozen=True)
class IssuedToken:
    """A token just made: its key (never stored, shown once) and when it was made."""

    key: str
    created: datetime


def _issue(user: User) -> IssuedToken:
    key = secrets.token_hex(32)
    token = ApiToken.objects.create(user=user, digest=ApiToken.digest_of(key))
    return IssuedToken(key=key, created=token.created)


def create_token(*, user: User) -> IssuedToken:
    """Make the user's token; raises :class:`TokenExists` if they already have one, and
    ``selectors.UnverifiedEmail`` (403) while their address is not verified."""
    check_verified_email(user)
    try:
        with transaction.atomic():
            if ApiToken.objects.filter(user=user).exists():
                raise TokenExists()
            return _issue(user)
    except IntegrityError as exc:  # a concurrent create won the race
        raise TokenExists() from exc


def rotate_token(*, user: User) -> IssuedToken:
    """Replace the user's token (or make one) with a new key; the old key is invalid at once.
    Refused like :func:`create_token` while the user's address is not verified."""
    check_verified_email(user)
    with transaction.atomic():
        # Serialise concurrent rotations of one user on the user row.
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        ApiToken.objects.filter(user=user).delete()
        return _issue(user)


def revoke_token(*, user: User) -> bool:
    """Delete the user's token; idempotent. Returns whether there was one."""
    deleted, _ = ApiToken.objects.filter(user=user).delete()
    return bool(deleted)
