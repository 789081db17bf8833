"""API tokens: create (signed in or with username/password), rotate, revoke, throttling."""

from __future__ import annotations

import hashlib
import importlib
import io
from pathlib import Path
from unittest import mock

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.test import APIClient

from leaderboard.models import ApiToken
from leaderboard.services.tokens import create_token

pytestmark = pytest.mark.django_db
PASSWORD = "correct horse"
MIGRATIONS = Path(__file__).resolve().parents[3] / "leaderboard" / "migrations"


@pytest.fixture
def user(db):
    return get_user_model().objects.create_user("tok", password=PASSWORD)


def with_token(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_create_with_password_then_the_key_authenticates(user):
    created = APIClient().post(
        "/api/token/", {"username": "tok", "password": PASSWORD}, format="json"
    )
    assert created.status_code == 201
    key = created.json()["key"]
    me = with_token(key).get("/api/me/")
    assert me.status_code == 200 and me.json()["username"] == "tok"
    status = with_token(key).get("/api/token/").json()
    assert status["exists"] is True and status["created"] and key not in str(status)


def test_create_twice_is_a_conflict_that_points_to_rotate(api, user):
    assert api(user).post("/api/token/").status_code == 201
    again = api(user).post("/api/token/")
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "token_exists"
    assert "rotate" in again.json()["error"]["message"]
    assert ApiToken.objects.filter(user=user).count() == 1


def test_rotate_invalidates_the_old_key_at_once(user):
    old = create_token(user=user).key
    rotated = with_token(old).post("/api/token/rotate/")
    assert rotated.status_code == 201
    new = rotated.json()["key"]
    assert new != old
    refused = with_token(old).get("/api/me/")
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "authentication_failed"
    assert with_token(new).get("/api/me/").status_code == 200


def test_rotate_with_password_recovers_a_lost_key(user):
    create_token(user=user)
    rotated = APIClient().post(
        "/api/token/rotate/", {"username": "tok", "password": PASSWORD}, format="json"
    )
    assert rotated.status_code == 201
    assert ApiToken.objects.get(user=user).digest == ApiToken.digest_of(rotated.json()["key"])


def test_revoke_is_idempotent_and_the_key_stops_working(user):
    key = create_token(user=user).key
    assert with_token(key).delete("/api/token/").status_code == 204
    assert with_token(key).get("/api/me/").status_code == 401
    assert not ApiToken.objects.filter(user=user).exists()
    client = APIClient()
    client.force_authenticate(user)
    assert client.delete("/api/token/").status_code == 204
    assert client.get("/api/token/").json() == {"exists": False, "created": None}


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"username": "tok", "password": "wrong"}, 401, "authentication_failed"),
        ({"username": "nobody", "password": "x"}, 401, "authentication_failed"),
        ({"username": "tok"}, 400, "invalid"),
        ({"username": "tok", "password": PASSWORD, "scope": "all"}, 400, "invalid"),
        ({}, 401, "not_authenticated"),
    ],
)
def test_bad_credentials_are_refused_clearly(user, body, status, code):
    response = APIClient().post("/api/token/", body, format="json")
    assert response.status_code == status, response.content
    assert response.json()["error"]["code"] == code
    assert not ApiToken.objects.filter(user=user).exists()


def test_inactive_users_get_no_token(user):
    user.is_active = False
    user.save()
    response = APIClient().post(
        "/api/token/", {"username": "tok", "password": PASSWORD}, format="json"
    )
    assert response.status_code == 401


def test_token_creation_is_throttled(user, monkeypatch):
    from rest_framework.throttling import ScopedRateThrottle

    monkeypatch.setattr(
        ScopedRateThrottle,
        "THROTTLE_RATES",
        {**ScopedRateThrottle.THROTTLE_RATES, "auth": "3/hour"},
    )
    statuses = [
        APIClient()
        .post("/api/token/", {"username": "tok", "password": "no"}, format="json")
        .status_code
        for _ in range(4)
    ]
    assert statuses == [401, 401, 401, 429]
    throttled = APIClient().post(
        "/api/token/rotate/", {"username": "tok", "password": PASSWORD}, format="json"
    )
    assert throttled.status_code == 429
    assert throttled.json()["error"]["code"] == "throttled"
    # Reading the token's status is not throttled by the auth scope.
    client = APIClient()
    client.force_authenticate(user)
    assert client.get("/api/token/").status_code == 200


# -- keys at rest and password changes ------------------------------------------------------------
def test_the_key_is_not_stored_anywhere_only_its_digest(user):
    from django.core.management import call_command

    key = (
        APIClient()
        .post("/api/token/", {"username": "tok", "password": PASSWORD}, format="json")
        .json()["key"]
    )
    assert len(key) >= 64  # 256 random bits
    out = io.StringIO()
    call_command("dumpdata", stdout=out)
    assert key not in out.getvalue()
    assert ApiToken.objects.get(user=user).digest == hashlib.sha256(key.encode()).hexdigest()


@pytest.mark.django_db(transaction=True)
def test_existing_plain_keys_are_hashed_by_the_migration_and_keep_working(user):
    """The data migration reads rest_framework.authtoken's table, stores digests, drops it."""
    from django.apps import apps
    from django.db import connection

    migration = importlib.import_module(
        "leaderboard.migrations." + next(MIGRATIONS.glob("*_api_tokens_hashed.py")).stem
    )
    plain = "a" * 40
    with connection.schema_editor() as editor:
        editor.execute(
            "CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, "
            "user_id integer NOT NULL, created timestamp NOT NULL)"
        )
        editor.execute(
            "INSERT INTO authtoken_token (key, user_id, created) VALUES "
            f"('{plain}', {user.pk}, '2024-01-02 03:04:05')"
        )
    try:
        with connection.schema_editor() as editor:
            migration.hash_plain_tokens(apps, editor)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TABLE IF EXISTS authtoken_token")
    assert "authtoken_token" not in connection.introspection.table_names()
    token = ApiToken.objects.get(user=user)
    assert token.digest != plain and token.created.year == 2024
    me = with_token(plain).get("/api/me/")
    assert me.status_code == 200 and me.json()["username"] == "tok"


def change_password_with_set_password(user, client):
    user.set_password("another secret 42")
    user.save()


def change_password_on_the_site(user, client):
    client.force_login(user)
    response = client.post(
        "/accounts/password/change/",
        {
            "oldpassword": PASSWORD,
            "password1": "another secret 42",
            "password2": "another secret 42",
        },
    )
    assert response.status_code == 302, response.content[:500]


def change_password_in_the_admin(user, client):
    admin = get_user_model().objects.create_superuser("root", password="root-pw-1234")
    client.force_login(admin)
    response = client.post(
        f"/admin/auth/user/{user.pk}/password/",
        {
            "password1": "another secret 42",
            "password2": "another secret 42",
            "usable_password": "true",
        },
    )
    assert response.status_code == 302, response.content[:500]


def change_password_with_the_command(user, client):
    from django.contrib.auth.management.commands import changepassword
    from django.core.management import call_command

    with mock.patch.object(changepassword.getpass, "getpass", return_value="another secret 42"):
        call_command("changepassword", "tok", stdout=io.StringIO())


@pytest.mark.parametrize(
    "change",
    [
        change_password_with_set_password,
        change_password_on_the_site,
        change_password_in_the_admin,
        change_password_with_the_command,
    ],
)
def test_a_password_change_revokes_the_token(user, change):
    key = create_token(user=user).key
    assert with_token(key).get("/api/me/").status_code == 200
    change(get_user_model().objects.get(pk=user.pk), Client())
    assert get_user_model().objects.get(pk=user.pk).check_password("another secret 42")
    refused = with_token(key).get("/api/me/")
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "authentication_failed"
    assert not ApiToken.objects.filter(user=user).exists()


def test_signing_in_and_other_user_edits_keep_the_token(user):
    key = create_token(user=user).key
    assert (
        Client().post("/accounts/login/", {"login": "tok", "password": PASSWORD}).status_code == 302
    )  # saves last_login
    user.first_name = "Tok"
    user.save()
    assert with_token(key).get("/api/me/").status_code == 200


def test_the_api_token_command_prints_a_new_working_key(user):
    from django.core.management import CommandError, call_command

    old = create_token(user=user).key
    out = io.StringIO()
    call_command("api_token", "tok", stdout=out)
    key = out.getvalue().strip()
    assert with_token(key).get("/api/me/").json()["username"] == "tok"
    assert with_token(old).get("/api/me/").status_code == 401
    with pytest.raises(CommandError, match="no user named 'nobody'"):
        call_command("api_token", "nobody")
