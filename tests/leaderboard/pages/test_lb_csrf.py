"""CSRF and the security settings.

With ``Client(enforce_csrf_checks=True)`` (what a browser gets), every state-changing page POST
and every session-authenticated REST or annotation API call is refused (403) without the CSRF
token and nothing changes; with the token it succeeds. Token-authenticated API calls need no
CSRF token, and the session cookie alone (a cross-site form) cannot write through the API.
The response headers and cookies carry the security settings; a production-like environment
passes ``manage.py check --deploy``.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.test import Client
from django.utils import timezone
from shared_world import copied_world, shared_world
from test_lb_pages_permissions import (
    candidates_body,
    gold_body,
    new_task_body,
    organize_body,
    phases_body,
    preview_body,
    reference_body,
    run_edit_body,
    settings_body,
    submit_body,
)

from annotation.models import (
    AnnotatorPause,
    Assignment,
    GoldItem,
    Judgment,
    VerificationRequest,
)
from annotation.services import (
    answer_assignment,
    claim_assignments,
    heartbeat,
    pause_annotator,
)
from config.settings_test import TEST_SECRET_KEY
from leaderboard.models import (
    ApiToken,
    OrganizerUpload,
    ReferenceCandidate,
    ReferenceItem,
    ReferenceSample,
    Run,
    Task,
    TaskInvitation,
)
from leaderboard.services.tokens import create_token

from role_world import build_page_world

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()
    yield
    cache.clear()


def build_csrf_world():
    world = build_page_world()
    ann = world.users["annotator"]
    # Two answers per item, so the annotator's answer below does not decide it (undo stays open).
    VerificationRequest.objects.filter(task=world.task).update(judgments_required=2)
    paused = get_user_model().objects.create_user("paused-ann")
    world.task.annotators.add(paused)
    pause_annotator(task=world.task, annotator=paused, reason="gold accuracy")
    done, live = claim_assignments(task=world.task, annotator=ann, count=2).assignments
    # The page heartbeats the leases it receives at once: a claim then hands out new items (a
    # never-heartbeated lease would be handed back instead, and the claim change nothing).
    heartbeat(annotator=ann, tokens=[live.token])
    world.done = uuid.uuid4()
    answer_assignment(annotator=ann, token=done.token, client_id=world.done, answer="correct")
    world.live = live.token
    return world


built_csrf_world = shared_world(build_csrf_world)


@pytest.fixture
def world(db, sent_jobs, built_csrf_world):
    world = copied_world(built_csrf_world)
    # The module's tests may take longer than a lease: each starts with the live one just renewed,
    # as it was when the world was built for every test.
    Assignment.objects.filter(token=world.live).update(
        expires_at=timezone.now() + timedelta(seconds=settings.ANNOTATION_LEASE_SECONDS)
    )
    return world


def browser_for(world, role: str) -> Client:
    client = Client(enforce_csrf_checks=True)
    if role != "anonymous":
        client.force_login(world.users[role])
    client.get("/accounts/login/")  # the page sets the CSRF cookie, as any form page does
    return client


def csrf_token(client) -> str:
    return client.cookies["csrftoken"].value


def board_held(world):
    return Task.objects.get(pk=world.task.pk).board_held


def state(world) -> tuple:
    """Everything the POSTs below could change."""
    task = Task.objects.get(pk=world.task.pk)
    lease = Assignment.objects.get(token=world.live)
    return (
        task.board_held,
        task.title,
        task.submissions_close_at,
        Run.objects.count(),
        Run.objects.get(pk=world.runs["A"].pk).name,
        ApiToken.objects.count(),
        lease.state,
        lease.expires_at,
        Judgment.objects.count(),
        Assignment.objects.count(),
        Judgment.objects.get(client_id=world.done).withdrawn_at,
        AnnotatorPause.objects.filter(lifted_at=None).count(),
        TaskInvitation.objects.count(),
        TaskInvitation.objects.filter(revoked_at=None, used_at=None).count(),
        task.annotators.count(),
        task.organizers.count(),
        Task.objects.count(),
        task.reference_version,
        sorted(ReferenceItem.objects.values_list("item__key", "group")),
        sorted(GoldItem.objects.values_list("item__key", "answer")),
        sorted(ReferenceCandidate.objects.values_list("item__key", "document")),
        ReferenceSample.objects.count(),
        OrganizerUpload.objects.count(),  # an organizer's upload, received for a worker
    )


def unpause_body(world):
    return {"username": "paused-ann"}


# (role, method, path, body, kind, expected status with the token). kind: "form" is a page form
# POST (token in the body), "json"/"multipart" an API call (token in the X-CSRFToken header).
POSTS = [
    ("org", "post", "/tasks/main/board/hold/", None, "form", 302),
    ("org", "post", "/tasks/main/board/publish/", None, "form", 302),
    ("org", "post", "/tasks/main/organize/", organize_body, "form", 302),
    ("org", "post", "/tasks/main/organize/settings/", settings_body, "form", 302),
    ("org", "post", "/tasks/main/organize/phases/", phases_body, "form", 302),
    ("pa", "post", "/tasks/main/submit/", submit_body, "form", 302),
    ("pa", "post", "/runs/{a}/", run_edit_body, "form", 302),
    ("org", "post", "/annotate/main/queue/unpause", unpause_body, "form", 302),
    ("staff_org", "post", "/tasks/new/", new_task_body, "form", 302),
    ("creator", "post", "/tasks/new/", new_task_body, "form", 302),
    ("creator", "post", "/api/tasks/", {"slug": "csrf-made", "title": "C"}, "json", 201),
    ("org", "post", "/tasks/main/organize/reference/", reference_body, "form", 302),
    ("org", "post", "/annotate/main/gold/", gold_body, "form", 302),
    ("org", "post", "/api/tasks/main/gold/", gold_body, "multipart", 202),
    ("org", "post", "/tasks/main/organize/reference-candidates/", candidates_body, "form", 302),
    (
        "org",
        "post",
        "/api/tasks/main/reference-sample/candidates/",
        candidates_body,
        "multipart",
        202,
    ),
    # The draws and cancels (they need candidates, a sample): test_lb_organize_reference_sample.py.
    ("pa", "post", "/accounts/logout/", None, "form", 302),
    ("org", "post", "/tasks/main/organize/invite/", {"role": "annotator"}, "form", 200),
    ("org", "post", "/tasks/main/organize/invitations/{tinv}/revoke/", None, "form", 302),
    ("org", "post", "/tasks/main/organize/annotators/{uann}/remove/", None, "form", 302),
    ("other_org", "post", "/invitations/{torg}/", None, "form", 302),
    ("org", "post", "/api/tasks/main/invitations/", {"role": "organizer"}, "json", 201),
    ("org", "delete", "/api/tasks/main/invitations/{tinv}/", None, "json", 204),
    ("org", "delete", "/api/tasks/main/annotators/{uann}/", None, "json", 204),
    ("other_org", "post", "/api/invitations/accept/", {"key": "{torg}"}, "json", 200),
    ("pa", "post", "/api/tasks/main/runs/", submit_body, "multipart", 202),
    ("org", "post", "/api/tasks/main/hold/", None, "json", 200),
    ("org", "post", "/api/tasks/main/publish/", {"release_hold": True}, "json", 200),
    ("org", "patch", "/api/tasks/main/", {"title": "Renamed"}, "json", 200),
    ("pa", "patch", "/api/runs/{a}/", {"name": "renamed"}, "json", 200),
    ("pa", "post", "/api/token/", None, "json", 201),
    ("pa", "post", "/api/token/rotate/", None, "json", 201),
    ("annotator", "post", "/annotate/api/tasks/main/claim", {"count": 1}, "json", 200),
    (
        "annotator",
        "post",
        "/annotate/api/assignments/heartbeat",
        {"tokens": ["{live}"]},
        "json",
        200,
    ),
    ("annotator", "post", "/annotate/api/assignments/release", {"tokens": ["{live}"]}, "json", 204),
    (
        "annotator",
        "post",
        "/annotate/api/answers",
        {"client_id": "{new}", "token": "{live}", "answer": "correct"},
        "json",
        201,
    ),
    ("annotator", "post", "/annotate/api/answers/{done}/undo", None, "json", 200),
]
IDS = [f"{method} {path}" for _, method, path, *_ in POSTS]
SUCCEEDING = [pytest.param(*post, id=name) for post, name in zip(POSTS, IDS, strict=True)]


def fill(value, world):
    if isinstance(value, str):
        for name, known in world.task_invitations.items():
            value = value.replace(f"{{{name}}}", str(known))
        return (
            value.replace("{live}", str(world.live))
            .replace("{done}", str(world.done))
            .replace("{new}", str(uuid.uuid4()))
            .replace("{a}", str(world.runs["A"].pk))
        )
    if isinstance(value, list):
        return [fill(v, world) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, world) for k, v in value.items()}
    return value


def send(client, method, path, body, kind, token=None):
    headers = {"HTTP_X_CSRFTOKEN": token} if token and kind != "form" else {}
    if kind == "form":
        data = dict(body or {})
        if token:
            data["csrfmiddlewaretoken"] = token
        return client.post(path, data)
    if kind == "multipart":
        return getattr(client, method)(path, body or {}, **headers)
    return getattr(client, method)(
        path, json.dumps(body or {}), content_type="application/json", **headers
    )


@pytest.mark.parametrize(("role", "method", "path", "body", "kind", "expected"), POSTS, ids=IDS)
def test_session_post_without_csrf_token_is_refused_and_changes_nothing(
    world, role, method, path, body, kind, expected
):
    client = browser_for(world, role)
    before = state(world)
    data = fill(body(world) if callable(body) else body, world)
    response = send(client, method, fill(path, world), data, kind)
    assert response.status_code == 403, response.content[:300]
    if kind != "form":
        assert "CSRF" in response.json().get("detail", "") + json.dumps(response.json())
    assert state(world) == before


@pytest.mark.parametrize(("role", "method", "path", "body", "kind", "expected"), SUCCEEDING)
def test_session_post_with_csrf_token_succeeds(world, role, method, path, body, kind, expected):
    client = browser_for(world, role)
    before = state(world)
    data = fill(body(world) if callable(body) else body, world)
    response = send(client, method, fill(path, world), data, kind, token=csrf_token(client))
    assert response.status_code == expected, response.content[:300]
    if path == "/accounts/logout/":
        assert "_auth_user_id" not in client.session
    elif not path.endswith("hold/"):  # the world's board is held already
        assert state(world) != before


def test_the_display_preview_needs_the_csrf_token(world):
    client = browser_for(world, "org")
    assert client.post("/tasks/new/preview/", preview_body(world)).status_code == 403
    body = {**preview_body(world), "csrfmiddlewaretoken": csrf_token(client)}
    assert client.post("/tasks/new/preview/", body).status_code == 200


def test_a_wrong_csrf_token_is_refused(world):
    client = browser_for(world, "org")
    response = client.post("/tasks/main/board/publish/", {"csrfmiddlewaretoken": "x" * 64})
    assert response.status_code == 403 and board_held(world) is True


def test_login_form_needs_the_csrf_token(world):
    client = Client(enforce_csrf_checks=True)
    response = client.post("/accounts/login/", {"login": "pa", "password": world.password})
    assert response.status_code == 403
    assert "_auth_user_id" not in client.session
    client.get("/accounts/login/")
    response = client.post(
        "/accounts/login/",
        {"login": "pa", "password": world.password, "csrfmiddlewaretoken": csrf_token(client)},
    )
    assert response.status_code == 302 and "_auth_user_id" in client.session


def test_token_authenticated_api_calls_need_no_csrf_token(world):
    token = create_token(user=world.users["org"])
    client = Client(enforce_csrf_checks=True, HTTP_AUTHORIZATION=f"Token {token.key}")
    assert (
        client.post(
            "/api/tasks/main/publish/", json.dumps({}), content_type="application/json"
        ).status_code
        == 200
    )
    assert board_held(world) is False
    ann = create_token(user=world.users["annotator"])
    client = Client(enforce_csrf_checks=True, HTTP_AUTHORIZATION=f"Token {ann.key}")
    response = client.post(
        "/annotate/api/assignments/release",
        json.dumps({"tokens": [str(world.live)]}),
        content_type="application/json",
    )
    assert response.status_code == 204
    assert Assignment.objects.get(token=world.live).state == Assignment.State.RELEASED


def test_the_session_cookie_alone_cannot_write_through_the_api(world):
    """A cross-site form sends the cookies but cannot read or send the CSRF token."""
    client = browser_for(world, "org")
    for content_type in (
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "text/plain",
    ):
        response = client.generic(
            "POST",
            "/api/tasks/main/publish/",
            b"release_hold=true",
            content_type=content_type,
            HTTP_ORIGIN="https://evil.example",
        )
        assert response.status_code == 403
    assert board_held(world) is True


def test_a_bad_token_header_is_refused_even_with_a_session(world):
    client = browser_for(world, "org")
    response = client.post(
        "/api/tasks/main/publish/",
        json.dumps({}),
        content_type="application/json",
        HTTP_AUTHORIZATION="Token " + "0" * 40,
        HTTP_X_CSRFTOKEN=csrf_token(client),
    )
    assert response.status_code == 401 and board_held(world) is True


# -- headers, cookies, settings ------------------------------------------------------------------
def test_responses_carry_the_security_headers(world):
    client = Client()
    for path in (
        "/",
        "/tasks/main/",
        "/tasks/main/snapshots/1.csv",
        "/api/tasks/",
        "/accounts/login/",
    ):
        response = client.get(path)
        assert response["X-Frame-Options"] == "DENY", path
        assert response["X-Content-Type-Options"] == "nosniff", path
        assert response["Referrer-Policy"] == "same-origin", path
        assert response["Cross-Origin-Opener-Policy"] == "same-origin", path


def test_session_and_csrf_cookies_are_httponly_and_samesite(world):
    client = Client(enforce_csrf_checks=True)
    client.get("/accounts/login/")
    csrf = client.cookies["csrftoken"]
    assert csrf["httponly"] and csrf["samesite"] == "Lax"
    response = client.post(
        "/accounts/login/",
        {"login": "pa", "password": world.password, "csrfmiddlewaretoken": csrf.value},
    )
    session = response.cookies["sessionid"]
    assert session["httponly"] and session["samesite"] == "Lax"
    assert not session["secure"]  # plain HTTP in development; DJANGO_SECURE=1 turns it on


def test_the_annotator_page_hands_its_script_the_csrf_token_without_the_cookie(world):
    client = Client()
    client.force_login(world.users["annotator"])
    text = client.get("/annotate/main/").content.decode()
    assert '<meta name="csrf-token" content="' in text


def _settings_in(env: dict) -> dict:
    code = (
        "import django, json; django.setup(); from django.conf import settings as s; "
        "print(json.dumps({k: getattr(s, k, None) for k in ("
        "'DEBUG', 'SESSION_COOKIE_SECURE', 'CSRF_COOKIE_SECURE', 'SECURE_SSL_REDIRECT', "
        "'SECURE_HSTS_SECONDS', 'SECURE_HSTS_INCLUDE_SUBDOMAINS', 'SECURE_PROXY_SSL_HEADER', "
        "'X_FRAME_OPTIONS', 'CSRF_COOKIE_HTTPONLY', 'SESSION_COOKIE_HTTPONLY')}))"
    )
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "DATABASE_URL", "REDIS_URL"))
    }
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={
            **clean,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DJANGO_SECRET_KEY": "a-key-of-this-deployment",
            **env,
        },
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_default_settings_are_safe_and_production_settings_are_strict():
    dev = _settings_in({})
    assert dev["DEBUG"] is False and dev["X_FRAME_OPTIONS"] == "DENY"
    assert dev["SESSION_COOKIE_HTTPONLY"] and dev["CSRF_COOKIE_HTTPONLY"]
    assert dev["SESSION_COOKIE_SECURE"] is False and dev["SECURE_HSTS_SECONDS"] == 0
    prod = _settings_in({"DJANGO_SECURE": "1", "DJANGO_SECURE_PROXY": "1"})
    assert prod["DEBUG"] is False
    assert prod["SESSION_COOKIE_SECURE"] and prod["CSRF_COOKIE_SECURE"]
    assert prod["SECURE_SSL_REDIRECT"] and prod["SECURE_HSTS_SECONDS"] == 31536000
    assert prod["SECURE_HSTS_INCLUDE_SUBDOMAINS"]
    assert prod["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]


@pytest.mark.slow
def test_check_deploy_passes_in_a_production_like_environment():
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "DATABASE_URL", "REDIS_URL"))
    }
    env = {
        **clean,
        "DJANGO_SECURE": "1",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_ALLOWED_HOSTS": "leaderboard.example.org",
        "DJANGO_HSTS_PRELOAD": "1",
    }
    out = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "no issues" in out.stdout
    insecure = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**clean, "DJANGO_SECRET_KEY": TEST_SECRET_KEY},
    )
    assert insecure.returncode != 0  # the tests' key and defaults are flagged, as they should be
    assert "security.W009" in insecure.stdout + insecure.stderr
