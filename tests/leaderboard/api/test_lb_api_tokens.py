"""API tokens: create (signed in or with username/password), rotate, revoke, throttling."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db
PASSWORD = "correct horse"


@pytest.fixture
def user(db):
    return get_user_model().objects.create_user("tok", password=PASSWORD)


def with_token(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_create_with_password_then_the_key_authenticates(user):
    created = APIClient().post("/api/token/", {"username": "tok", "password": PASSWORD},
                               format="json")
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
    assert Token.objects.filter(user=user).count() == 1


def test_rotate_invalidates_the_old_key_at_once(user):
    old = Token.objects.create(user=user).key
    rotated = with_token(old).post("/api/token/rotate/")
    assert rotated.status_code == 201
    new = rotated.json()["key"]
    assert new != old
    refused = with_token(old).get("/api/me/")
    assert refused.status_code == 401 and refused.json()["error"]["code"] == \
        "authentication_failed"
    assert with_token(new).get("/api/me/").status_code == 200


def test_rotate_with_password_recovers_a_lost_key(user):
    Token.objects.create(user=user)
    rotated = APIClient().post("/api/token/rotate/", {"username": "tok", "password": PASSWORD},
                               format="json")
    assert rotated.status_code == 201
    assert Token.objects.get(user=user).key == rotated.json()["key"]


def test_revoke_is_idempotent_and_the_key_stops_working(user):
    key = Token.objects.create(user=user).key
    assert with_token(key).delete("/api/token/").status_code == 204
    assert with_token(key).get("/api/me/").status_code == 401
    assert not Token.objects.filter(user=user).exists()
    client = APIClient()
    client.force_authenticate(user)
    assert client.delete("/api/token/").status_code == 204
    assert client.get("/api/token/").json() == {"exists": False, "created": None}


@pytest.mark.parametrize(("body", "status", "code"), [
    ({"username": "tok", "password": "wrong"}, 401, "authentication_failed"),
    ({"username": "nobody", "password": "x"}, 401, "authentication_failed"),
    ({"username": "tok"}, 400, "invalid"),
    ({"username": "tok", "password": PASSWORD, "scope": "all"}, 400, "invalid"),
    ({}, 401, "not_authenticated"),
])
def test_bad_credentials_are_refused_clearly(user, body, status, code):
    response = APIClient().post("/api/token/", body, format="json")
    assert response.status_code == status, response.content
    assert response.json()["error"]["code"] == code
    assert not Token.objects.filter(user=user).exists()


def test_inactive_users_get_no_token(user):
    user.is_active = False
    user.save()
    response = APIClient().post("/api/token/", {"username": "tok", "password": PASSWORD},
                                format="json")
    assert response.status_code == 401


def test_token_creation_is_throttled(user, monkeypatch):
    from rest_framework.throttling import ScopedRateThrottle

    monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES",
                        {**ScopedRateThrottle.THROTTLE_RATES, "auth": "3/hour"})
    statuses = [APIClient().post("/api/token/", {"username": "tok", "password": "no"},
                                 format="json").status_code for _ in range(4)]
    assert statuses == [401, 401, 401, 429]
    throttled = APIClient().post("/api/token/rotate/",
                                 {"username": "tok", "password": PASSWORD}, format="json")
    assert throttled.status_code == 429
    assert throttled.json()["error"]["code"] == "throttled"
    # Reading the token's status is not throttled by the auth scope.
    client = APIClient()
    client.force_authenticate(user)
    assert client.get("/api/token/").status_code == 200
