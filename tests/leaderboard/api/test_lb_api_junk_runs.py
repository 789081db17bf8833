"""Junk runs through the API: a file in the wrong format refused in the upload's response with
its hint (``wrong_format``); a run of malformed keys held for the organizers, who release or
reject it (and no-one else may)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard.models import Item, Run
from leaderboard.services.ingest import ingest_run
from leaderboard.services.tasks import create_task
from leaderboard.services.teams import create_team

from organizer_uploads import loaded

pytestmark = pytest.mark.django_db

RUNS = "/api/tasks/linkage/runs/"
SYSTEM = Path(__file__).resolve().parents[2] / "data" / "febrl4_slice" / "systems" / "ecm_given.tsv"
TSV = SYSTEM.read_text()
CSV_WITH_HEADER = "key,score\n" + TSV.replace("\t", ",")


def upload(client, data: bytes, name: str = "run.tsv"):
    return client.post(RUNS, {"file": SimpleUploadedFile(name, data)}, format="multipart")


@pytest.mark.parametrize(
    ("data", "name", "problem"),
    [
        (
            CSV_WITH_HEADER.encode(),
            "run.csv",
            {
                "line": 1,
                "message": "this looks like CSV (comma-separated): separate key and score with "
                "a tab, and remove the header line",
            },
        ),
        (
            gzip.compress(("key\tscore\n" + TSV).encode()),
            "run.tsv.gz",
            {"line": 1, "message": "this looks like a header line (key, score): remove it"},
        ),
        (
            TSV.encode("utf-16"),
            "run.txt",
            {"line": None, "message": "this file is UTF-16 (as Excel saves it): save it as UTF-8"},
        ),
        (
            TSV.replace("\t", " ").encode(),
            "run.tsv",
            {
                "line": 1,
                "message": "a space separates the columns: separate key and score with a tab",
            },
        ),
    ],
)
def test_a_file_in_the_wrong_format_is_refused_in_the_response(
    api, task, team, participant, sent_jobs, data, name, problem
):
    response = upload(api(participant), data, name)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "wrong_format" and error["problems"] == [problem]
    where = f"line {problem['line']}: " if problem["line"] else ""
    assert error["message"] == where + problem["message"] and error["total"] == 1
    # The run recorded for it: rejected with the hint, nothing queued, no quota used.
    run = api(participant).get(f"/api/runs/{error['run']}/").json()
    assert run["state"] == "rejected" and run["errors"] == [problem]
    assert sent_jobs == [] and not Item.objects.exists()
    quota = api(participant).get("/api/tasks/linkage/quota/").json()["teams"][0]
    assert quota["used_total"] == 0 and quota["used_today"] == 0


def test_a_json_lines_run_with_commas_in_its_keys_is_accepted(api, task, team, participant):
    data = b'{"key": "a,0.5", "score": 0.9}\n{"key": "b,c", "score": 0.1}\n'
    response = upload(api(participant), data, "run.jsonl")
    assert response.status_code == 202, response.content
    assert Run.objects.get(pk=response.json()["id"]).state == Run.State.RECEIVED


# -- runs held for the organizers --------------------------------------------------------------
TRUTH = (SYSTEM.parents[1] / "truth.tsv").read_text().split()
JUNK = "".join(
    json.dumps({"key": line.replace("\t", ","), "score": 0.5}) + "\n" for line in TSV.splitlines()
).encode()


@pytest.fixture
def held_run(api, task, team, participant, organizer, sent_jobs) -> Run:
    """A run of the issue's keys (in JSON Lines, past the sniffer) held after validation, on the
    task with a reference sample of 30 true febrl4 pairs."""
    reference = "".join(f"{key}\tdoc\n" for key in TRUTH[:30]).encode()
    response = api(organizer).post(
        "/api/tasks/linkage/reference/",
        {"file": SimpleUploadedFile("ref.tsv", reference)},
        format="multipart",
    )
    assert loaded(api(organizer), response)["state"] == "loaded"
    response = upload(api(participant), JUNK, "run.jsonl")
    assert response.status_code == 202, response.content
    assert ingest_run(response.json()["id"]) == Run.State.HELD
    return Run.objects.get(pk=response.json()["id"])


@pytest.fixture
def outsiders(db, organizer):
    """A participant of another team and an organizer of another task."""
    users = get_user_model().objects
    rival, other_org = users.create_user("rival"), users.create_user("other-org")
    create_team(name="Rivals", members=[rival])
    create_task(slug="other", title="Other", organizers=[other_org])
    return rival, other_org


def test_the_team_and_the_organizers_see_a_held_run_and_why(
    api, held_run, participant, organizer, outsiders
):
    mine = api(participant).get(f"/api/runs/{held_run.pk}/").json()
    assert mine["state"] == "held" and mine["reason"].startswith(
        "held for the organizers: 272 of its 272 keys match no item of the task and look malformed"
    )
    assert mine["errors"][0]["line"] == 1 and mine["error_count"] == 272
    listed = api(organizer).get(f"{RUNS}?state=held").json()["results"]
    assert [r["id"] for r in listed] == [held_run.pk] and listed[0]["state"] == "held"
    for outsider in outsiders:
        assert api(outsider).get(f"/api/runs/{held_run.pk}/").status_code == 404
    assert api(outsiders[0]).get(f"{RUNS}?state=held").json()["results"] == []


@pytest.mark.parametrize("action", ["release", "reject"])
def test_only_the_tasks_organizers_release_or_reject(api, held_run, participant, outsiders, action):
    url = f"/api/runs/{held_run.pk}/{action}/"
    assert api().post(url).status_code == 401
    response = api(participant).post(url)
    assert response.status_code == 403, response.content
    assert response.json()["error"]["message"] == (
        "only the organizers of task 'linkage' may release or reject its runs"
    )
    for outsider in outsiders:  # they cannot see the run at all
        assert api(outsider).post(url).json()["error"]["code"] == "not_found"
    held_run.refresh_from_db()
    assert held_run.state == Run.State.HELD


def test_release_queues_the_run_as_usual(
    api, held_run, organizer, sent_jobs, django_capture_on_commit_callbacks
):
    url = f"/api/runs/{held_run.pk}/release/"
    with django_capture_on_commit_callbacks(execute=True):
        body = api(organizer).post(url).json()
    assert body["state"] == "received"
    assert body["reason"] == "released by the organizers; waiting to be validated again"
    assert ("evaluation.ingest_run", [held_run.pk]) in sent_jobs
    assert api(organizer).post(url).json()["state"] == "received"  # idempotent
    assert ingest_run(held_run.pk) == Run.State.QUEUED
    assert api(organizer).get(f"/api/runs/{held_run.pk}/").json()["n_predictions"] == 272
    response = api(organizer).post(f"/api/runs/{held_run.pk}/reject/")
    assert response.status_code == 409 and response.json()["error"]["code"] == "not_held"


def test_reject_gives_the_quota_slot_back(api, held_run, participant, organizer):
    quota = api(participant).get("/api/tasks/linkage/quota/").json()["teams"][0]
    assert quota["used_total"] == 1  # a held run holds its slot
    for _ in range(2):  # idempotent
        body = api(organizer).post(f"/api/runs/{held_run.pk}/reject/").json()
        assert body["state"] == "rejected" and body["reason"].startswith(
            "rejected by the organizers"
        )
    quota = api(participant).get("/api/tasks/linkage/quota/").json()["teams"][0]
    assert quota["used_total"] == 0
    mine = api(participant).get(f"/api/runs/{held_run.pk}/").json()
    assert mine["state"] == "rejected" and len(mine["errors"]) == 10


def test_a_run_that_was_never_held_is_refused_409(api, task, team, participant, organizer):
    response = upload(api(participant), b"a\t0.5\n")
    run_id = response.json()["id"]
    for action in ("release", "reject"):
        response = api(organizer).post(f"/api/runs/{run_id}/{action}/")
        assert response.status_code == 409
        error = response.json()["error"]
        assert error["code"] == "not_held"
        assert error["message"] == (
            f"run {run_id} is received, not held: only a held run can be {action}ed by its "
            "task's organizers"
        )
