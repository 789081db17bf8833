"""What a one-key run tells its team (issue 29, N8), exactly, per quota slot.

Labels are re-used across runs by design (docs/STATISTICS.md): a run whose every prediction is
already labelled needs no new judgment and is estimated at once, while a run with an
unlabelled prediction waits for the annotators. So a run of one key shows by its state whether
that key was labelled: one bit per quota slot, read at once. Its estimate, once published,
carries the label itself (docs/SECURITY.md §7: estimates are functions of the labels). While the
board is held it tells nothing: its team sees it as the published board left it. docs/SECURITY.md
(N8) says why this is accepted rather than hidden; these tests pin down what is learned, so that
a change that leaks more (the label before it is published, anything while the board is held)
fails here.
"""

from __future__ import annotations

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from annotation.services import request_verification, submit_judgment
from leaderboard.models import LeaderboardSnapshot, Task
from leaderboard.services.board import hold_board
from leaderboard.services.teams import create_team

from pipeline_support import annotator, open_unchecked
from worlds import truth_world

pytestmark = pytest.mark.django_db(transaction=True)

# What the team reads of a run that does not depend on the key it names.
IDENTITY = {"id", "name", "url", "sha256", "file_bytes", "created_at", "submitted_at"}
CLOCK = {"state_changed_at", "finished_at"}


@pytest.fixture
def world(driver):
    rng = np.random.default_rng(29)
    base = truth_world(
        rng,
        n_items=40,
        p_true=0.5,
        reference=10,
        groups=5,
        slug="probe",
        judgments_per_item=1,
        gold_rate=0.0,
        target_half_width=0.3,
        max_runs_per_team_per_day=10,
        seed=29,
    )
    task = open_unchecked(base.task)
    # Earlier runs had items 10-19 verified: the labels every later run re-uses.
    user = annotator(task)
    request_verification(task=task, item_ids=[it.pk for it in base.items[10:20]])
    for it in base.items[10:20]:
        answer = "correct" if base.truth[it.index] else "incorrect"
        submit_judgment(request_id=it.verification_request.pk, annotator=user, answer=answer)
    driver.drain()
    mallory = get_user_model().objects.create_user("mallory")
    create_team(name="Prober", members=[mallory])
    base.client = APIClient()
    base.client.force_authenticate(mallory)
    base.true_key = next(i for i in range(10, 20) if base.truth[i])
    base.false_key = next(i for i in range(10, 20) if not base.truth[i])
    base.new_key = 25
    return base


def probe(world, driver, index: int) -> dict:
    """Upload a run of the key ``k<index>`` alone, let the workers do their part; returns what
    the team reads of the run then (its identity and clock times left out)."""
    upload = SimpleUploadedFile("run.tsv", f"k{index}\t0.9\n".encode())
    sent = world.client.post(
        "/api/tasks/probe/runs/", {"file": upload, "name": f"probe-{index}"}, format="multipart"
    )
    assert sent.status_code == 202, sent.content
    driver.drain()
    run = world.client.get(sent.json()["url"]).json()
    run["events"] = [{k: v for k, v in e.items() if k != "at"} for e in run["events"]]
    return {k: v for k, v in run.items() if k not in IDENTITY | CLOCK}


def slots_left(world) -> int:
    (team,) = world.client.get("/api/tasks/probe/quota/").json()["teams"]
    return team["remaining"]


def published_precision(task: Task, name: str) -> float | None:
    snapshot = (
        LeaderboardSnapshot.objects.filter(task=task, published=True).order_by("-version").first()
    )
    rows = snapshot.rows if snapshot else []
    row = next((r for r in rows if r.get("name") == name), None)
    return row["precision"]["value"] if row else None


def test_a_one_key_run_tells_at_once_whether_its_key_is_labelled(world, driver):
    before = slots_left(world)
    on_true = probe(world, driver, world.true_key)
    on_false = probe(world, driver, world.false_key)
    on_new = probe(world, driver, world.new_key)
    assert slots_left(world) == before - 3  # one quota slot per probe
    # The bit: labelled keys are scored at once, the unlabelled one waits for the annotators.
    assert (on_true["state"], on_true["n_verified"]) == ("scored", 1)
    assert (on_false["state"], on_false["n_verified"]) == ("scored", 1)
    assert (on_new["state"], on_new["n_verified"], on_new["n_requested"]) == (
        "awaiting_labels",
        0,
        1,
    )
    # The label, as soon as the run is estimated: its precision on the published board (§7),
    # and the width of its interval in its own reason, are the key's label.
    assert published_precision(world.task, f"probe-{world.true_key}") > 0.9
    assert published_precision(world.task, f"probe-{world.false_key}") < 0.1
    assert published_precision(world.task, f"probe-{world.new_key}") is None
    # Nothing else: the two labelled probes read alike but for their estimate.
    estimate = {"state_text", "reason", "events"}
    assert {k: v for k, v in on_true.items() if k not in estimate} == {
        k: v for k, v in on_false.items() if k not in estimate
    }


def test_while_the_board_is_held_a_one_key_run_tells_nothing(world, driver):
    hold_board(task=world.task)
    seen = [probe(world, driver, index) for index in (world.true_key, world.false_key)]
    seen.append(probe(world, driver, world.new_key))
    # Each run is seen as the published board left it: received, validated, queued; never
    # planned, so neither the bit nor the label, whichever key it names.
    assert seen[0] == seen[1] == seen[2]
    assert seen[0]["state"] == "queued" and seen[0]["n_verified"] == 0
    for index in (world.true_key, world.false_key, world.new_key):
        assert published_precision(world.task, f"probe-{index}") is None
