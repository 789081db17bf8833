"""Junk runs through the API: a file in the wrong format refused in the upload's response with
its hint (``wrong_format``)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard.models import Item, Run

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
