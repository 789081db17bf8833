"""The closed-pool API: kind and measures of a task, the pool upload and its error bodies."""

from __future__ import annotations

import pytest

from leaderboard.models import Item, Task
from leaderboard.services.tasks import create_task

from organizer_uploads import loaded
from pipeline_support import open_unchecked

pytestmark = pytest.mark.django_db

POOL = "/api/tasks/pool/pool/"


@pytest.fixture
def pool_task(organizer):
    return create_task(
        slug="pool", title="Pool", organizers=[organizer], kind=Task.Kind.CLOSED_POOL
    )


def test_creating_a_closed_pool_task_with_measures(api, organizer):
    organizer.is_staff = True
    organizer.save()
    body = {"slug": "cp", "title": "CP", "kind": "closed_pool", "measures": ["f1", "accuracy"]}
    response = api(organizer).post("/api/tasks/", body, format="json")
    assert response.status_code == 201, response.json()
    assert (response.json()["kind"], response.json()["measures"]) == (
        "closed_pool",
        ["f1", "accuracy"],
    )
    refused = api(organizer).post(
        "/api/tasks/", {"slug": "o", "title": "O", "measures": ["mcc"]}, format="json"
    )
    assert refused.status_code == 400
    assert "measures" in refused.json()["error"]["fields"]


def test_organizers_upload_the_pool_once(api, pool_task, organizer, make_upload):
    response = api(organizer).post(
        POOL,
        {
            "file": make_upload("a\nb\nc\n", "pool.tsv"),
            "payloads": make_upload('{"key": "b", "payload": {"t": 1}}\n', "p.jsonl"),
        },
        format="multipart",
    )
    assert response.status_code == 202 and not Item.objects.filter(task=pool_task).exists()
    assert (response.json()["file_name"], response.json()["payloads_name"]) == (
        "pool.tsv",
        "p.jsonl",
    )
    body = loaded(api(organizer), response)
    assert body["state"] == "loaded" and body["counts"] == {"items": 3}
    assert Item.objects.get(task=pool_task, key="b").payload == {"t": 1}
    again = api(organizer).post(POOL, {"file": make_upload("d\n")}, format="multipart")
    assert again.status_code == 409 and again.json()["error"]["code"] == "pool_exists"


def test_a_bad_pool_file_gets_its_problems_by_line(api, pool_task, organizer, make_upload):
    response = api(organizer).post(
        POOL, {"file": make_upload("a\na\n", "pool.tsv")}, format="multipart"
    )
    body = loaded(api(organizer), response)
    assert body["state"] == "rejected" and body["problem_count"] == 1
    assert body["problems"] == [{"line": 2, "message": "duplicate key 'a' (first on line 1)"}]
    assert not Item.objects.filter(task=pool_task).exists()


def test_only_organizers_upload_a_pool(api, pool_task, participant, make_upload):
    open_unchecked(pool_task)  # seen by participants, who get 403 rather than 404
    response = api(participant).post(POOL, {"file": make_upload("a\n")}, format="multipart")
    assert response.status_code == 403
    assert api().post(POOL, {"file": make_upload("a\n")}, format="multipart").status_code in (
        401,
        403,
    )
    assert not Item.objects.filter(task=pool_task).exists()


def test_a_closed_pool_whose_first_run_came_before_its_pool(
    api, pool_task, organizer, participant, team, make_upload
):
    """Created open when that was allowed: a run before the pool is refused and stores nothing;
    the pool then uploads (an old rejected run does not block it) and runs are accepted."""
    from leaderboard.models import Run

    open_unchecked(pool_task)
    run = "a\t0.9\t1\nb\t0.1\t0\n"
    early = api(participant).post(
        "/api/tasks/pool/runs/", {"file": make_upload(run)}, format="multipart"
    )
    assert early.status_code == 409
    assert early.json()["error"]["code"] == "no_pool"
    assert early.json()["error"]["message"] == (
        "task 'pool' has no pool yet: its organizers upload it before runs are accepted; "
        "nothing was stored or counted"
    )
    assert not Run.objects.filter(task=pool_task).exists()
    Run.objects.create(task=pool_task, team=team, name="old", state=Run.State.REJECTED)
    uploaded = api(organizer).post(POOL, {"file": make_upload("a\nb\n")}, format="multipart")
    assert loaded(api(organizer), uploaded)["counts"] == {"items": 2}
    later = api(participant).post(
        "/api/tasks/pool/runs/", {"file": make_upload(run)}, format="multipart"
    )
    assert later.status_code == 202 and later.json()["state"] == "received"
    again = api(organizer).post(POOL, {"file": make_upload("c\n")}, format="multipart")
    assert again.status_code == 409
    assert again.json()["error"]["message"].startswith("task 'pool' already has its pool (2 items)")
