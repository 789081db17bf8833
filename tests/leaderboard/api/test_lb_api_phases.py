"""Phases through the REST API: dates set and validated, uploads refused before the window,
runs after the deadline marked (snapshot exports: ``test_lb_api_board``), the board held from
the deadline on and published by hand without the phase job holding it again."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from leaderboard.models import Run
from leaderboard.services.board import apply_due_phases
from leaderboard.services.tasks import update_task

from worlds import stored_snapshot

pytestmark = pytest.mark.django_db

TASK = "/api/tasks/linkage/"
RUNS = "/api/tasks/linkage/runs/"
HOUR = timedelta(hours=1)


def upload(client, data: bytes = b"a\t0.9\nb\t0.1\n"):
    return client.post(RUNS, {"file": SimpleUploadedFile("run.tsv", data)}, format="multipart")


def test_dates_are_set_in_iso_8601_and_read_back_in_utc(api, task, organizer):
    response = api(organizer).patch(
        TASK,
        {
            "submissions_open_at": "2026-12-01T09:00:00+01:00",
            "submissions_close_at": "2026-12-08T12:00:00Z",
            "reveal_at": "2026-12-09T12:00:00Z",
            "accept_late_runs": False,
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    body = api().get(TASK).json()
    assert body["submissions_open_at"] == "2026-12-01T08:00:00Z"
    assert (body["submissions_close_at"], body["reveal_at"]) == (
        "2026-12-08T12:00:00Z",
        "2026-12-09T12:00:00Z",
    )
    assert body["accept_late_runs"] is False


@pytest.mark.parametrize(
    ("dates", "field"),
    [
        (
            {
                "submissions_open_at": "2026-12-08T12:00:00Z",
                "submissions_close_at": "2026-12-01T12:00:00Z",
            },
            "submissions_close_at",
        ),
        (
            {"submissions_close_at": "2026-12-08T12:00:00Z", "reveal_at": "2026-12-01T12:00:00Z"},
            "reveal_at",
        ),
        ({"reveal_at": "tomorrow"}, "reveal_at"),
    ],
)
def test_bad_dates_are_a_400_naming_the_field_and_change_nothing(
    api, task, organizer, dates, field
):
    response = api(organizer).patch(TASK, dates, format="json")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert [p["message"].split(":")[0] for p in error["problems"]] == [field]
    task.refresh_from_db()
    assert (task.submissions_open_at, task.submissions_close_at, task.reveal_at) == (None,) * 3


def test_an_upload_before_the_window_is_a_409_that_stores_nothing(api, task, team, participant):
    update_task(task=task, submissions_open_at=timezone.now() + HOUR)
    assert api().get(TASK).json()["submission_phase"] == "not_open"
    response = upload(api(participant))
    assert response.status_code == 409, response.content
    error = response.json()["error"]
    assert error["code"] == "not_open_yet" and "accepts runs from" in error["message"]
    assert error["run"] is None and not Run.objects.exists()


def test_a_run_after_the_deadline_is_accepted_and_marked(api, task, team, participant):
    update_task(task=task, submissions_close_at=timezone.now() - HOUR)
    body = api().get(TASK).json()
    assert (body["submission_phase"], body["board_held"]) == ("after_deadline", True)
    response = upload(api(participant))
    assert response.status_code == 202, response.content
    assert response.json()["after_deadline"] is True
    listed = api(participant).get(RUNS).json()["results"]
    assert [run["after_deadline"] for run in listed] == [True]


def test_a_task_refusing_late_runs_answers_409_deadline_passed(api, task, team, participant):
    update_task(task=task, submissions_close_at=timezone.now() - HOUR, accept_late_runs=False)
    response = upload(api(participant))
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "deadline_passed"


def test_publishing_by_hand_after_the_deadline_is_not_undone_by_the_job(api, task, organizer):
    update_task(task=task, submissions_close_at=timezone.now() - HOUR)
    state = api(organizer).post(f"{TASK}publish/", {}, format="json").json()
    assert state["board_held"] is False
    assert apply_due_phases() == {"held": 0, "published": 0}
    assert api().get(TASK).json()["board_held"] is False


def test_the_board_state_reports_the_deadline_hold_before_the_job(api, task, organizer):
    stored_snapshot(task, engine_version="e", labels_version=1)
    update_task(task=task, submissions_close_at=timezone.now() - HOUR)
    state = api(organizer).post(f"{TASK}hold/", {}, format="json").json()
    assert state == {"task": "linkage", "board_held": True, "latest_published": 1}
    task.refresh_from_db()
    assert task.hold_applied_for == task.submissions_close_at
