"""Hostile bodies for the annotation queue's JSON API (token auth, through the HTTP layer).

``POST /annotate/api/answers`` gets generated bodies: missing and extra fields, wrong types, bad
and unknown UUIDs, labels outside the allowed set, absurdly long strings, huge and negative
times, and replays of earlier client ids with the same or a different body. Every response is
2xx or a 4xx with the queue's error body, never a 5xx; a replay of a stored answer with the same
body returns it again (200) and with another body is refused (409); one client id never has two
stored answers, and what is stored is what was first accepted. Claim, heartbeat and release get
generated bodies too.

Reproducible: ``derandomize=True``. Case counts:
``pytest --hypothesis-show-statistics tests/annotation/test_ann_answers_fuzz.py``.
"""

from __future__ import annotations

import json
import uuid
from urllib.parse import quote

import pytest
from django.core.cache import caches
from django.test import Client
from hypothesis import event, given
from hypothesis import strategies as st

from annotation.models import Answer, Assignment, GoldAnswer, Judgment
from annotation.services import claim_assignments, release, request_verification
from leaderboard.services.tokens import create_token

from pipeline_support import add_items, annotator, make_task

pytestmark = [pytest.mark.django_db, pytest.mark.slow]
API = "/annotate/api"
FIXED_IDS = [uuid.UUID(int=i + 1) for i in range(6)]  # a small pool: replays are frequent
MISSING = object()
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**130),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@pytest.fixture
def queue(db):
    task = make_task(slug="fz", judgments_per_item=1, gold_rate=0.0)
    items = add_items(task, 400)
    request_verification(task=task, item_ids=[item.pk for item in items])
    user = annotator(task, "fuzz-ann")
    outsider = annotator(task, "outsider")
    others = [
        str(lease.token)
        for lease in claim_assignments(task=task, annotator=outsider, count=5).assignments
    ]
    token = create_token(user=user).key
    client = Client(HTTP_AUTHORIZATION=f"Token {token}")
    return task, user, others, client


def new_leases(task, user) -> list:
    """A fresh lease, the ones earlier examples left unanswered given back first (as a closing
    page does: an annotator holds only a few leases at a time)."""
    release(
        annotator=user,
        tokens=Assignment.objects.filter(annotator=user, state="active").values_list(
            "token", flat=True
        ),
    )
    return claim_assignments(task=task, annotator=user).assignments


def post(client, path: str, body) -> object:
    caches["throttle"].clear()  # the user throttle is not what these tests are about
    data = body if isinstance(body, bytes) else json.dumps(body)
    return client.post(API + path, data=data, content_type="application/json")


def check(response) -> dict | None:
    """2xx (the body) or a 4xx with the queue's error body (``None``); never a 5xx."""
    event(f"status {response.status_code}")
    assert response.status_code < 500, response.content[:500]
    if response.status_code == 204:
        return {}
    body = response.json()
    if response.status_code >= 400:
        assert set(body) == {"error"}, body
        assert body["error"]["code"] and body["error"]["message"], body
        return None
    return body


# -- answers --------------------------------------------------------------------------------------
@st.composite
def answer_bodies(draw):
    """Mostly well-formed (so the service is reached): each field is valid 17 times in 20,
    hostile otherwise (wrong type, bad value, absurd size) or missing."""

    def field(valid, hostile):
        roll = draw(st.integers(0, 19))
        return draw(valid) if roll < 17 else draw(hostile) if roll < 19 else MISSING

    body = {
        "client_id": field(
            st.one_of(
                st.sampled_from(FIXED_IDS).map(str),
                st.uuids().map(str),
                st.uuids().map(str),
                st.sampled_from(FIXED_IDS).map(lambda u: str(u).upper()),
            ),
            st.one_of(
                st.sampled_from(["", "not-a-uuid", "0" * 33, str(FIXED_IDS[0]) + "\x00"]), JUNK
            ),
        ),
        "token": field(
            st.sampled_from(["LEASE", "LEASE", "OTHER"]), st.one_of(st.uuids().map(str), JUNK)
        ),
        "answer": field(
            st.sampled_from(Answer.values),
            st.one_of(st.sampled_from(["CORRECT", "yes", "can't tell", "", "correct "]), JUNK),
        ),
        "justification": field(
            st.one_of(
                st.just(MISSING), st.text(max_size=40), st.just("x" * 500), st.just("  padded  ")
            ),
            st.one_of(st.sampled_from(["y" * 501, "z" * 100_000, "nul\x00byte"]), JUNK),
        ),
        "seconds_spent": field(
            st.one_of(st.just(MISSING), st.floats(0, 10**6), st.none()),
            st.one_of(st.sampled_from([-1, 1e308, 10**100, "12", "1e999", "nan", True]), JUNK),
        ),
    }
    body = {name: value for name, value in body.items() if value is not MISSING}
    if not draw(st.integers(0, 9)):
        body[draw(st.text(max_size=8))] = draw(JUNK)
    return body


def normalized(body: dict) -> tuple:
    """What the service compares when a client id comes back."""
    seconds = body.get("seconds_spent")
    seconds = float(seconds) if seconds is not None else None
    return (body["token"], body["answer"], (body.get("justification") or "").strip(), seconds)


@given(
    bodies=st.lists(answer_bodies(), min_size=1, max_size=3),
    raw=st.sampled_from([None] * 12 + [b"", b"[]", b"null", b'"x"', b"{", b"\xff", b"{}" * 2]),
)
def test_answers_are_2xx_or_4xx_idempotent_and_stored_once(queue, bodies, raw):
    task, user, others, client = queue
    if raw is not None:
        assert check(post(client, "/answers", raw)) is None
    accepted: dict[str, tuple] = {}  # client id -> the first accepted body, normalized
    for stored in Judgment.objects.filter(annotator=user):
        accepted[str(stored.client_id)] = None  # from earlier examples: compare with the row
    for body in map(dict, bodies):  # (never change what hypothesis generated: it replays it)
        if body.get("token") == "LEASE":
            leases = new_leases(task, user)
            body["token"] = str(leases[0].token) if leases else "none"
        elif body.get("token") == "OTHER":  # another annotator's lease: not yours (404)
            body["token"] = others[len(accepted) % len(others)]
        response = post(client, "/answers", body)
        result = check(response)
        if result is None:
            continue
        client_id = result["answer"]["client_id"]
        assert uuid.UUID(client_id) == uuid.UUID(str(body["client_id"]))
        assert result["answer"]["answer"] == body["answer"]
        if response.status_code == 201:
            assert client_id not in accepted
            accepted[client_id] = normalized(body)
        else:  # a replay: same body as the stored answer
            assert response.status_code == 200
            assert client_id in accepted
        # Replaying the very same body is idempotent.
        again = post(client, "/answers", body)
        assert again.status_code == 200, again.content
        assert again.json()["answer"] == result["answer"]
        # The stored row is the first accepted body.
        rows = list(Judgment.objects.filter(client_id=client_id))
        assert len(rows) == 1 and not GoldAnswer.objects.filter(client_id=client_id).exists()
        row = rows[0]
        assert str(row.assignment.token) == str(body["token"]) and row.answer == body["answer"]
    # One stored answer per client id and per (item, annotator) among live answers.
    ids = list(Judgment.objects.values_list("client_id", flat=True))
    assert len(ids) == len(set(ids))
    live = list(
        Judgment.objects.filter(annotator=user, withdrawn_at=None).values_list(
            "request_id", flat=True
        )
    )
    assert len(live) == len(set(live))


@given(
    first=answer_bodies(),
    changes=st.dictionaries(
        st.sampled_from(["answer", "justification", "seconds_spent", "token"]),
        st.one_of(
            st.sampled_from(Answer.values),
            st.text(max_size=5),
            st.floats(0, 100),
            st.uuids().map(str),
        ),
        min_size=1,
        max_size=2,
    ),
)
def test_a_client_id_reused_with_another_body_is_refused(queue, first, changes):
    task, user, _, client = queue
    lease = new_leases(task, user)[0]
    body = {"answer": "correct", **first, "client_id": str(uuid.uuid4()), "token": str(lease.token)}
    if check(post(client, "/answers", body)) is None:
        return
    other = {**body, **changes}
    response = post(client, "/answers", other)
    check(response)
    if response.status_code in (200, 201):  # only a replay of the same answer
        assert response.status_code == 200, (body, other)
        assert normalized(other) == normalized(body), (body, other)
    elif response.status_code == 409:
        assert response.json()["error"]["code"] in ("client_id_reused", "already_answered")
    assert Judgment.objects.filter(client_id=body["client_id"]).count() == 1
    assert Judgment.objects.get(client_id=body["client_id"]).answer == body["answer"]


# -- claim, heartbeat, release, undo, progress ----------------------------------------------------
TOKEN_LISTS = st.one_of(
    st.lists(st.one_of(st.uuids().map(str), st.just("LEASE"), JUNK), max_size=60), JUNK
)


@given(
    endpoint=st.sampled_from(["claim", "heartbeat", "release", "undo", "progress"]),
    body=st.one_of(
        st.fixed_dictionaries(
            {},
            optional={
                "count": st.one_of(st.integers(-5, 10**20), JUNK),
                "holding": TOKEN_LISTS,
                "tokens": TOKEN_LISTS,
                "extra": JUNK,
            },
        ),
        JUNK,
    ),
    slug=st.sampled_from(["fz", "nope", "fz%00", "f%0A", "f" * 90]),
)
def test_queue_endpoints_answer_2xx_or_4xx(queue, endpoint, body, slug):
    task, user, _, client = queue
    if isinstance(body, dict):
        body = dict(body)
        for name in ("holding", "tokens"):
            if isinstance(body.get(name), list):
                lease = None
                if "LEASE" in body[name]:
                    lease = new_leases(task, user)
                body[name] = [
                    str(lease[0].token) if v == "LEASE" and lease else v for v in body[name]
                ]
    before = set(Assignment.objects.filter(annotator=user).values_list("pk", "state"))
    if endpoint == "progress":
        caches["throttle"].clear()
        result = check(client.get(f"{API}/tasks/{slug}/progress"))
    elif endpoint == "undo":
        which = quote(body, safe="") if isinstance(body, str) else uuid.uuid4()
        result = check(post(client, f"/answers/{which}/undo", {}))
    else:
        path = {
            "claim": f"/tasks/{slug}/claim",
            "heartbeat": "/assignments/heartbeat",
            "release": "/assignments/release",
        }[endpoint]
        result = check(post(client, path, body))
    if result is None and endpoint in ("heartbeat", "release", "undo"):
        # A refused request changed no lease.
        assert set(Assignment.objects.filter(annotator=user).values_list("pk", "state")) == before
    if endpoint == "claim" and result is not None:
        assert slug == "fz" and len(result["assignments"]) <= 5
