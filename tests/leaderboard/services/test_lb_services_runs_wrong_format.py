"""A run file in the wrong format (CSV, a header line, UTF-16, a space for a tab) is refused in
the upload request with its hint: recorded rejected, never stored, queued or counted; the
organizers' uploads lead with the same hint."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pytest
from django.core.files.storage import default_storage

from leaderboard.models import Item, Run, Task
from leaderboard.selectors import quota_for
from leaderboard.services.ingest import ingest_run
from leaderboard.services.pool import upload_pool
from leaderboard.services.reference import upload_reference
from leaderboard.services.reference_candidates import upload_candidates
from leaderboard.services.runs import SubmissionError, submit_run
from leaderboard.services.tasks import create_task

from pipeline_support import open_unchecked

pytestmark = pytest.mark.django_db

SYSTEM = Path(__file__).resolve().parents[2] / "data" / "febrl4_slice" / "systems" / "ecm_given.tsv"
TSV = SYSTEM.read_text()
CSV_WITH_HEADER = "key,score\n" + TSV.replace("\t", ",")  # the issue's file: 273 lines
CSV_HINT = "this looks like CSV (comma-separated): separate key and score with a tab"


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path


def upload_file(data: str | bytes, name: str = "run.tsv") -> io.BytesIO:
    stream = io.BytesIO(data.encode() if isinstance(data, str) else data)
    stream.name = name
    return stream


def stored_files() -> list[str]:
    if not default_storage.exists("received-runs"):
        return []
    dirs, _ = default_storage.listdir("received-runs")
    return [f for d in dirs for f in default_storage.listdir(f"received-runs/{d}")[1]]


def refused(task, team, user, data, name="run.tsv") -> SubmissionError:
    with pytest.raises(SubmissionError) as info:
        submit_run(task=task, team=team, user=user, upload=upload_file(data, name), file_name=name)
    return info.value


def test_the_issues_csv_file_is_refused_in_the_upload_request(task, team, participant, sent_jobs):
    exc = refused(task, team, participant, CSV_WITH_HEADER)
    assert (exc.code, exc.http_status) == ("wrong_format", 400)
    hint = CSV_HINT + ", and remove the header line"
    assert exc.message == f"line 1: {hint}"
    assert [p.as_dict() for p in exc.problems] == [{"line": 1, "message": hint}]
    # Recorded rejected (the team sees why on its runs), with nothing stored, queued or counted.
    run = exc.run
    assert run is not None and run.state == Run.State.REJECTED
    assert run.reason == f"line 1: {hint}" and run.errors == [{"line": 1, "message": hint}]
    assert run.upload == "" and stored_files() == []
    assert sent_jobs == [] and not Item.objects.exists()
    assert quota_for(task=task, team=team).used_total == 0


@pytest.mark.parametrize(
    ("data", "name", "problem"),
    [
        (
            TSV.encode("utf-16"),
            "run.txt",
            (None, "this file is UTF-16 (as Excel saves it): save it as UTF-8"),
        ),
        (TSV.encode("utf-32-le"), "run.tsv", (None, "this file is UTF-32: save it as UTF-8")),
        (
            "key\tscore\n" + TSV,
            "run.tsv",
            (1, "this looks like a header line (key, score): remove it"),
        ),
        (
            TSV.replace("\t", " "),
            "run.tsv",
            (1, "a space separates the columns: separate key and score with a tab"),
        ),
        (
            TSV.replace("\t", ";").replace(".", ","),
            "run.csv",
            (1, "this looks like CSV (semicolon-separated): separate key and score with a tab"),
        ),
        (
            gzip.compress(CSV_WITH_HEADER.encode()),
            "run.csv.gz",
            (1, CSV_HINT + ", and remove the header line"),
        ),
    ],
)
def test_each_wrong_format_is_refused_at_upload(
    task, team, participant, sent_jobs, data, name, problem
):
    exc = refused(task, team, participant, data, name)
    assert exc.code == "wrong_format"
    assert [(p.line, p.message) for p in exc.problems] == [problem]
    assert sent_jobs == [] and stored_files() == []


def test_refused_files_leave_every_daily_slot(task, team, participant, sent_jobs):
    for variant in range(5):  # the task allows 3 runs a day
        refused(task, team, participant, CSV_WITH_HEADER + f"extra-{variant},0.5\n")
    assert Run.objects.filter(state=Run.State.REJECTED).count() == 5
    for variant in range(3):
        run = submit_run(
            task=task, team=team, user=participant, upload=upload_file(TSV + f"k{variant}\t0.5\n")
        )
        assert run.state == Run.State.RECEIVED
    assert quota_for(task=task, team=team).used_today == 3


@pytest.mark.parametrize(
    ("data", "name"),
    [
        (b'{"key": "a,b", "score": 0.9}\n{"key": "c,d", "score": 0.1}\n', "run.jsonl"),
        (b"a,b\t0.9\nc;d\t0.8\n", "run.tsv"),
        (b"rec-1,rec-2\nrec-3,rec-4\n", "run.tsv"),  # pair keys, no scores
        (b"New York\t0.5\nLos Angeles\t0.25\n", "run.tsv"),
    ],
)
def test_look_alikes_are_received_and_queued(task, team, participant, sent_jobs, data, name):
    run = submit_run(task=task, team=team, user=participant, upload=upload_file(data, name))
    assert run.state == Run.State.RECEIVED
    assert ingest_run(run.pk) == Run.State.QUEUED


def test_a_closed_pool_run_is_refused_in_its_own_layout(organizer, team, participant, sent_jobs):
    pool = open_unchecked(
        create_task(slug="pool", title="Pool", kind=Task.Kind.CLOSED_POOL, organizers=[organizer])
    )
    upload_pool(task=pool, user=organizer, upload=upload_file("p1\np2\n", "pool.tsv"))
    exc = refused(pool, team, participant, "p1,0.9,1\np2,0.1,0\n")
    assert exc.problems[0].message == (
        "this looks like CSV (comma-separated): separate key, score and label with tabs"
    )


def test_organizer_uploads_lead_with_the_hint(task, organizer):
    with pytest.raises(SubmissionError) as info:
        upload_reference(
            task=task,
            user=organizer,
            upload=upload_file("key,group\nrec-1,doc-1\n"),
            file_name="ref.csv",
        )
    assert info.value.code == "wrong_format" and info.value.total == 1
    assert info.value.message == (
        "line 1: this looks like CSV (comma-separated): separate key and group with a tab, and "
        "remove the header line"
    )
    with pytest.raises(SubmissionError) as info:
        upload_candidates(
            task=task,
            user=organizer,
            upload=upload_file("rec-1\tdoc-1\n".encode("utf-16")),
            file_name="c.tsv",
        )
    assert info.value.message == "this file is UTF-16 (as Excel saves it): save it as UTF-8"
    assert not Item.objects.exists()
