"""The whole pipeline with a real Redis broker and a real Celery worker process (no eager mode).

An organizer creates a task and uploads a reference sample; two teams upload three febrl-slice
runs; the worker plans; the test answers the queue with the truth, as annotators would; the worker
re-estimates and plans again until every run is scored. Then every stored draw and the final
estimates are checked against the engine replayed independently (tests/support/engine_audit.py).
Runs on SQLite in the first pass of `make test` and on PostgreSQL in the second.
"""

import io
import random
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from annotation.models import VerificationRequest
from annotation.services import submit_judgment
from leaderboard.models import LeaderboardSnapshot, Run
from leaderboard.services.reference import upload_reference
from leaderboard.services.runs import submit_run
from leaderboard.services.tasks import create_task
from leaderboard.services.teams import create_team

from engine_audit import audit_task
from pipeline_support import open_unchecked

pytestmark = [
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(300),
]

SLICE = Path(__file__).resolve().parents[1] / "data" / "febrl4_slice"
SYSTEMS = ("ecm_dob.tsv", "ecm_given.tsv", "ecm_postcode.tsv")


def _truth() -> set[str]:
    return {line.strip() for line in (SLICE / "truth.tsv").read_text().splitlines() if line}


def _reference_file(truth: set[str], size: int = 150) -> io.BytesIO:
    keys = random.Random(4).sample(sorted(truth), size)
    # Group = the left record: pairs of one source record were annotated together.
    lines = [f"{k}\t{k.split('|')[0]}" for k in keys]
    return io.BytesIO(("\n".join(lines) + "\n").encode())


def _answer_pending(task, truth, annotator) -> int:
    n = 0
    for req in VerificationRequest.objects.filter(task=task, state="pending").select_related(
        "item"
    ):
        answer = "correct" if req.item.key in truth else "incorrect"
        submit_judgment(request_id=req.pk, annotator=annotator, answer=answer)
        n += 1
    return n


def test_three_runs_are_planned_verified_and_scored(celery_worker, wait_for):
    users = get_user_model().objects
    organizer = users.create_user("org", password="x")
    alice, bob = users.create_user("alice"), users.create_user("bob")
    annotator = users.create_user("ann")
    task = open_unchecked(
        create_task(
            slug="febrl", title="Febrl slice", organizers=[organizer], target_half_width=0.05
        )
    )
    task.annotators.add(annotator)
    truth = _truth()
    assert upload_reference(task=task, user=organizer, upload=_reference_file(truth)) == 150
    teams = [create_team(name="A", members=[alice]), create_team(name="B", members=[bob])]
    runs = []
    for k, name in enumerate(SYSTEMS):
        team, user = (teams[0], alice) if k < 2 else (teams[1], bob)
        with open(SLICE / "systems" / name, "rb") as fh:
            runs.append(
                submit_run(
                    task=task,
                    team=team,
                    user=user,
                    upload=fh,
                    file_name=name,
                    name=name.removesuffix(".tsv"),
                )
            )
    assert all(r.state == "received" for r in runs)  # the worker validates them

    def settled():
        states = set(Run.objects.filter(task=task).values_list("state", flat=True))
        if states <= {"scored", "partial", "failed"}:
            return True
        _answer_pending(task, truth, annotator)
        return False

    wait_for(settled, timeout=240, interval=0.3, message="every run to reach a final state")
    final = list(Run.objects.filter(task=task).order_by("id"))
    assert [r.state for r in final] == ["scored"] * 3, [(r.state, r.reason) for r in final]
    for run in final:
        assert run.n_requested > 0 and run.n_verified == run.n_requested
        events = list(run.events.values_list("state", flat=True))
        assert events[:3] == ["received", "validating", "queued"]
        assert run.upload == "" and run.n_predictions > 0
        assert events[-4:] == ["awaiting_labels", "planning", "estimating", "scored"]
        assert events.index("queued") < events.index("planning")
    snapshot = wait_for(
        lambda: LeaderboardSnapshot.objects.filter(task=task).first(), message="a snapshot"
    )
    assert {row["state"] for row in snapshot.rows} == {"scored"}
    assert not VerificationRequest.objects.filter(task=task, state="pending").exists()
    audit = audit_task(task)
    assert audit["rounds"] >= 3 and audit["estimates"] == 9
    # Precision of each run rests on its verified items and meets the target.
    for row in snapshot.rows:
        p = row["precision"]
        assert p["low"] <= p["value"] <= p["high"] and (p["high"] - p["low"]) / 2 <= 0.05
