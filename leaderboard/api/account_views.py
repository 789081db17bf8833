"""REST API of the caller: their API token (create, rotate, revoke), who they are, and which
notifications they get by mail.

A token's key is returned once, when it is made. Creating or rotating needs either a signed-in
caller (session or token) or a username and password in the body; both are throttled (scope
``auth``), and a password is checked under the sign-in page's limit on failed attempts
(``leaderboard.services.sign_in``), so passwords cannot be guessed through the API.
"""

from __future__ import annotations

from django.contrib.auth import authenticate
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, status
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response

from site_platform.api.openapi import with_errors
from site_platform.api.views import ViewMixinBase

from ..selectors import api_token_of, mail_preferences, user_roles
from ..services.notifications import set_mail_preferences
from ..services.sign_in import (
    check_sign_in_allowed,
    count_failed_sign_in,
    failure_keys,
    normalized_login,
)
from ..services.tokens import (
    IssuedToken,
    create_token,
    revoke_token,
    rotate_token,
)
from .serializers import (
    CredentialsSerializer,
    MailPreferencesSerializer,
    MeSerializer,
    TokenKeySerializer,
    TokenStatusSerializer,
)
from .views import ApiView


class TokenWriteMixin(ViewMixinBase):
    """Who a token is made for: the username and password sent, else the signed-in caller."""

    @property
    def throttle_scope(self):
        return "auth" if self.request.method == "POST" else None

    def token_owner(self, request):
        if request.data and not hasattr(request.data, "keys"):
            raise exceptions.ValidationError({"non_field_errors": ["send a JSON object"]})
        credentials = CredentialsSerializer(data=request.data or {})
        credentials.is_valid(raise_exception=True)
        username = credentials.validated_data.get("username")
        password = credentials.validated_data.get("password")
        if username is None and password is None:
            if not request.user.is_authenticated:
                raise exceptions.NotAuthenticated("sign in, or send your username and password")
            return request.user
        if username is None or password is None:
            raise exceptions.ValidationError(
                {"username" if username is None else "password": ["needed with the other"]}
            )
        keys = failure_keys(request, username)
        check_sign_in_allowed(keys)
        login = normalized_login(username)  # an address in any spelling, as the sign-in form
        user = authenticate(request=request._request, username=login, password=password)
        if user is None or not user.is_active:
            count_failed_sign_in(keys)
            raise exceptions.AuthenticationFailed("wrong username or password")
        return user


def key_response(token: IssuedToken) -> Response:
    return Response(
        TokenKeySerializer({"key": token.key, "created": token.created}).data,
        status=status.HTTP_201_CREATED,
    )


class TokenView(TokenWriteMixin, ApiView):
    """``GET``: whether you have a token and when it was made (never the key). ``POST``: make
    one (the key is shown once). ``DELETE``: revoke it (idempotent)."""

    permission_classes = [AllowAny]

    @extend_schema(responses=with_errors({200: TokenStatusSerializer}, 401))
    def get(self, request):
        self.require_user(request)
        token = api_token_of(request.user)
        return Response(
            TokenStatusSerializer(
                {"exists": token is not None, "created": token.created if token else None}
            ).data
        )

    @extend_schema(
        request=CredentialsSerializer,
        responses=with_errors({201: TokenKeySerializer}, 400, 401, 409, 429),
        # Security requirement objects, as drf-spectacular uses them (its hint says str).
        auth=[{"tokenAuth": []}, {"cookieAuth": []}, {}],  # type: ignore[list-item]
    )
    def post(self, request):
        user = self.token_owner(request)
        return key_response(create_token(user=user))

    @extend_schema(responses=with_errors({204: None}, 401))
    def delete(self, request):
        self.require_user(request)
        revoke_token(user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @staticmethod
    def require_user(request) -> None:
        if not request.user.is_authenticated:
            raise exceptions.NotAuthenticated()


class TokenRotateView(TokenWriteMixin, ApiView):
    """Replace your token with a new key (made if you had none); the old key is invalid at once."""

    permission_classes = [AllowAny]

    @extend_schema(
        request=CredentialsSerializer,
        responses=with_errors({201: TokenKeySerializer}, 400, 401, 429),
        # Security requirement objects, as drf-spectacular uses them (its hint says str).
        auth=[{"tokenAuth": []}, {"cookieAuth": []}, {}],  # type: ignore[list-item]
    )
    def post(self, request):
        return key_response(rotate_token(user=self.token_owner(request)))


class MeView(ApiView):
    """Who you are: username, teams, the tasks you organize and annotate."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses=with_errors({200: MeSerializer}, 401))
    def get(self, request):
        roles = user_roles(request.user)
        return Response(
            MeSerializer(
                {
                    "username": request.user.get_username(),
                    "is_staff": request.user.is_staff,
                    "teams": [team.name for team in roles["teams"]],
                    "organizes": [task.slug for task in roles["organized"]],
                    "annotates": [task.slug for task in roles["annotated"]],
                }
            ).data
        )


class MailPreferencesView(ApiView):
    """Which notifications you get by mail, one switch per kind (all on until turned off).
    ``PATCH``: turn the kinds named on (``true``) or off; the others stay as they are."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses=with_errors({200: MailPreferencesSerializer}, 401))
    def get(self, request):
        return Response(MailPreferencesSerializer(mail_preferences(request.user)).data)

    @extend_schema(
        request=MailPreferencesSerializer,
        responses=with_errors({200: MailPreferencesSerializer}, 400, 401),
    )
    def patch(self, request):
        body = self.validated(MailPreferencesSerializer, partial=True)
        preferences = set_mail_preferences(user=request.user, **body)
        return Response(MailPreferencesSerializer(preferences).data)
