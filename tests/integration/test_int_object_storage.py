"""Received files in an S3-compatible bucket (``S3_BUCKET``), against a real server (SeaweedFS,
``s3_bucket``): a run uploaded through the API is stored in the bucket, validated and ingested
by a real Celery worker that reads it from there, and its object is deleted once it is ingested;
a task's data file is stored, downloaded (streamed through the app, under its permission check)
and deleted there too; a store that refuses the delete leaves the object behind but never stops
the run's next job."""

from __future__ import annotations

import gzip
import hashlib
import io
import logging
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from object_store import READ_ONLY_KEY, READ_ONLY_SECRET
from rest_framework.test import APIClient

from config.settings import storage_config_from_env
from leaderboard.models import Run, RunPredictions, TaskFile
from leaderboard.services.ingest import ingest_run
from leaderboard.services.runs import submit_run
from leaderboard.services.tasks import create_task
from leaderboard.services.teams import create_team

from pipeline_support import open_unchecked

pytestmark = [
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(180),
]

SYSTEM = Path(__file__).resolve().parents[1] / "data" / "febrl4_slice" / "systems" / "ecm_given.tsv"


def client(user) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


@pytest.fixture
def task_and_people():
    users = get_user_model().objects
    organizer, participant = users.create_user("org"), users.create_user("pat")
    task = open_unchecked(create_task(slug="linkage", title="Linkage", organizers=[organizer]))
    create_team(name="Alpha", members=[participant])
    return task, organizer, participant


def test_a_run_goes_through_the_bucket_to_a_worker(
    s3_bucket, celery_worker_factory, task_and_people, received_files_dir, wait_for
):
    task, _organizer, participant = task_and_people
    # Started once the file is in the bucket (the job waits in Redis), so the test sees it there.
    worker = celery_worker_factory(env=s3_bucket.env, start=False)
    content = gzip.compress(SYSTEM.read_bytes())  # the worker inflates what it reads
    n_predictions = len(SYSTEM.read_text().splitlines())

    response = client(participant).post(
        f"/api/tasks/{task.slug}/runs/",
        {"file": SimpleUploadedFile("ecm.tsv.gz", content)},
        format="multipart",
    )
    assert response.status_code == 202, response.json()
    run = Run.objects.get(pk=response.json()["id"])
    assert run.upload.startswith(f"received-runs/{task.pk}/")
    assert s3_bucket.keys() == [run.upload] and s3_bucket.read(run.upload) == content
    assert not (received_files_dir / run.upload).exists()  # not on this machine's disk

    worker.start()

    def ingested() -> bool:
        run.refresh_from_db()
        return run.state not in (Run.State.RECEIVED, Run.State.VALIDATING)

    wait_for(ingested, timeout=90, interval=0.2, message="the worker to ingest the run")
    assert run.n_predictions == n_predictions, (run.state, run.reason)
    assert RunPredictions.objects.filter(run=run).exists() and run.upload == ""
    events = list(run.events.values_list("state", flat=True))
    assert events[:3] == ["received", "validating", "queued"]
    # The worker deletes the received object once the run is stored.
    wait_for(lambda: s3_bucket.keys() == [], timeout=30, message="the received file deleted")


def test_a_task_data_file_round_trips_through_the_bucket(s3_bucket, task_and_people):
    task, organizer, _participant = task_and_people
    body = b"key\tname\n" + b"rec-1\tSmith\n" * 50_000
    url = f"/api/tasks/{task.slug}/files/"

    created = client(organizer).post(
        url, {"file": SimpleUploadedFile("records.tsv", body)}, format="multipart"
    )
    assert created.status_code == 201, created.json()
    stored = TaskFile.objects.get(pk=created.json()["id"]).stored
    assert s3_bucket.keys() == [stored] and stored.startswith(f"task-files/{task.pk}/")
    assert s3_bucket.read(stored) == body
    assert created.json()["sha256"] == hashlib.sha256(body).hexdigest()

    download = client(organizer).get(f"{url}{created.json()['id']}/download/")
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == body
    assert download["Content-Length"] == str(len(body))
    assert download["Content-Disposition"] == 'attachment; filename="records.tsv"'
    # The app still decides who may download (a default task: its participants, signed in).
    assert APIClient().get(f"{url}{created.json()['id']}/download/").status_code == 401

    assert client(organizer).delete(f"{url}{created.json()['id']}/").status_code == 204
    assert s3_bucket.keys() == []


def test_a_delete_the_store_refuses_never_stops_the_next_job(
    s3_bucket, task_and_people, sent_messages, settings, caplog
):
    task, _organizer, participant = task_and_people
    run = submit_run(
        task=task,
        team=participant.teams.get(),
        user=participant,
        upload=io.BytesIO(SYSTEM.read_bytes()),
        file_name="ecm.tsv",
    )
    assert s3_bucket.keys() == [run.upload]
    # The worker's keys may read the bucket but not delete from it: a real refusal (403).
    reader = {**s3_bucket.env, "S3_ACCESS_KEY_ID": READ_ONLY_KEY}
    reader["S3_SECRET_ACCESS_KEY"] = READ_ONLY_SECRET
    settings.STORAGES = {**settings.STORAGES, "default": storage_config_from_env(reader)}

    with caplog.at_level(logging.WARNING, logger="leaderboard.services.stored_files"):
        assert ingest_run(run.pk) == "queued"
    run.refresh_from_db()
    assert run.state == Run.State.QUEUED and run.n_predictions > 0
    # The run's planning was still sent after the failed delete (on commit, in that order).
    assert sent_messages[-1] == ("evaluation.plan_run", [run.pk])
    assert len(s3_bucket.keys()) == 1 and "left behind" in caplog.text
