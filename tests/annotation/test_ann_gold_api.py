"""``POST /api/tasks/<slug>/gold/`` (``annotation.gold_api``): a task's organizers upload gold
items through the REST API (``202``; a worker loads them and the upload's ``GET`` tells its
counts or its first problems by line), with its error body for what is refused at once (the
wrong format, the size limit), its upload throttle; anyone else is refused and nothing is
stored; the schema documents it."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import GoldItem
from leaderboard.models import Task

from organizer_uploads import loaded
from pipeline_support import add_items, make_task

pytestmark = pytest.mark.django_db
GOLD = "/api/tasks/ner/gold/"


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def org(db):
    return get_user_model().objects.create_user("org")


@pytest.fixture
def task(org):
    task = make_task(slug="ner", title="NER")
    task.organizers.add(org)
    add_items(task, 3)  # k0 k1 k2
    return task


def client_for(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def post(client, body: bytes):
    return client.post(GOLD, {"file": SimpleUploadedFile("gold.tsv", body)}, format="multipart")


def test_the_route_is_in_the_rest_apis_namespace():
    assert reverse("api:task-gold", args=["ner"]) == GOLD


def test_organizers_load_gold_items_and_a_reload_changes_nothing(org, task):
    client = client_for(org)
    response = post(client, b"k0\tcorrect\nk1\tincorrect\n")
    assert response.status_code == 202
    assert response.json()["state"] == "received" and not GoldItem.objects.exists()
    first = loaded(client, response)
    assert first["state"] == "loaded" and first["kind"] == "gold"
    assert first["counts"] == {"created": 2, "updated": 0, "unchanged": 0}
    again = loaded(client, post(client, b"k0\tcorrect\nk1\tcorrect\n"))
    assert again["counts"] == {"created": 0, "updated": 1, "unchanged": 1}
    assert dict(GoldItem.objects.values_list("item__key", "answer")) == {"k0": True, "k1": True}


def test_a_malformed_file_gets_its_problems_by_line_and_stores_nothing(org, task):
    client = client_for(org)
    response = post(client, b"k0\tcorrect\nk1\tyes\n\nk0\tincorrect\nzz\tcorrect\n")
    error = loaded(client, response)
    assert error["state"] == "rejected" and error["problem_count"] == 3
    assert error["message"].startswith("rejected: 3 problems (first: line 2: ")
    assert error["problems"] == [
        {"line": 2, "message": "answer must be 'correct' or 'incorrect', got 'yes'"},
        {"line": 4, "message": "key 'k0' already given on line 1"},
        {"line": 5, "message": "no item with key 'zz' in task ner"},
    ]
    assert not GoldItem.objects.exists()


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (
            b"k0,correct\nk1,incorrect\n",
            (1, "this looks like CSV (comma-separated): separate key and answer with a tab"),
        ),
        (
            b"key\tanswer\nk0\tcorrect\n",
            (1, "this looks like a header line (key, answer): remove it"),
        ),
        (
            "k0\tcorrect\nk1\tincorrect\n".encode("utf-16"),
            (None, "this file is UTF-16 (as Excel saves it): save it as UTF-8"),
        ),
    ],
)
def test_a_file_in_the_wrong_format_gets_one_hint(org, task, body, problem):
    response = post(client_for(org), body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "wrong_format" and error["total"] == 1
    assert [(p["line"], p["message"]) for p in error["problems"]] == [problem]
    assert not GoldItem.objects.exists()


def test_a_request_without_a_file_is_400(org, task):
    response = client_for(org).post(GOLD, {}, format="multipart")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "missing_file"


@pytest.mark.parametrize(
    ("who", "status", "code"),
    [
        ("anonymous", 401, "not_authenticated"),
        ("participant", 403, "permission_denied"),
        ("other_org", 403, "permission_denied"),
        ("staff", 403, "permission_denied"),
    ],
)
def test_anyone_but_the_tasks_organizers_is_refused(task, who, status, code):
    users = get_user_model().objects
    user = {
        "anonymous": None,
        "participant": users.create_user("pat"),
        "other_org": users.create_user("other"),
        "staff": users.create_user("staff", is_staff=True),
    }[who]
    if who == "other_org":
        make_task(slug="theirs").organizers.add(user)
    response = post(client_for(user), b"k0\tcorrect\n")
    assert response.status_code == status
    assert response.json()["error"]["code"] == code
    if who == "other_org":
        assert (
            response.json()["error"]["message"] == "only the organizers of task 'ner' may do this"
        )
    assert not GoldItem.objects.exists()


def test_an_upload_over_the_tasks_limit_is_413(org, task):
    Task.objects.filter(pk=task.pk).update(max_upload_bytes=16)
    response = post(client_for(org), b"k0\tcorrect\nk1\tincorrect\n")
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "too_large"
    assert not GoldItem.objects.exists()


def test_gold_uploads_count_against_the_upload_throttle(org, task, monkeypatch):
    from rest_framework.throttling import ScopedRateThrottle

    monkeypatch.setattr(
        ScopedRateThrottle,
        "THROTTLE_RATES",
        {**ScopedRateThrottle.THROTTLE_RATES, "uploads": "1/hour"},
    )
    client = client_for(org)
    assert loaded(client, post(client, b"k0\tcorrect\n"))["state"] == "loaded"
    refused = post(client, b"k1\tcorrect\n")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert list(GoldItem.objects.values_list("item__key", flat=True)) == ["k0"]


def test_the_schema_documents_the_gold_upload():
    schema = client_for().get("/api/schema/?format=json").json()
    operation = schema["paths"]["/api/tasks/{slug}/gold/"]["post"]
    assert operation["operationId"] == "tasks_gold_create"
    assert set(operation["responses"]) == {"202", "400", "401", "403", "404", "413", "429"}
    body = operation["requestBody"]["content"]["multipart/form-data"]["schema"]["$ref"]
    assert body.endswith("/GoldUploadRequest")
    received = operation["responses"]["202"]["content"]["application/json"]["schema"]["$ref"]
    assert received.endswith("/OrganizerUpload")
    upload = schema["components"]["schemas"]["OrganizerUpload"]["properties"]
    assert {"state", "counts", "problems", "problem_count"} <= set(upload)
