"""The annotator page's JSON API: the contract, end to end, with token and session auth."""

import json
import uuid
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.models import Assignment, Judgment
from annotation.services import request_verification
from leaderboard.services.tokens import rotate_token

from pipeline_support import (
    add_items,
    add_run,
    annotator,
    make_task,
    make_team,
    without_clock_times,
)

pytestmark = pytest.mark.django_db
API = "/annotate/api"


@pytest.fixture
def task():
    task = make_task(
        slug="tk",
        judgments_per_item=1,
        gold_rate=0.0,
        question="Do these two records describe the same paper?",
    )
    items = add_items(task, 4)
    for i, it in enumerate(items):
        it.payload = {"left": {"title": f"Paper {i}"}, "right": {"title": f"Paper {i}."}}
        it.save()
    request_verification(task=task, item_ids=[it.pk for it in items])
    return task


def client_for(user) -> Client:
    token = rotate_token(user=user)
    return Client(HTTP_AUTHORIZATION=f"Token {token.key}")


def post(client, path, body=None):
    return client.post(
        API + path,
        data=json.dumps(body if body is not None else {}),
        content_type="application/json",
    )


def test_claim_answer_undo_progress_round_trip(task):
    user = annotator(task, "ann")
    c = client_for(user)
    r = post(c, "/tasks/tk/claim", {"count": 2})
    assert r.status_code == 200
    data = r.json()
    assert data["status"] == "ok" and data["question"] == task.question
    assert len(data["assignments"]) == 2
    first = data["assignments"][0]
    assert set(first) == {"token", "expires_at", "display"}
    assert data["progress"] == {
        "answered_today": 0,
        "answered_total": 0,
        "daily_cap": None,
        "remaining": 4,
        "paused": False,
        "paused_reason": "",
    }
    hb = post(c, "/assignments/heartbeat", {"tokens": [a["token"] for a in data["assignments"]]})
    assert hb.status_code == 200 and all(a["valid"] for a in hb.json()["assignments"])

    cid = str(uuid.uuid4())
    body = {
        "client_id": cid,
        "token": first["token"],
        "answer": "correct",
        "justification": "same title",
        "seconds_spent": 3.2,
    }
    r = post(c, "/answers", body)
    assert r.status_code == 201
    assert r.json()["answer"]["client_id"] == cid and r.json()["answer"]["counted"] is True
    assert r.json()["answer"]["undo_until"] and r.json()["progress"]["answered_total"] == 1
    again = post(c, "/answers", body)
    assert again.status_code == 200 and again.json()["answer"] == r.json()["answer"]
    clash = post(c, "/answers", {**body, "answer": "incorrect"})
    assert clash.status_code == 409
    assert clash.json()["error"]["code"] == "client_id_reused"

    # The answer completed its item; taking it back only changes the judgment set: the item
    # is waiting again and comes back with a fresh token, to be answered anew.
    undone = post(c, f"/answers/{cid}/undo")
    assert undone.status_code == 200 and undone.json()["undone"] is True
    back = undone.json()["assignment"]
    assert back["token"] != first["token"] and back["display"] == first["display"]
    assert undone.json()["progress"]["answered_total"] == 0
    assert Judgment.objects.get(client_id=cid).withdrawn_seq == 1  # the next version
    assert post(c, f"/answers/{cid}/undo").json()["assignment"]["token"] == back["token"]
    r = post(
        c,
        "/answers",
        {"client_id": str(uuid.uuid4()), "token": back["token"], "answer": "incorrect"},
    )
    assert r.status_code == 201 and r.json()["answer"]["counted"] is True
    # A skip can be undone too: the item comes back with a fresh token.
    second = data["assignments"][1]
    skip_id = str(uuid.uuid4())
    assert (
        post(
            c, "/answers", {"client_id": skip_id, "token": second["token"], "answer": "cannot_tell"}
        ).status_code
        == 201
    )
    undone = post(c, f"/answers/{skip_id}/undo")
    assert undone.status_code == 200 and undone.json()["undone"] is True
    fresh = undone.json()["assignment"]
    assert fresh["token"] != second["token"] and fresh["display"] == second["display"]
    assert undone.json()["progress"]["answered_total"] == 1

    progress = c.get(API + "/tasks/tk/progress")
    assert progress.status_code == 200 and progress.json()["answered_today"] == 1
    assert post(c, "/assignments/release", {"tokens": [fresh["token"]]}).status_code == 204
    assert Assignment.objects.get(token=fresh["token"]).state == "released"


def test_the_claim_response_is_blind_to_runs_teams_scores_and_answers(task):
    user = annotator(task, "ann")
    other = annotator(task, "other-annotator")
    team = make_team("SecretTeamName")
    add_run(task, team, [0, 1, 2, 3], scores=[0.91, 0.92, 0.93, 0.94], name="SecretRunName")
    # Someone else already answered (skipped) an item: that must not show either.
    c_other = client_for(other)
    lease = post(c_other, "/tasks/tk/claim").json()["assignments"][0]
    post(
        c_other,
        "/answers",
        {
            "client_id": str(uuid.uuid4()),
            "token": lease["token"],
            "answer": "cannot_tell",
            "justification": "OtherJustification",
        },
    )
    text = post(client_for(user), "/tasks/tk/claim", {"count": 3}).content.decode()
    searched = without_clock_times(text)  # an expiry at 12:00:10.94... is no leaked 0.94
    for secret in (
        "SecretTeamName",
        "SecretRunName",
        "0.91",
        "0.92",
        "0.93",
        "0.94",
        "OtherJustification",
        "other-annotator",
        "cannot_tell",
        "priority",
        "request",
        '"k0"',
        "run",
        "team",
        "score",
    ):
        assert secret not in searched, secret
    data = json.loads(text)
    assert len(data["assignments"]) == 3
    for a in data["assignments"]:
        assert set(a) == {"token", "expires_at", "display"}


def test_session_auth_needs_the_csrf_token(task):
    user = annotator(task, "ann")
    user.set_password("pw")
    user.save()
    c = Client(enforce_csrf_checks=True)
    assert c.login(username="ann", password="pw")
    r = post(c, "/tasks/tk/claim")
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
    c.get("/annotate/")  # sets the CSRF cookie
    token = c.cookies["csrftoken"].value
    r = c.post(
        API + "/tasks/tk/claim", data="{}", content_type="application/json", HTTP_X_CSRFTOKEN=token
    )
    assert r.status_code == 200 and r.json()["status"] == "ok"


def test_late_answer_on_an_expired_lease_is_kept_and_said_not_counted(task):
    user = annotator(task, "ann")
    c = client_for(user)
    lease = post(c, "/tasks/tk/claim").json()["assignments"][0]
    Assignment.objects.filter(token=lease["token"]).update(
        expires_at=timezone.now() - timedelta(minutes=5)
    )
    hb = post(c, "/assignments/heartbeat", {"tokens": [lease["token"]]}).json()
    assert hb["assignments"][0]["valid"] is False  # expired: never revived
    r = post(
        c,
        "/answers",
        {"client_id": str(uuid.uuid4()), "token": lease["token"], "answer": "incorrect"},
    )
    assert r.status_code == 201 and r.json()["answer"]["counted"] is False
    assert "not counted" in r.json()["answer"]["message"]
    assert Judgment.objects.filter(answer="incorrect", counted=False, late=True).count() == 1


def test_tasks_and_assignments_of_others_are_not_found(task):
    user = annotator(task, "ann")
    c = client_for(user)
    r = post(c, "/tasks/nope/claim")
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    r = post(
        c,
        "/answers",
        {"client_id": str(uuid.uuid4()), "token": str(uuid.uuid4()), "answer": "correct"},
    )
    assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_assignment"
    r = post(c, f"/answers/{uuid.uuid4()}/undo")
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    assert not Judgment.objects.exists()


def test_non_annotators_and_organizers_who_do_not_annotate_get_403(task):
    organizer = get_user_model().objects.create(username="org")
    task.organizers.add(organizer)
    for user in (organizer, get_user_model().objects.create(username="x")):
        c = client_for(user)
        for r in (post(c, "/tasks/tk/claim"), c.get(API + "/tasks/tk/progress")):
            assert r.status_code == 403 and r.json()["error"]["code"] == "not_annotator"
    anonymous = Client()
    r = post(anonymous, "/tasks/tk/claim")
    assert r.status_code in (401, 403) and r.json()["error"]["code"] == "not_authenticated"


def test_a_member_who_left_her_team_is_never_served_its_items(task):
    """N5 through the APIs: leaving the team (POST /api/teams/<id>/leave/) and claiming as an
    annotator gives only the other teams' items, and the progress counts only those."""
    user = annotator(task, "leaver")
    team = make_team("Mine", user)
    items = list(task.items.order_by("index"))
    add_run(task, team, [0, 1], name="mine")
    add_run(task, make_team("Others"), [2, 3], name="others")
    from annotation.services import register_run_conflicts
    from leaderboard.models import Run

    for run in Run.objects.filter(task=task):
        register_run_conflicts(run=run)
    c = client_for(user)
    assert c.post(f"/api/teams/{team.pk}/leave/").status_code == 204
    r = post(c, "/tasks/tk/claim", {"count": 2})
    assert r.status_code == 200 and r.json()["progress"]["remaining"] == 2
    tokens = [a["token"] for a in r.json()["assignments"]]
    served = set(
        Assignment.objects.filter(token__in=tokens).values_list("request__item_id", flat=True)
    )
    assert served == {items[2].pk, items[3].pk}


def test_a_claim_and_an_answer_read_the_annotators_address_once_each(task):
    """The API checks the address before the view, and the queue's services check it again:
    the second check uses the first's answer (the request's own user object)."""
    c = client_for(annotator(task, "ann"))
    with CaptureQueriesContext(connection) as claim_queries:
        claimed = post(c, "/tasks/tk/claim", {"count": 1})
    assert claimed.status_code == 200, claimed.json()
    token = claimed.json()["assignments"][0]["token"]
    with CaptureQueriesContext(connection) as answer_queries:
        answered = post(
            c, "/answers", {"token": token, "client_id": str(uuid.uuid4()), "answer": "correct"}
        )
    assert answered.status_code == 201, answered.json()
    for captured in (claim_queries, answer_queries):
        reads = [q for q in captured.captured_queries if '"account_emailaddress"' in q["sql"]]
        assert len(reads) == 1, reads
