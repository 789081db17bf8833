"""Rate limits, tokens and sign-in: throttles answer 429 with the one error body and
``Retry-After``; revoked or rotated keys stop working at once; a key is shown once and never
again (not in the API, not in logs, not in the admin); sign-in refuses password guessing.

DRF reads the throttle rates into ``SimpleRateThrottle.THROTTLE_RATES`` at import, so the tests
set small rates there (``override_settings`` would not reach them); the throttle cache starts
empty in every test (``tests/conftest.py``).
"""

from __future__ import annotations

import json
import logging

import pytest
from django.core.cache import caches
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, RequestFactory
from django.views.debug import SafeExceptionReporterFilter
from rest_framework.test import APIClient
from rest_framework.throttling import SimpleRateThrottle

from leaderboard.models import ApiToken
from leaderboard.services.tokens import create_token, rotate_token

pytestmark = pytest.mark.django_db
PASSWORD = "pw-secret-123"


@pytest.fixture
def rates(monkeypatch):
    """``rates(anon=..., user=..., ...)``: small throttle rates for this test."""

    def set_rates(**small):
        monkeypatch.setattr(
            SimpleRateThrottle, "THROTTLE_RATES", {**SimpleRateThrottle.THROTTLE_RATES, **small}
        )

    return set_rates


@pytest.fixture
def world(lb_world, sent_jobs):
    return lb_world


def with_token(user) -> APIClient:
    key = rotate_token(user=user).key
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def assert_throttled(response):
    assert response.status_code == 429, response.content[:300]
    error = response.json()["error"]
    assert error["code"] == "throttled" and error["message"]
    assert set(error) >= {"code", "message", "problems", "total", "run"}
    assert int(response["Retry-After"]) > 0


# -- throttles -----------------------------------------------------------------------------------
def test_anonymous_callers_are_throttled_per_address(world, rates):
    rates(anon="3/minute")
    client = APIClient()
    assert [client.get("/api/tasks/").status_code for _ in range(3)] == [200, 200, 200]
    assert_throttled(client.get("/api/tasks/main/board/"))
    other = APIClient(REMOTE_ADDR="10.9.8.7")
    assert other.get("/api/tasks/").status_code == 200
    # Signed-in callers are not counted against the anonymous rate.
    assert with_token(world.users["pa"]).get("/api/tasks/").status_code == 200


def test_a_forged_forwarded_for_header_does_not_buy_a_fresh_anonymous_budget(world, rates):
    rates(anon="2/minute")
    client = APIClient()
    statuses = [
        client.get("/api/tasks/", HTTP_X_FORWARDED_FOR=f"10.7.0.{i}").status_code for i in range(3)
    ]
    assert statuses == [200, 200, 429]


def test_sign_in_counts_the_connecting_address_not_a_forged_header(world, settings):
    settings.LOGIN_FAILURE_LIMIT = 2
    client = Client()
    for i in range(2):
        sign_in(client, f"nobody-{i}", "guess", HTTP_X_FORWARDED_FOR=f"10.8.0.{i}")
    assert sign_in(client, "pa", PASSWORD, HTTP_X_FORWARDED_FOR="10.8.0.9").status_code == 429


def test_signed_in_callers_are_throttled_per_user(world, rates):
    rates(user="4/minute")
    pa, pb = with_token(world.users["pa"]), with_token(world.users["pb"])
    assert [pa.get("/api/me/").status_code for _ in range(4)] == [200] * 4
    assert_throttled(pa.get("/api/tasks/main/quota/"))
    assert pb.get("/api/me/").status_code == 200
    # A second client of the same user shares the budget (per user, not per connection).
    assert_throttled(with_token(world.users["pa"]).get("/api/me/"))


def test_uploads_have_their_own_scope_and_a_refused_upload_stores_nothing(world, rates):
    from leaderboard.models import Run

    rates(uploads="2/hour")
    pa = with_token(world.users["pa"])
    statuses = []
    for i in range(3):
        body = {"file": SimpleUploadedFile("run.tsv", b"k%d\t0.9\n" % i), "name": f"up-{i}"}
        statuses.append(pa.post("/api/tasks/main/runs/", body, format="multipart").status_code)
    assert statuses == [202, 202, 429]
    assert not Run.objects.filter(name="up-2").exists()
    body = {"file": SimpleUploadedFile("run.tsv", b"k1\t0.9\n"), "name": "late"}
    assert_throttled(pa.post("/api/tasks/main/runs/", body, format="multipart"))
    # Reading is not in the uploads scope.
    assert pa.get("/api/tasks/main/runs/").status_code == 200


def test_token_creation_by_password_is_throttled_with_retry_after(world, rates):
    rates(auth="2/hour")
    client = APIClient()
    for _ in range(2):
        response = client.post(
            "/api/token/", {"username": "pa", "password": "guess"}, format="json"
        )
        assert response.status_code == 401
    assert_throttled(
        client.post("/api/token/", {"username": "pa", "password": PASSWORD}, format="json")
    )
    assert not ApiToken.objects.filter(user=world.users["pa"]).exists()


def test_the_annotation_api_is_throttled_too(world, rates):
    rates(user="2/minute")
    world.task.annotators.add(world.users["pb"])
    client = with_token(world.users["pb"])
    assert [client.get("/annotate/api/tasks/main/progress").status_code for _ in range(2)] == [
        200,
        200,
    ]
    response = client.get("/annotate/api/tasks/main/progress")
    assert response.status_code == 429 and int(response["Retry-After"]) > 0
    assert set(response.json()["error"]) == {"code", "message", "problems", "total", "run"}
    assert response.json()["error"]["code"] == "throttled"


# -- tokens --------------------------------------------------------------------------------------
def test_a_revoked_key_is_refused_at_once(world):
    user = world.users["pa"]
    client = with_token(user)
    assert client.get("/api/me/").status_code == 200
    assert client.delete("/api/token/").status_code == 204
    refused = client.get("/api/me/")
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "authentication_failed"
    assert client.post("/api/tasks/main/runs/", {}, format="multipart").status_code == 401


def test_a_rotated_key_is_refused_at_once_and_the_new_one_works(world):
    user = world.users["pa"]
    old = with_token(user)
    new_key = old.post("/api/token/rotate/").json()["key"]
    assert old.get("/api/me/").status_code == 401
    fresh = APIClient()
    fresh.credentials(HTTP_AUTHORIZATION=f"Token {new_key}")
    assert fresh.get("/api/me/").json()["username"] == "pa"


def test_rotating_from_a_browser_session_works(world):
    client = Client()
    client.force_login(world.users["pa"])
    create_token(user=world.users["pa"])
    response = client.post("/api/token/rotate/", json.dumps({}), content_type="application/json")
    assert response.status_code == 201
    assert ApiToken.objects.get(user=world.users["pa"]).digest == ApiToken.digest_of(
        response.json()["key"]
    )


def test_a_key_is_shown_once_and_never_again_by_the_api(world):
    user = world.users["pa"]
    client = APIClient()
    client.force_authenticate(user)
    key = client.post("/api/token/").json()["key"]
    for path in ("/api/token/", "/api/me/", "/api/tasks/main/runs/", "/api/tasks/main/quota/"):
        assert key not in client.get(path).content.decode(), path
    assert client.post("/api/token/").status_code == 409  # no second look by creating again
    assert key not in client.post("/api/token/").content.decode()


def test_keys_and_passwords_are_not_logged(world, caplog):
    caplog.set_level(logging.DEBUG)
    client = APIClient()
    created = client.post(
        "/api/token/", {"username": "pa", "password": PASSWORD}, format="json"
    ).json()["key"]
    user_client = APIClient()
    user_client.credentials(HTTP_AUTHORIZATION=f"Token {created}")
    user_client.get("/api/me/")
    user_client.post("/api/tasks/main/runs/", {"name": "no file"}, format="multipart")
    rotated = user_client.post("/api/token/rotate/").json()["key"]
    APIClient(HTTP_AUTHORIZATION=f"Token {created}").get("/api/me/")  # a stale key: 401
    logged = "\n".join(r.getMessage() + repr(r.args) for r in caplog.records)
    for secret in (created, rotated, PASSWORD):
        assert secret not in logged


def test_error_reports_hide_the_authorization_header_and_cookies():
    request = RequestFactory().get(
        "/api/me/", HTTP_AUTHORIZATION="Token abcdef0123456789", HTTP_COOKIE="sessionid=s3cr3t"
    )
    meta = SafeExceptionReporterFilter().get_safe_request_meta(request)
    assert "abcdef0123456789" not in str(meta["HTTP_AUTHORIZATION"])
    assert "s3cr3t" not in str(meta["HTTP_COOKIE"])


def test_the_admin_does_not_show_api_keys(world):
    key = create_token(user=world.users["pa"]).key
    client = Client()
    client.force_login(world.users["admin"])
    listing = client.get("/admin/authtoken/tokenproxy/")
    assert listing.status_code == 404 or key not in listing.content.decode()


# -- sign-in -------------------------------------------------------------------------------------
def sign_in(client, username, password, path="/accounts/login/", **extra):
    # The site's form (allauth's) takes a username or an email as "login"; the admin's "username".
    field = "username" if path.startswith("/admin/") else "login"
    return client.post(path, {field: username, "password": password}, **extra)


def test_sign_in_refuses_password_guessing(world, settings):
    settings.LOGIN_FAILURE_LIMIT = 3
    client = Client()
    assert [sign_in(client, "pa", f"guess-{i}").status_code for i in range(3)] == [200] * 3
    refused = sign_in(client, "pa", PASSWORD)  # even the right password, once over the limit
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) == settings.LOGIN_FAILURE_WINDOW
    assert "Too many failed sign-ins" in refused.content.decode()
    assert "_auth_user_id" not in client.session
    assert client.get("/accounts/login/").status_code == 200


def test_guessing_one_name_from_many_addresses_hits_the_per_name_limit(world, settings):
    settings.LOGIN_FAILURE_LIMIT = 3
    for i in range(3):
        sign_in(Client(REMOTE_ADDR=f"10.0.0.{i}"), "PA ", "guess")
    assert sign_in(Client(REMOTE_ADDR="10.0.0.99"), "pa", PASSWORD).status_code == 429
    # Another account from a fresh address is not affected.
    ok = sign_in(Client(REMOTE_ADDR="10.0.0.98"), "pb", PASSWORD)
    assert ok.status_code == 302


def test_guessing_many_names_from_one_address_hits_the_per_address_limit(world, settings):
    settings.LOGIN_FAILURE_LIMIT = 3
    client = Client(REMOTE_ADDR="10.1.1.1")
    for name in ("pa", "pb", "org"):
        sign_in(client, name, "guess")
    assert sign_in(client, "annotator", PASSWORD).status_code == 429


def test_successful_sign_ins_are_not_counted(world, settings):
    settings.LOGIN_FAILURE_LIMIT = 2
    for _ in range(5):
        client = Client()
        assert sign_in(client, "pa", PASSWORD).status_code == 302
    assert caches["throttle"].get("login-failures:addr:127.0.0.1") is None


def test_the_admin_sign_in_is_limited_too(world, settings):
    settings.LOGIN_FAILURE_LIMIT = 2
    client = Client()
    for _ in range(2):
        assert sign_in(client, "admin", "guess", path="/admin/login/").status_code == 200
    refused = sign_in(client, "admin", PASSWORD, path="/admin/login/")
    assert refused.status_code == 429 and "Retry-After" in refused
    assert "_auth_user_id" not in client.session
    # The limit is shared with the site's sign-in form.
    assert sign_in(Client(), "admin", PASSWORD).status_code == 429


def test_a_token_cannot_be_guessed_past_the_auth_throttle_by_password(world, rates):
    """``POST /api/token/`` with a password is the API's sign-in: the auth scope limits it."""
    rates(auth="3/hour")
    statuses = [
        APIClient(REMOTE_ADDR="10.2.2.2")
        .post("/api/token/rotate/", {"username": "pa", "password": f"g{i}"}, format="json")
        .status_code
        for i in range(4)
    ]
    assert statuses == [401, 401, 401, 429]


def test_the_token_endpoint_is_under_the_sign_in_limit(world, settings, rates):
    """Guesses through ``POST /api/token/`` count with the sign-in page's, per user name, and are
    refused like them once over the limit (the auth throttle alone is per address)."""
    settings.LOGIN_FAILURE_LIMIT = 3
    rates(auth="100/hour")
    sign_in(Client(REMOTE_ADDR="10.3.0.1"), "pa", "guess")
    for i, path in enumerate(("/api/token/", "/api/token/rotate/")):
        response = APIClient(REMOTE_ADDR=f"10.3.1.{i}").post(
            path, {"username": "PA", "password": "guess"}, format="json"
        )
        assert response.status_code == 401
    # The limit is reached: the right password is refused everywhere, from any address.
    for i, path in enumerate(("/api/token/", "/api/token/rotate/")):
        assert_throttled(
            APIClient(REMOTE_ADDR=f"10.3.2.{i}").post(
                path, {"username": "pa", "password": PASSWORD}, format="json"
            )
        )
    assert sign_in(Client(REMOTE_ADDR="10.3.3.1"), "pa", PASSWORD).status_code == 429
    assert not ApiToken.objects.filter(user=world.users["pa"]).exists()
    # A signed-in caller needs no password and is not refused.
    client = APIClient()
    client.force_authenticate(world.users["pa"])
    assert client.post("/api/token/").status_code == 201
