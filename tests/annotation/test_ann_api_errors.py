"""Bad input to the queue API: always a 4xx with the error body (``{"error": {"code", "message",
"problems", "total", "run"}}``), never a 500, and nothing stored."""

import json
import uuid

import pytest
from django.test import Client

from annotation.models import Assignment, GoldAnswer, Judgment
from annotation.services import request_verification
from leaderboard.services.tokens import rotate_token

from pipeline_support import add_items, annotator, make_task

pytestmark = pytest.mark.django_db
API = "/annotate/api"


@pytest.fixture
def world(sent_messages):
    task = make_task(slug="tk", judgments_per_item=1, gold_rate=0.0)
    items = add_items(task, 3)
    request_verification(task=task, item_ids=[it.pk for it in items])
    user = annotator(task, "ann")
    token = rotate_token(user=user)
    client = Client(HTTP_AUTHORIZATION=f"Token {token.key}")
    lease = client.post(API + "/tasks/tk/claim", data="{}", content_type="application/json")
    return client, lease.json()["assignments"][0]["token"]


def answer(token, **fields):
    return {"client_id": str(uuid.uuid4()), "token": token, "answer": "correct", **fields}


BAD = [
    ("/tasks/tk/claim", "not json", "invalid"),
    ("/tasks/tk/claim", [1, 2], "invalid"),
    ("/tasks/tk/claim", {"count": 0}, "invalid"),
    ("/tasks/tk/claim", {"count": 99}, "invalid"),
    ("/tasks/tk/claim", {"count": "two"}, "invalid"),
    ("/tasks/tk/claim", {"holding": "abc"}, "invalid"),
    ("/tasks/tk/claim", {"holding": ["not-a-uuid"]}, "invalid"),
    ("/tasks/tk/claim", {"count": 1, "extra": True}, "invalid"),
    ("/assignments/heartbeat", {}, "invalid"),
    ("/assignments/heartbeat", {"tokens": ["x"]}, "invalid"),
    ("/assignments/heartbeat", {"tokens": [str(uuid.uuid4())] * 51}, "invalid"),
    ("/assignments/release", {"tokens": "x"}, "invalid"),
    ("/answers", {}, "invalid"),
    ("/answers", lambda t: answer(t, answer="maybe"), "invalid"),
    ("/answers", lambda t: answer(t, client_id="nope"), "invalid"),
    ("/answers", lambda t: answer(t, seconds_spent=-1), "invalid"),
    ("/answers", lambda t: answer(t, seconds_spent="soon"), "invalid"),
    ("/answers", lambda t: answer(t, justification="x" * 501), "invalid"),
    ("/answers", lambda t: answer(t, mood="happy"), "invalid"),
    ("/answers", lambda t: {k: v for k, v in answer(t).items() if k != "token"}, "invalid"),
    ("/answers", lambda t: answer(str(uuid.uuid4())), "unknown_assignment"),
]


@pytest.mark.parametrize(
    ("path", "body", "code"), BAD, ids=[f"{p} {i}" for i, (p, _, _) in enumerate(BAD)]
)
def test_bad_bodies_get_a_4xx_error_body_and_store_nothing(world, path, body, code):
    client, token = world
    if callable(body):
        body = body(token)
    data = body if isinstance(body, str) else json.dumps(body)
    r = client.post(API + path, data=data, content_type="application/json")
    assert 400 <= r.status_code < 500, r.content
    err = r.json()["error"]
    assert err["code"] == code and err["message"]
    assert not Judgment.objects.exists() and not GoldAnswer.objects.exists()
    assert Assignment.objects.filter(state="active").count() == 1


def test_wrong_methods_and_content_types_are_4xx_with_an_error_body(world):
    client, _token = world
    r = client.get(API + "/answers")
    assert r.status_code == 405 and r.json()["error"]["code"] == "method_not_allowed"
    r = client.post(API + "/answers", data="a=b", content_type="text/plain")
    assert r.status_code == 415 and r.json()["error"]["code"] == "invalid"
    r = client.post(API + "/tasks/tk/claim")  # no body at all: defaults apply
    assert r.status_code == 200


def test_bad_tokens_and_credentials(world):
    r = Client(HTTP_AUTHORIZATION="Token nope").post(
        API + "/tasks/tk/claim", data="{}", content_type="application/json"
    )
    assert r.status_code == 401 and r.json()["error"]["code"] == "not_authenticated"


@pytest.mark.parametrize("failure", ["operational", "interface"])
def test_a_lost_database_is_a_json_503_with_retry_after_and_the_retry_stores_once(
    world, monkeypatch, failure
):
    from django.db import InterfaceError, OperationalError

    import annotation.api

    client, token = world
    body = answer(token)
    exc = {"operational": OperationalError, "interface": InterfaceError}[failure]

    def lost(**kwargs):
        raise exc("server closed the connection unexpectedly")

    real = annotation.api.answer_assignment
    monkeypatch.setattr(annotation.api, "answer_assignment", lost)
    response = client.post(API + "/answers", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response.json() == {
        "error": {
            "code": "unavailable",
            "message": "the database is unavailable; retry shortly",
            "problems": [],
            "total": 0,
            "run": None,
        }
    }
    assert "server closed" not in response.content.decode()
    monkeypatch.setattr(annotation.api, "answer_assignment", real)
    retry = client.post(API + "/answers", data=json.dumps(body), content_type="application/json")
    assert retry.status_code == 201
    assert Judgment.objects.filter(client_id=body["client_id"]).count() == 1
