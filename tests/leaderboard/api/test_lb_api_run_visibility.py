"""What participants learn of a run's progress: nothing computed from held labels, and not
whether another team already predicted its keys.

The world is the permission matrix's (``build_world``: the board of task ``main`` held, snapshot
1 published, snapshot 2 held). Team A's run ``late`` was planned before snapshot 1 (its first
round's reason carries the half-width of published labels, ``±0.210``); after snapshot 1, while
the board was held, held labels scored it (``±0.047`` in its reasons). Its team must see it as
snapshot 1 left it, through the API (what ``leaderboard_cli`` prints), the run page and the runs
list; the task's organizers see it live; once published, everyone does.
"""

from __future__ import annotations

import io
import json
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from leaderboard.models import LeaderboardSnapshot, Run, RunEvent, Task
from leaderboard.services.ingest import submit_and_ingest

pytestmark = pytest.mark.django_db

PUBLISHED_REASON = "round 1: 20 items sent for verification (precision ±0.210 now, target ±0.05)"
HELD_REASONS = (
    "answers are in: planning the next round",
    "final estimation",
    "precision ±0.047 meets the target ±0.05",
)
HELD_TEXTS = ("0.047", "scored", "Scored", "final estimation", "answers are in")


@pytest.fixture
def late(lb_world):
    """Team A's run ``late``: awaiting labels at snapshot 1, scored by held labels since."""
    now = timezone.now()
    cutoff = now - timedelta(minutes=10)
    snapshot = lb_world.snapshots[0]
    run = Run.objects.create(
        task=lb_world.task,
        team=lb_world.teams["A"],
        submitted_by=lb_world.users["pa"],
        name="late",
        state=Run.State.SCORED,
        reason=HELD_REASONS[-1],
        outcome="met",
        rounds=2,
        n_predictions=50,
        n_requested=30,
        n_verified=30,
        state_changed_at=now,
        finished_at=now,
    )
    before = [
        ("received", "received run.tsv"),
        ("validating", "validating the file"),
        ("queued", "50 predictions"),
        ("planning", "planning the first round"),
        ("awaiting_labels", PUBLISHED_REASON),
    ]
    after = zip(("planning", "estimating", "scored"), HELD_REASONS, strict=True)
    RunEvent.objects.bulk_create(
        [
            RunEvent(run=run, state=state, reason=reason, at=cutoff - timedelta(minutes=20 - i))
            for i, (state, reason) in enumerate(before)
        ]
        + [
            RunEvent(run=run, state=state, reason=reason, at=now - timedelta(seconds=3 - i))
            for i, (state, reason) in enumerate(after)
        ]
    )
    LeaderboardSnapshot.objects.filter(pk=snapshot.pk).update(
        created_at=cutoff,
        published_at=cutoff,
        rows=[
            *snapshot.rows,
            {
                "run": run.pk,
                "name": "late",
                "team": "team-A",
                "state": "awaiting_labels",
                "provisional": True,
                "n_predictions": 50,
                "n_requested": 20,
                "n_verified": 0,
            },
        ],
    )
    return run


def page(user, path: str) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(path)
    assert response.status_code == 200
    return response.content.decode()


def test_participants_see_a_run_as_the_published_snapshot_left_it(api, lb_world, late):
    pa = api(lb_world.users["pa"])
    response = pa.get(f"/api/runs/{late.pk}/")
    detail = response.json()
    assert detail["state"] == "awaiting_labels" and detail["reason"] == PUBLISHED_REASON
    assert [e["state"] for e in detail["events"]] == [
        "received",
        "validating",
        "queued",
        "planning",
        "awaiting_labels",
    ]
    assert detail["finished_at"] is None
    assert detail["outcome"] is None and detail["rounds"] is None
    assert (detail["n_requested"], detail["n_verified"]) == (20, 0)
    (listed,) = [
        row for row in pa.get("/api/tasks/main/runs/").json()["results"] if row["name"] == "late"
    ]
    for text in (response.content.decode(), json.dumps(listed, ensure_ascii=False)):
        assert "±0.210" in text
        for held in HELD_TEXTS:
            assert held not in text
    # The filter sees what the participant sees, not the run's live state.
    by_state = {
        state: [r["name"] for r in pa.get(f"/api/tasks/main/runs/?state={state}").json()["results"]]
        for state in ("scored", "awaiting_labels")
    }
    assert by_state == {"scored": ["run-A"], "awaiting_labels": ["late"]}
    run_page = page(lb_world.users["pa"], f"/runs/{late.pk}/")
    runs_row = re.search(
        rf'<tr data-run="{late.pk}">.*?</tr>', page(lb_world.users["pa"], "/tasks/main/runs/"), re.S
    ).group(0)
    for html in (run_page, runs_row):
        assert "awaiting labels" in html and "±0.210" in html
        for held in HELD_TEXTS:
            assert held not in html


def test_organizers_see_the_run_live_and_participants_once_published(api, lb_world, late):
    org = api(lb_world.users["org"])
    detail = org.get(f"/api/runs/{late.pk}/").json()
    assert detail["state"] == "scored" and detail["reason"] == HELD_REASONS[-1]
    assert [e["reason"] for e in detail["events"]][-3:] == list(HELD_REASONS)
    assert (detail["outcome"], detail["rounds"], detail["n_requested"]) == ("met", 2, 30)
    assert "0.047" in page(lb_world.users["org"], f"/runs/{late.pk}/")
    assert org.post("/api/tasks/main/publish/", {}, format="json").status_code == 200
    detail = api(lb_world.users["pa"]).get(f"/api/runs/{late.pk}/").json()
    assert detail["state"] == "scored" and detail["reason"] == HELD_REASONS[-1]
    assert len(detail["events"]) == 8 and detail["finished_at"] is not None
    assert (detail["outcome"], detail["rounds"], detail["n_requested"]) == ("met", 2, 30)
    assert "0.047" in page(lb_world.users["pa"], f"/runs/{late.pk}/")


def test_a_run_submitted_during_the_hold_shows_only_its_upload(api, lb_world, late):
    """A run absent from the published snapshot: its upload events, not its planning."""
    run = Run.objects.create(
        task=lb_world.task,
        team=lb_world.teams["A"],
        name="new",
        state=Run.State.AWAITING_LABELS,
        n_requested=12,
        rounds=1,
        outcome="sample",
        reason="round 1: 12 items sent for verification (precision ±0.333 now, target ±0.05)",
    )
    RunEvent.objects.bulk_create(
        [
            RunEvent(run=run, state="received", reason="received run.tsv"),
            RunEvent(run=run, state="queued", reason="7 predictions"),
            RunEvent(run=run, state="planning", reason="planning the first round"),
            RunEvent(run=run, state="awaiting_labels", reason=run.reason),
        ]
    )
    detail = api(lb_world.users["pa"]).get(f"/api/runs/{run.pk}/").json()
    assert (detail["state"], detail["reason"]) == ("queued", "7 predictions")
    assert [e["state"] for e in detail["events"]] == ["received", "queued"]
    assert (detail["n_requested"], detail["n_verified"]) == (0, 0)
    assert "0.333" not in page(lb_world.users["pa"], f"/runs/{run.pk}/")


def test_a_passed_deadline_hides_held_progress_before_the_phase_job_records_it(api, lb_world, late):
    """The board was never held by hand; its deadline passed after snapshot 1, and the job has
    not run: participants see the run as snapshot 1 left it, as under a hold by hand."""
    task = lb_world.task
    Task.objects.filter(pk=task.pk).update(
        board_held=False, submissions_close_at=timezone.now() - timedelta(minutes=5)
    )
    pa = api(lb_world.users["pa"])
    detail = pa.get(f"/api/runs/{late.pk}/").json()
    assert (detail["state"], detail["reason"]) == ("awaiting_labels", PUBLISHED_REASON)
    assert "0.047" not in page(lb_world.users["pa"], f"/runs/{late.pk}/")
    Task.objects.filter(pk=task.pk).update(submissions_close_at=None)
    assert pa.get(f"/api/runs/{late.pk}/").json()["state"] == "scored"


# -- the new-items count -----------------------------------------------------------------------
def upload(text: str) -> io.BytesIO:
    stream = io.BytesIO(text.encode())
    stream.name = "run.tsv"
    return stream


def test_only_organizers_learn_how_many_of_a_runs_items_were_new(api, lb_world, sent_jobs):
    task, users, teams = lb_world.task, lb_world.users, lb_world.teams
    submit_and_ingest(
        task=task,
        team=teams["B"],
        user=users["pb"],
        upload=upload("shared-key\t0.5\nb-only\t0.4\n"),
        file_name="run.tsv",
    )
    run = submit_and_ingest(
        task=task,
        team=teams["A"],
        user=users["pa"],
        upload=upload("shared-key\t0.9\na-only\t0.3\n"),
        file_name="run.tsv",
    )
    assert run.n_new_items == 1  # shared-key came with team B's run
    pa = api(users["pa"])
    response = pa.get(f"/api/runs/{run.pk}/")
    assert response.json()["n_new_items"] is None
    texts = [
        response.content.decode(),
        pa.get("/api/tasks/main/runs/").content.decode(),
        page(users["pa"], f"/runs/{run.pk}/"),
        page(users["pa"], "/tasks/main/runs/"),
    ]
    for text in texts:
        assert "new item" not in text
    assert api(users["org"]).get(f"/api/runs/{run.pk}/").json()["n_new_items"] == 1
    listed = api(users["org"]).get("/api/tasks/main/runs/?team=team-A").json()["results"]
    assert {r["name"]: r["n_new_items"] for r in listed}["run"] == 1
