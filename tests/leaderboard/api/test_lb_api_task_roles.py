"""The API of a task's people: invitations for annotators and co-organizers (the key once),
listing and revoking them, accepting one, listing and removing people; errors in the one error
body, changing nothing; the setting that lets annotators compete; the schema documents it all."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from annotation.models import Assignment
from annotation.services import request_verification
from leaderboard.models import Run, TaskInvitation, key_digest
from leaderboard.services.task_roles import invite_to_task
from leaderboard.services.teams import create_team

from pipeline_support import add_items, make_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    make = get_user_model().objects.create_user
    return {name: make(name, password="pw") for name in ("org", "ann", "bob", "other_org")}


@pytest.fixture
def task(people):
    task = make_task(slug="t1", title="Task One")
    task.organizers.add(people["org"])
    make_task(slug="t2").organizers.add(people["other_org"])
    return task


def error_of(response, status, code):
    assert response.status_code == status, response.content
    assert response.json()["error"]["code"] == code
    return response.json()["error"]["message"]


@pytest.mark.parametrize("role", ["annotator", "organizer"])
def test_invite_list_accept_and_people(api, people, task, role):
    org = api(people["org"])
    made = org.post("/api/tasks/t1/invitations/", {"role": role}, format="json")
    assert made.status_code == 201, made.content
    body = made.json()
    assert set(body) == {
        "id",
        "role",
        "created_by",
        "created_at",
        "expires_at",
        "email",
        "key",
        "url",
    }
    assert body["email"] == ""  # a link, mailed to no one
    assert TaskInvitation.objects.get().digest == key_digest(body["key"])
    assert body["url"].endswith(f"/invitations/{body['key']}/") and body["role"] == role
    listed = org.get("/api/tasks/t1/invitations/").json()
    assert [(i["id"], i["role"], i["created_by"]) for i in listed] == [(body["id"], role, "org")]
    assert body["key"] not in org.get("/api/tasks/t1/invitations/").content.decode()
    accepted = api(people["ann"]).post("/api/invitations/accept/", {"key": body["key"]})
    assert accepted.status_code == 200 and accepted.json() == {"task": "t1", "role": role}
    assert org.get("/api/tasks/t1/invitations/").json() == []
    people_now = org.get("/api/tasks/t1/people/").json()
    holders = {"annotator": "annotators", "organizer": "organizers"}[role]
    assert "ann" in [p["username"] for p in people_now[holders]]
    assert people_now["annotators_may_compete"] is False
    again = api(people["bob"]).post("/api/invitations/accept/", {"key": body["key"]})
    error_of(again, 410, "invitation_used")


def test_refusals_change_nothing(api, people, task):
    org = api(people["org"])
    error_of(
        org.post("/api/tasks/t1/invitations/", {"role": "admin"}, format="json"), 400, "invalid"
    )
    error_of(org.post("/api/tasks/t1/invitations/", {}, format="json"), 400, "invalid")
    assert not TaskInvitation.objects.exists()
    ann = api(people["ann"])
    error_of(ann.post("/api/invitations/accept/", {"key": "forged"}), 404, "invitation_unknown")
    old = invite_to_task(
        task=task, role="annotator", by=people["org"], now=timezone.now() - timedelta(days=9)
    ).key
    error_of(ann.post("/api/invitations/accept/", {"key": old}), 410, "invitation_expired")
    error_of(ann.post("/api/invitations/accept/", {"key": old, "x": 1}), 400, "invalid")
    assert not task.annotators.exists()


def test_revoke_an_invitation(api, people, task):
    key = invite_to_task(task=task, role="annotator", by=people["org"]).key
    invitation = TaskInvitation.objects.get()
    assert (
        api(people["other_org"]).delete(f"/api/tasks/t2/invitations/{invitation.pk}/").status_code
        == 404
    )
    assert (
        api(people["other_org"]).delete(f"/api/tasks/t1/invitations/{invitation.pk}/").status_code
        == 403
    )
    assert (
        api(people["org"]).delete(f"/api/tasks/t1/invitations/{invitation.pk}/").status_code == 204
    )
    refused = api(people["ann"]).post("/api/invitations/accept/", {"key": key})
    error_of(refused, 410, "invitation_revoked")


def test_remove_annotators_and_organizers(api, people, task):
    org = api(people["org"])
    task.annotators.add(people["ann"])
    assert org.delete(f"/api/tasks/t1/annotators/{people['ann'].pk}/").status_code == 204
    assert not task.annotators.exists()
    assert org.delete(f"/api/tasks/t1/annotators/{people['ann'].pk}/").status_code == 404
    message = error_of(
        org.delete(f"/api/tasks/t1/organizers/{people['org'].pk}/"), 409, "last_organizer"
    )
    assert "last organizer" in message
    task.organizers.add(people["bob"])
    assert org.delete(f"/api/tasks/t1/organizers/{people['bob'].pk}/").status_code == 204
    assert list(task.organizers.all()) == [people["org"]]


def test_removing_an_annotator_revokes_their_leases(api, people, task):
    # N14: their leases stayed live until they expired, the items held from everyone else.
    task.annotators.add(people["ann"], people["bob"])
    request_verification(task=task, item_ids=[it.pk for it in add_items(task, 2)])
    held = api(people["ann"]).post("/annotate/api/tasks/t1/claim", {"count": 2}, format="json")
    tokens = [a["token"] for a in held.json()["assignments"]]
    assert len(tokens) == 2
    assert (
        api(people["org"]).delete(f"/api/tasks/t1/annotators/{people['ann'].pk}/").status_code
        == 204
    )
    assert set(Assignment.objects.values_list("state", flat=True)) == {"revoked"}
    beat = api(people["ann"]).post(
        "/annotate/api/assignments/heartbeat", {"tokens": tokens}, format="json"
    )
    assert not any(a["valid"] for a in beat.json()["assignments"])
    again = api(people["bob"]).post("/annotate/api/tasks/t1/claim", {"count": 2}, format="json")
    assert len(again.json()["assignments"]) == 2  # back in the queue at once


def test_the_rule_in_the_api(api, people, task):
    create_team(name="Alpha", members=[people["ann"], people["bob"]])
    task.annotators.add(people["ann"])
    upload = io.BytesIO(b"k1\t0.9\n")
    upload.name = "run.tsv"
    submitted = api(people["bob"]).post("/api/tasks/t1/runs/", {"file": upload}, format="multipart")
    message = error_of(submitted, 409, "annotator_in_team")
    assert "'Alpha'" in message and "ann" in message
    assert not Run.objects.exists()
    # An organizer allows it through the task settings: the run is taken.
    allowed = api(people["org"]).patch(
        "/api/tasks/t1/", {"annotators_may_compete": True}, format="json"
    )
    assert allowed.status_code == 200 and allowed.json()["annotators_may_compete"] is True
    upload.seek(0)
    submitted = api(people["bob"]).post("/api/tasks/t1/runs/", {"file": upload}, format="multipart")
    assert submitted.status_code == 202, submitted.content


def test_a_competitor_cannot_accept_an_annotator_invitation(api, people, task):
    team = create_team(name="Alpha", members=[people["bob"]])
    Run.objects.create(task=task, team=team, name="r", submitted_by=people["bob"])
    key = invite_to_task(task=task, role="annotator", by=people["org"]).key
    message = error_of(
        api(people["bob"]).post("/api/invitations/accept/", {"key": key}), 409, "annotator_competes"
    )
    assert "'Alpha'" in message
    assert not task.annotators.exists()


@pytest.mark.parametrize("who", [None, "ann", "other_org"])
def test_outsiders_are_refused(api, people, task, who):
    client = api(people[who] if who else None)
    expected = 401 if who is None else 403
    task.annotators.add(people["bob"])
    for method, path in (
        ("get", "/api/tasks/t1/people/"),
        ("get", "/api/tasks/t1/invitations/"),
        ("post", "/api/tasks/t1/invitations/"),
        ("delete", f"/api/tasks/t1/annotators/{people['bob'].pk}/"),
        ("delete", f"/api/tasks/t1/organizers/{people['org'].pk}/"),
    ):
        response = getattr(client, method)(path, {"role": "annotator"}, format="json")
        assert response.status_code == expected, (path, response.content)
    assert not TaskInvitation.objects.exists() and task.annotators.exists()
    if who is None:
        assert api().post("/api/invitations/accept/", {"key": "x"}).status_code == 401


def test_the_schema_documents_the_task_role_endpoints(api):
    schema = api().get("/api/schema/?format=json").json()
    for path in (
        "/api/tasks/{slug}/people/",
        "/api/tasks/{slug}/invitations/",
        "/api/tasks/{slug}/invitations/{invitation_id}/",
        "/api/tasks/{slug}/annotators/{user_id}/",
        "/api/tasks/{slug}/organizers/{user_id}/",
        "/api/invitations/accept/",
    ):
        assert path in schema["paths"], path
    accept = schema["paths"]["/api/invitations/accept/"]["post"]["responses"]
    assert {"200", "404", "409", "410"} <= set(accept)
    issued = schema["paths"]["/api/tasks/{slug}/invitations/"]["post"]["responses"]["201"]
    ref = issued["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert "key" in schema["components"]["schemas"][ref]["properties"]
