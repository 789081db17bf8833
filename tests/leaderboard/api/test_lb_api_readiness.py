"""The readiness checklist in the API: tasks created as drafts, ``readiness`` for organizers
only, ``/readiness/``, and opening refused (409 ``task_not_ready``) with the list."""

from __future__ import annotations

import pytest

from leaderboard.models import Task
from leaderboard.services.tasks import create_task

from pipeline_support import open_unchecked, satisfy_checklist

pytestmark = pytest.mark.django_db


@pytest.fixture
def creator(organizer):
    organizer.is_staff = True  # a task creator
    organizer.save()
    return organizer


def test_a_task_created_through_the_api_is_a_draft_with_its_checklist(api, creator):
    response = api(creator).post("/api/tasks/", {"slug": "t", "title": "T"}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["state"] == "draft" and Task.objects.get(slug="t").state == "draft"
    readiness = body["readiness"]
    assert readiness["ready"] is False
    assert [c["key"] for c in readiness["checks"]] == [
        "annotators",
        "reference_sample",
        "gold",
        "phases",
    ]
    first = readiness["checks"][0]
    assert set(first) == {"key", "label", "ok", "state", "blocking", "missing", "page", "api"}
    assert (first["missing"], first["page"], first["api"]) == (
        True,
        "/tasks/t/organize/people/#annotators",
        "/api/tasks/t/invitations/",
    )


def test_creating_a_task_open_is_refused_with_the_list(api, creator):
    response = api(creator).post(
        "/api/tasks/", {"slug": "t", "title": "T", "state": "open"}, format="json"
    )
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "task_not_ready"
    assert error["message"].startswith("task 't' is not ready to open (Annotators: 0 of the 2")
    assert [p["message"].split(":")[0] for p in error["problems"]] == [
        "Annotators",
        "Reference sample",
        "Gold items",
    ]
    assert error["readiness"]["ready"] is False
    assert error["fields"]["state"][0].startswith("not ready to open")
    assert not Task.objects.filter(slug="t").exists()


def test_opening_waits_for_the_checklist(api, organizer):
    task = create_task(slug="t", title="T", organizers=[organizer])
    client = api(organizer)
    refused = client.patch("/api/tasks/t/", {"state": "open", "title": "New"}, format="json")
    assert refused.status_code == 409
    error = refused.json()["error"]
    assert error["code"] == "task_not_ready" and error["total"] == 3
    # One representation: the refusal carries the list as /readiness/ shows it.
    assert error["readiness"] == client.get("/api/tasks/t/readiness/").json()
    task.refresh_from_db()
    assert (task.state, task.title) == ("draft", "T")
    satisfy_checklist(task)
    opened = client.patch("/api/tasks/t/", {"state": "open"}, format="json")
    assert opened.status_code == 200
    assert opened.json()["state"] == "open" and opened.json()["readiness"]["ready"] is True
    again = client.patch("/api/tasks/t/", {"state": "open"}, format="json")
    assert again.status_code == 200  # a retried opening changes nothing


def test_only_organizers_see_the_checklist(api, organizer, participant):
    open_unchecked(create_task(slug="t", title="T", organizers=[organizer]))
    shown = api(organizer).get("/api/tasks/t/").json()
    assert shown["readiness"] == api(organizer).get("/api/tasks/t/readiness/").json()
    assert shown["readiness"]["ready"] is False  # an open task is not closed for falling short
    for client in (api(participant), api()):
        assert "readiness" not in client.get("/api/tasks/t/").json()
        listed = client.get("/api/tasks/").json()["results"]
        assert listed and all("readiness" not in task for task in listed)
    assert api(participant).get("/api/tasks/t/readiness/").status_code == 403
    assert api().get("/api/tasks/t/readiness/").status_code == 401
