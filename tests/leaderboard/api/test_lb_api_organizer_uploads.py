"""``GET /api/tasks/<slug>/uploads/`` and ``.../uploads/<id>/``: an organizer's uploads as
received (``202``, where to follow them) and as the worker left them; no body grows with the
file (a file with 60,000 problems answers with its first 20 and the count); another task's
upload is not found; the schema documents the routes."""

from __future__ import annotations

import gzip

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import GoldItem
from leaderboard.services.tasks import create_task

from organizer_uploads import load_received, loaded
from pipeline_support import add_items

pytestmark = pytest.mark.django_db

GOLD = "/api/tasks/up/gold/"


@pytest.fixture
def task(organizer):
    task = create_task(slug="up", title="Uploads", organizers=[organizer])
    add_items(task, 3)  # k0 k1 k2
    return task


def post_gold(client, body: bytes, name: str = "gold.tsv"):
    return client.post(GOLD, {"file": SimpleUploadedFile(name, body)}, format="multipart")


def test_an_upload_is_followed_at_its_url_until_it_is_loaded(api, task, organizer, media_root):
    client = api(organizer)
    response = post_gold(client, b"k0\tcorrect\nk1\tincorrect\n")
    assert response.status_code == 202
    body = response.json()
    assert (
        response["Location"]
        == body["url"]
        == f"http://testserver/api/tasks/up/uploads/{body['id']}/"
    )
    assert (body["state"], body["kind"], body["counts"], body["problems"]) == (
        "received",
        "gold",
        {},
        [],
    )
    assert client.get(body["url"]).json()["state"] == "received"
    after = loaded(client, response)
    assert (after["state"], after["counts"]) == (
        "loaded",
        {"created": 2, "updated": 0, "unchanged": 0},
    )
    assert GoldItem.objects.count() == 2


def test_no_response_grows_with_the_file(api, task, organizer, media_root):
    client = api(organizer)
    bad = b"".join(b"nope-%06d\tcorrect\n" % i for i in range(60_000))  # 1.1 MB, every line bad
    response = post_gold(client, gzip.compress(bad), "gold.tsv.gz")
    assert response.status_code == 202 and len(response.content) < 1000
    body = loaded(client, response)
    assert (body["state"], body["problem_count"], len(body["problems"])) == (
        "rejected",
        60_000,
        20,
    )
    assert body["problems"][0] == {
        "line": 1,
        "message": "no item with key 'nope-000000' in task up",
    }
    assert len(client.get(body["url"]).content) < 4000
    assert len(client.get("/api/tasks/up/uploads/").content) < 5000
    assert not GoldItem.objects.exists()


def test_the_list_is_newest_first_and_another_tasks_upload_is_not_found(
    api, task, organizer, media_root
):
    client = api(organizer)
    first = post_gold(client, b"k0\tcorrect\n").json()
    second = post_gold(client, b"k1\tmaybe\n").json()
    load_received(task)
    listed = client.get("/api/tasks/up/uploads/").json()
    assert [(u["id"], u["state"]) for u in listed] == [
        (second["id"], "rejected"),
        (first["id"], "loaded"),
    ]
    create_task(slug="mine", title="Mine", organizers=[organizer])
    response = client.get(f"/api/tasks/mine/uploads/{first['id']}/")
    assert response.status_code == 404
    assert response.json()["error"]["message"] == f"task 'mine' has no upload {first['id']}"


def test_the_schema_documents_the_uploads(api):
    schema = api().get("/api/schema/?format=json").json()
    assert "get" in schema["paths"]["/api/tasks/{slug}/uploads/"]
    detail = schema["paths"]["/api/tasks/{slug}/uploads/{upload_id}/"]["get"]
    assert {"200", "401", "403", "404"} <= set(detail["responses"])
    for path in ("reference/", "pool/", "reference-sample/candidates/", "gold/"):
        responses = schema["paths"][f"/api/tasks/{{slug}}/{path}"]["post"]["responses"]
        assert "202" in responses and "201" not in responses, path
