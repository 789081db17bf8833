"""The API's run actions and limits: withdraw a run (its team, the task's organizers), mark a
baseline (organizers), the limits an upload is checked against (``quota``), the board without
withdrawn runs; refusals with the one error body."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard.models import Run
from leaderboard.services.ingest import ingest_run
from leaderboard.services.teams import create_team

from worlds import stored_snapshot

pytestmark = pytest.mark.django_db

ERROR_KEYS = {"code", "message", "problems", "total", "run"}


def error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    body = response.json()["error"]
    assert set(body) >= ERROR_KEYS and body["code"] == code
    return body


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path


@pytest.fixture
def stranger(db):
    user = get_user_model().objects.create_user("stranger")
    create_team(name="Other", members=[user])
    return user


def uploaded(api, user, data: bytes = b"a\t0.9\nb\t0.1\n", name: str = "bm25 v2.tsv") -> dict:
    response = api(user).post(
        "/api/tasks/linkage/runs/",
        {"file": SimpleUploadedFile(name, data)},
        format="multipart",
    )
    assert response.status_code == 202, response.content
    ingest_run(response.json()["id"])
    return api(user).get(response.json()["url"]).json()


def test_a_team_withdraws_its_run(api, task, team, participant, sent_jobs):
    run = uploaded(api, participant)
    assert run["name"] == "bm25 v2" and run["baseline"] is False
    url = f"/api/runs/{run['id']}/withdraw/"
    response = api(participant).post(url)
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["state"], body["quota_refunded"]) == ("withdrawn", True)
    assert body["events"][-1]["state"] == "withdrawn"
    assert api(participant).post(url).json()["state"] == "withdrawn"  # idempotent
    quota = api(participant).get("/api/tasks/linkage/quota/").json()
    assert quota["teams"][0]["used_total"] == 0 and quota["teams"][0]["refunded"] == 1


def test_withdrawal_refusals(api, task, team, participant, organizer, stranger, sent_jobs):
    run = uploaded(api, participant)
    url = f"/api/runs/{run['id']}/withdraw/"
    error(api().post(url), 401, "not_authenticated")
    error(api(stranger).post(url), 404, "not_found")  # another team's run is not there
    rejected = api(participant).post(
        "/api/tasks/linkage/runs/",
        {"file": SimpleUploadedFile("bad.tsv", b"a\tnot a score\n")},
        format="multipart",
    )
    ingest_run(rejected.json()["id"])
    body = error(
        api(participant).post(f"/api/runs/{rejected.json()['id']}/withdraw/"),
        409,
        "nothing_to_withdraw",
    )
    assert "rejected" in body["message"]
    # The organizer may withdraw it.
    assert api(organizer).post(url).json()["reason"].startswith("withdrawn by an organizer")


def test_organizers_mark_a_baseline(api, task, team, participant, organizer, sent_jobs):
    run = uploaded(api, participant)
    url = f"/api/runs/{run['id']}/baseline/"
    body = error(api(participant).post(url, {"baseline": True}, format="json"), 403, "not_allowed")
    assert "organizers" in body["message"]
    marked = api(organizer).post(url, {}, format="json")
    assert marked.status_code == 200 and marked.json()["baseline"] is True
    error(api(organizer).post(url, {"baseline": "perhaps"}, format="json"), 400, "invalid")
    error(api(organizer).post(url, {"baselin": False}, format="json"), 400, "invalid")
    assert api(organizer).post(url, {"baseline": False}, format="json").json()["baseline"] is False
    api(participant).post(f"/api/runs/{run['id']}/withdraw/")
    error(api(organizer).post(url, {"baseline": True}, format="json"), 409, "not_on_board")


def test_the_quota_gives_the_limits_of_an_upload(api, task, team, participant, settings, sent_jobs):
    settings.UPLOAD_MAX_BYTES = 5000
    task.max_upload_bytes, task.max_predictions_per_run = 10_000, 777
    task.max_runs_per_team_per_day = 1
    task.save()
    quota = api(participant).get("/api/tasks/linkage/quota/").json()
    assert (quota["max_upload_bytes"], quota["max_predictions_per_run"]) == (5000, 777)
    assert quota["teams"][0]["remaining_today"] == 1 and quota["teams"][0]["next_slot_at"] is None
    uploaded(api, participant)
    team_quota = api(participant).get("/api/tasks/linkage/quota/").json()["teams"][0]
    assert team_quota["remaining_today"] == 0 and team_quota["next_slot_at"] is not None


def test_the_board_leaves_withdrawn_runs_out_and_the_snapshot_keeps_them(
    api, task, team, participant, sent_jobs
):
    first, second = uploaded(api, participant), uploaded(api, participant, b"c\t0.5\n", "two.tsv")
    rows = [
        {"run": r["id"], "name": r["name"], "team": "Alpha", "state": "scored"}
        for r in (first, second)
    ]
    stored_snapshot(task, rows)
    Run.objects.filter(pk=first["id"]).update(state=Run.State.SCORED)
    api(participant).post(f"/api/runs/{first['id']}/withdraw/")
    board = api().get("/api/tasks/linkage/board/").json()
    assert [row["run"] for row in board["rows"]] == [second["id"]]
    snapshot = api().get("/api/tasks/linkage/snapshots/1/").json()
    assert [row["run"] for row in snapshot["rows"]] == [first["id"], second["id"]]
