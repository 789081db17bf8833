"""API key authentication: ``Authorization: Token <key>``, checked against the stored digest."""

from __future__ import annotations

from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from ..selectors import api_token_for_key


class HashedTokenAuthentication(TokenAuthentication):
    """DRF's token header, but keys are looked up by their SHA-256 digest (keys are not stored)."""

    def authenticate_credentials(self, key):
        token = api_token_for_key(key)
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        return token.user, token
