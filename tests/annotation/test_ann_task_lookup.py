"""A draft task in the annotation app: the pages and the API reach it through the one rule,
``leaderboard.selectors.task_for``. Its annotators and organizers know it exists; to anyone else
its slug is a 404, as an unknown slug is (the API answered 403 ``not_annotator`` before)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from leaderboard.models import Task

from pipeline_support import make_task

pytestmark = pytest.mark.django_db
API = "/annotate/api/tasks"


@pytest.fixture
def people(db, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    users = {
        name: get_user_model().objects.create_user(name) for name in ("ann", "org", "stranger")
    }
    draft = make_task(slug="draft", title="Draft", state=Task.State.DRAFT)
    draft.organizers.add(users["org"])
    draft.annotators.add(users["ann"])
    return users


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def claim(client, slug):
    return client.post(
        f"{API}/{slug}/claim", data=json.dumps({"count": 1}), content_type="application/json"
    )


@pytest.mark.parametrize(
    ("who", "status", "code"),
    [("ann", 200, None), ("org", 403, "not_annotator"), ("stranger", 404, "not_found")],
)
def test_the_api_answers_a_draft_as_the_pages_do(people, who, status, code):
    client = client_for(people[who])
    for response in (client.get(f"{API}/draft/progress"), claim(client, "draft")):
        assert response.status_code == status, response.content
        if code is not None:
            assert response.json()["error"]["code"] == code
    assert claim(client, "nope").status_code == 404
    if who == "ann":  # nothing to answer on this draft (no reference candidate)
        body = claim(client, "draft").json()
        assert body["status"] == "empty" and "is a draft" in body["message"]


@pytest.mark.parametrize(
    ("who", "annotate", "queue"), [("ann", 200, 404), ("org", 403, 200), ("stranger", 404, 404)]
)
def test_the_pages_of_a_draft(people, who, annotate, queue):
    client = client_for(people[who])
    assert client.get("/annotate/draft/").status_code == annotate
    assert client.get("/annotate/draft/queue/").status_code == queue
    assert client.get("/annotate/draft/queue/answers.csv").status_code == queue
