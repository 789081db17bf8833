"""The annotation API's permission matrix: every ``/annotate/api/`` endpoint x every role.

Roles: anonymous; ``conflicted``, a member of the team whose run predicts every item who is also
an annotator of the task (the conflict-of-interest rule must keep every item from them); the
task's ``annotator``; ``other_ann``, an annotator of another task only; the task's organizer
(``org``, not an annotator); an organizer of another task; a staff organizer of another task;
an admin (staff, not an annotator);
``paused``, an annotator of the task whose work is paused; ``creator``, a task creator
(``leaderboard.add_task``, not staff) who organizes and annotates nothing.

Before each cell the annotator holds a live lease (``{live}``) and has just answered another item
(``{done}``, the ``client_id`` of that answer, still undoable): every other role aims at them.
After each cell the annotator's lease and answer are checked: only their owner can change them.
"""

from __future__ import annotations

import json
import uuid
from types import SimpleNamespace

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from shared_world import copied_world, shared_world

from annotation.models import Assignment, Judgment
from annotation.services import (
    answer_assignment,
    claim_assignments,
    pause_annotator,
    request_verification,
)
from leaderboard.models import Task

from pipeline_support import add_items, add_run, make_task, make_team

pytestmark = pytest.mark.django_db
API = "/annotate/api"
ROLES = (
    "anonymous",
    "conflicted",
    "annotator",
    "other_ann",
    "org",
    "other_org",
    "staff_org",
    "admin",
    "paused",
    "creator",
)
ERROR_KEYS = {"code", "message", "problems", "total", "run"}


def build_queue_world():
    User = get_user_model()
    users = {
        name: User.objects.create_user(
            name,
            password="pw",
            is_staff=name in ("admin", "staff_org"),
            is_superuser=name == "admin",
        )
        for name in ROLES
        if name != "anonymous"
    }
    users["creator"].user_permissions.add(
        Permission.objects.get(content_type__app_label="leaderboard", codename="add_task")
    )
    task = make_task(
        slug="tk",
        title="Linking",
        state=Task.State.OPEN,
        judgments_per_item=2,
        gold_rate=0.0,
        question="Same paper?",
    )
    other = make_task(slug="other", title="Other", state=Task.State.OPEN, gold_rate=0.0)
    task.organizers.add(users["org"])
    other.organizers.add(users["other_org"], users["staff_org"])
    task.annotators.add(users["conflicted"], users["annotator"], users["paused"])
    other.annotators.add(users["other_ann"])
    items = add_items(task, 6)
    for item in items:
        item.payload = {
            "left": {"title": f"Left {item.index}"},
            "right": {"title": f"Right {item.index}"},
        }
        item.save(update_fields=["payload"])
    team = make_team("team-secret", users["conflicted"])
    add_run(task, team, [it.index for it in items], name="run-secret")
    request_verification(task=task, item_ids=[it.pk for it in items])
    other_items = add_items(other, 2)
    request_verification(task=other, item_ids=[it.pk for it in other_items])

    ann = users["annotator"]
    claim = claim_assignments(task=task, annotator=ann, count=2)
    done_lease, live_lease = claim.assignments
    done = uuid.uuid4()
    answer_assignment(annotator=ann, token=done_lease.token, client_id=done, answer="correct")
    paused_claim = claim_assignments(task=task, annotator=users["paused"], count=1)
    pause_annotator(task=task, annotator=users["paused"], reason="gold accuracy 0.40")
    return SimpleNamespace(
        users=users,
        task=task,
        other=other,
        live=live_lease.token,
        done=done,
        paused_lease=paused_claim.assignments[0].token,
    )


built_queue_world = shared_world(build_queue_world)


@pytest.fixture
def world(db, built_queue_world):
    return copied_world(built_queue_world)


def answer_body(world):
    return {"client_id": str(uuid.uuid4()), "token": str(world.live), "answer": "incorrect"}


def own_answer_body(world):
    return {"client_id": str(uuid.uuid4()), "token": str(world.paused_lease), "answer": "correct"}


# (method, path, body) -> status per role, in ROLES order. {live}/{done}: the annotator's lease
# token and answered client_id. Bodies are JSON (a callable builds a fresh one per cell).
MATRIX = [
    # method, path, body,                          anon conf ann  oann org  oorg sorg adm  psd  cre
    ("POST", "/tasks/tk/claim", {"count": 1}, (401, 200, 200, 403, 403, 403, 403, 403, 200, 403)),
    ("GET", "/tasks/tk/claim", None, (401, 405, 405, 405, 405, 405, 405, 405, 405, 405)),
    (
        "POST",
        "/tasks/other/claim",
        {"count": 1},
        (401, 403, 403, 200, 403, 403, 403, 403, 403, 403),
    ),
    ("POST", "/tasks/nope/claim", {"count": 1}, (401, 404, 404, 404, 404, 404, 404, 404, 404, 404)),
    (
        "POST",
        "/tasks/tk/claim",
        {"count": 1, "x": 1},
        (401, 400, 400, 400, 400, 400, 400, 400, 400, 400),
    ),
    ("GET", "/tasks/tk/progress", None, (401, 200, 200, 403, 403, 403, 403, 403, 200, 403)),
    ("POST", "/tasks/tk/progress", None, (401, 405, 405, 405, 405, 405, 405, 405, 405, 405)),
    (
        "POST",
        "/assignments/heartbeat",
        {"tokens": ["{live}"]},
        (401, 200, 200, 200, 200, 200, 200, 200, 200, 200),
    ),
    (
        "POST",
        "/assignments/release",
        {"tokens": ["{live}"]},
        (401, 204, 204, 204, 204, 204, 204, 204, 204, 204),
    ),
    ("POST", "/answers", answer_body, (401, 404, 201, 404, 404, 404, 404, 404, 404, 404)),
    ("POST", "/answers", own_answer_body, (401, 404, 404, 404, 404, 404, 404, 404, 201, 404)),
    (
        "POST",
        "/answers",
        {"token": "not-a-uuid"},
        (401, 400, 400, 400, 400, 400, 400, 400, 400, 400),
    ),
    ("GET", "/answers", None, (401, 405, 405, 405, 405, 405, 405, 405, 405, 405)),
    ("POST", "/answers/{done}/undo", None, (401, 404, 200, 404, 404, 404, 404, 404, 404, 404)),
    (
        "POST",
        f"/answers/{uuid.UUID(int=7)}/undo",
        None,
        (401, 404, 404, 404, 404, 404, 404, 404, 404, 404),
    ),
    ("POST", "/answers/not-a-uuid/undo", None, (404, 404, 404, 404, 404, 404, 404, 404, 404, 404)),
    ("GET", "/nothing/here", None, (404, 404, 404, 404, 404, 404, 404, 404, 404, 404)),
]
CELLS = [
    pytest.param(method, path, body, role, statuses[i], id=f"{method} {path} {role}")
    for method, path, body, statuses in MATRIX
    for i, role in enumerate(ROLES)
]

# What each role's successful claim says (``status``), and how many items it gets.
CLAIM_OUTCOME = {"conflicted": ("empty", 0), "annotator": ("ok", 1), "paused": ("paused", 0)}


def client_for(world, role: str) -> Client:
    client = Client()
    if role != "anonymous":
        client.force_login(world.users[role])
    return client


def fill(value, world):
    if isinstance(value, str):
        return value.replace("{live}", str(world.live)).replace("{done}", str(world.done))
    if isinstance(value, list):
        return [fill(v, world) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, world) for k, v in value.items()}
    return value


def call(client, method: str, path: str, body=None):
    if method == "GET":
        return client.get(API + path)
    return client.post(
        API + path,
        data=json.dumps(body if body is not None else {}),
        content_type="application/json",
    )


def annotators_work(world) -> tuple:
    lease = Assignment.objects.get(token=world.live)
    answer = Judgment.objects.get(client_id=world.done)
    return lease.state, lease.expires_at, answer.answer, answer.withdrawn_at


@pytest.mark.parametrize(("method", "path", "body", "role", "expected"), CELLS)
def test_annotation_api_matrix(world, method, path, body, role, expected):
    before = annotators_work(world)
    data = fill(body(world) if callable(body) else body, world)
    response = call(client_for(world, role), method, fill(path, world), data)
    assert response.status_code == expected, response.content[:500]
    if expected >= 400:
        assert set(response.json()["error"]) == ERROR_KEYS
    if role != "annotator":
        assert annotators_work(world) == before, f"{role} changed the annotator's work"
    if path == "/tasks/tk/claim" and method == "POST" and expected == 200:
        status, n = CLAIM_OUTCOME[role]
        assert response.json()["status"] == status
        assert len(response.json()["assignments"]) == n
    if path == "/assignments/heartbeat" and expected == 200:
        (row,) = response.json()["assignments"]
        assert row["valid"] is (role == "annotator")
        assert (row["expires_at"] is None) is (role != "annotator")
    text = response.content.decode()
    for secret in ("run-secret", "team-secret"):
        assert secret not in text


def test_matrix_covers_every_annotation_api_route():
    from annotation import api_urls

    # A catch-all (any other path gets the JSON 404 body) is covered by the last two cells.
    catch_all = {
        str(p.pattern) for p in api_urls.urlpatterns if p.pattern.regex.fullmatch("nothing/here")
    }
    routes = {str(p.pattern) for p in api_urls.urlpatterns} - catch_all
    covered = set()
    for _, path, _, _ in MATRIX:
        route = path.lstrip("/").replace("tasks/tk/", "tasks/<slug:slug>/")
        route = route.replace("tasks/other/", "tasks/<slug:slug>/")
        route = route.replace("tasks/nope/", "tasks/<slug:slug>/")
        route = route.replace("{done}", "<uuid:client_id>")
        route = route.replace(str(uuid.UUID(int=7)), "<uuid:client_id>")
        covered.add(route)
    assert routes <= covered, routes - covered


# -- one annotator cannot touch another's leases or answers ------------------------------------
def test_another_annotator_of_the_same_task_cannot_use_someone_elses_token_or_client_id(world):
    thief = world.users["paused"]
    world.task.annotators.add(thief)
    from annotation.services import unpause_annotator

    unpause_annotator(task=world.task, annotator=thief)
    client = client_for(world, "paused")
    before = annotators_work(world)

    answered = call(client, "POST", "/answers", answer_body(world))
    assert answered.status_code == 404
    assert answered.json()["error"]["code"] == "unknown_assignment"
    beat = call(client, "POST", "/assignments/heartbeat", {"tokens": [str(world.live)]})
    assert beat.json()["assignments"][0]["valid"] is False
    assert (
        call(client, "POST", "/assignments/release", {"tokens": [str(world.live)]}).status_code
        == 204
    )
    undo = call(client, "POST", f"/answers/{world.done}/undo")
    assert undo.status_code == 404 and undo.json()["error"]["code"] == "not_found"
    # The annotator's client_id on the thief's own lease: refused, the original untouched.
    reused = call(
        client,
        "POST",
        "/answers",
        {"client_id": str(world.done), "token": str(world.paused_lease), "answer": "correct"},
    )
    assert reused.status_code == 409 and reused.json()["error"]["code"] == "client_id_reused"
    assert annotators_work(world) == before
    # Revoked by the pause (not by the thief), and left so.
    assert Assignment.objects.get(token=world.paused_lease).state == Assignment.State.REVOKED

    owner = client_for(world, "annotator")
    assert call(owner, "POST", "/answers", answer_body(world)).status_code == 201
    assert call(owner, "POST", f"/answers/{world.done}/undo").status_code == 409  # not last


def test_owner_can_heartbeat_release_and_undo(world):
    owner = client_for(world, "annotator")
    undo = call(owner, "POST", f"/answers/{world.done}/undo")
    assert undo.status_code == 200 and undo.json()["undone"] is True
    assert Judgment.objects.get(client_id=world.done).withdrawn_at is not None
    assert (
        call(owner, "POST", "/assignments/release", {"tokens": [str(world.live)]}).status_code
        == 204
    )
    assert Assignment.objects.get(token=world.live).state == Assignment.State.RELEASED


def test_conflicted_participant_is_never_served_their_teams_items(world):
    client = client_for(world, "conflicted")
    for _ in range(3):
        claim = call(client, "POST", "/tasks/tk/claim", {"count": 3}).json()
        assert claim["status"] == "empty" and claim["assignments"] == []
    assert not Assignment.objects.filter(annotator=world.users["conflicted"]).exists()
