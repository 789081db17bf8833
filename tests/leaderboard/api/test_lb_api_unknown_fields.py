"""Unknown fields in a body are refused (400 naming them, in the API's one error body) and
nothing changes; never silently dropped. One mechanism for every writable serializer of the
leaderboard and annotation APIs (``site_platform.api.serializers.RefuseUnknownFields``)."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.forms.models import model_to_dict
from rest_framework.test import APIClient

from leaderboard.models import Run, Task

pytestmark = pytest.mark.django_db
ERROR_KEYS = {"code", "message", "problems", "total", "run"}


@pytest.fixture
def world(lb_world, sent_jobs):
    return lb_world


def client_of(world, role):
    client = APIClient()
    client.force_authenticate(world.users[role])
    return client


def assert_refused(response, *names):
    assert response.status_code == 400, response.content[:500]
    body = response.json()["error"]
    assert set(body) >= ERROR_KEYS and body["code"] == "invalid"
    for name in names:
        assert name in body["message"]
        assert any(p["message"].startswith(f"{name}: unknown field") for p in body["problems"])


def test_a_task_update_with_an_unknown_field_is_refused_and_changes_nothing(world):
    before = model_to_dict(Task.objects.get(slug="main"))
    response = client_of(world, "org").patch(
        "/api/tasks/main/",
        {"title": "Renamed", "max_runs_per_tem": 1, "colour": "red"},
        format="json",
    )
    assert_refused(response, "max_runs_per_tem", "colour")
    assert model_to_dict(Task.objects.get(slug="main")) == before


def test_a_task_create_with_an_unknown_field_is_refused(world):
    response = client_of(world, "admin").post(
        "/api/tasks/", {"slug": "fresh", "title": "Fresh", "budget": 10}, format="json"
    )
    assert_refused(response, "budget")
    assert not Task.objects.filter(slug="fresh").exists()


def test_a_run_edit_with_an_unknown_field_is_refused(world):
    run = world.runs["A"]
    response = client_of(world, "pa").patch(
        f"/api/runs/{run.pk}/", {"name": "new", "state": "scored"}, format="json"
    )
    assert_refused(response, "state")
    assert Run.objects.get(pk=run.pk).name == run.name


def test_an_upload_with_an_unknown_form_field_is_refused(world):
    body = {"file": SimpleUploadedFile("run.tsv", b"k1\t0.9\n"), "name": "x", "tean": "team-A"}
    response = client_of(world, "pa").post("/api/tasks/main/runs/", body, format="multipart")
    assert_refused(response, "tean")
    assert not Run.objects.filter(name="x").exists()


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/tasks/main/publish/", {"release_hold": False, "now": True}),
        ("/api/token/", {"username": "pa", "password": "pw-secret-123", "scope": "all"}),
        ("/api/teams/", {"name": "team-new", "members": ["pb"]}),
        ("/api/teams/join/", {"key": "some-key", "team": "team-A"}),
    ],
)
def test_other_writable_bodies_refuse_unknown_fields(world, path, body):
    assert_refused(client_of(world, "org").post(path, body, format="json"), list(body)[-1])


def test_the_annotation_api_refuses_them_the_same_way(world):
    response = client_of(world, "annotator").post(
        "/annotate/api/tasks/main/claim", {"count": 1, "greedy": True}, format="json"
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid" and "greedy: unknown field" in error["message"]
