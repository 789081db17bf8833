"""A closed-pool task through the whole pipeline with a real Redis broker and Celery worker.

An organizer creates a closed-pool task (precision, recall, F1 and MCC) and uploads a pool of
400 items with payloads, 12 of them positive, 40 gold items among them; three teams submit
runs scoring every item (the worker validates them); three simulated annotators answer what
the queue serves them (further looks at every "yes" included), through the
annotation service, as people would; the worker plans shared rounds and re-estimates until every
run is final. The board then shows every measure with an interval, and the intervals cover the
runs' true values.
"""

from __future__ import annotations

import io
import random

import numpy as np
import pytest
from django.urls import reverse

from annotation.models import VerificationRequest
from annotation.services import load_gold
from evaluation.models import PlanRound, PoolSamplingRecord
from leaderboard.models import Estimate, LeaderboardSnapshot, Run
from leaderboard.services.runs import submit_run
from leaderboard.services.teams import create_team

from pipeline_support import annotator, answer_what_is_served
from pool_pipeline import RUNS, pool_run_text, pool_world

pytestmark = [
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(300),
]

MEASURES = ("precision", "recall", "f1", "mcc")


def test_a_closed_pool_task_is_planned_verified_and_estimated(celery_worker, wait_for, client):
    from django.contrib.auth import get_user_model

    world = pool_world(target_half_width=0.2, measures=MEASURES, submit=False, gold_rate=0.2)
    task = world.task
    # Gold items measure the annotator, whose answers the estimates correct for error: without
    # them nothing says how far to trust the answers, and the intervals keep that doubt.
    truth = world.truth
    gold = [*np.flatnonzero(truth)[:4], *np.flatnonzero(~truth)[:36]]
    load_gold(task=task, lines=[f"k{i}\t{'correct' if truth[i] else 'incorrect'}" for i in gold])
    for name in RUNS:
        user = get_user_model().objects.create_user(f"member-{name}")
        team = create_team(name=f"team-{name}", members=[user])
        upload = io.BytesIO(pool_run_text(world.systems[name]).encode())
        run = submit_run(
            task=task, team=team, user=user, upload=upload, file_name=f"{name}.tsv", name=name
        )
        assert run.state == "received"  # the worker validates it
    positives = {f"k{i}" for i, t in enumerate(world.truth) if t}
    people = [(world.annotator, 1.0), *((annotator(task, f"ann-{k}"), 1.0) for k in range(2))]
    rng = random.Random(15)

    def settled():
        states = set(Run.objects.filter(task=task).values_list("state", flat=True))
        if states <= {"scored", "partial", "failed"}:
            return True
        answer_what_is_served(task, people, positives, rng)
        return False

    wait_for(settled, timeout=240, interval=0.3, message="every run to reach a final state")
    runs = list(Run.objects.filter(task=task).order_by("id"))
    assert [r.state for r in runs] == ["scored"] * 3, [(r.state, r.reason) for r in runs]
    for run in runs:
        events = list(run.events.values_list("state", flat=True))
        assert events[:3] == ["received", "validating", "queued"]
        assert events[-2:] == ["estimating", "scored"]
    rounds = PlanRound.objects.filter(task=task).count()
    assert rounds >= 2 and PoolSamplingRecord.objects.get(task=task).rounds == rounds
    assert not VerificationRequest.objects.filter(task=task, state="pending").exists()

    snapshot = wait_for(
        lambda: (
            LeaderboardSnapshot.objects.filter(task=task, rows__0__state="scored")
            .order_by("-version")
            .first()
        ),
        message="a snapshot of the scored runs",
    )
    by_run = {row["run"]: row for row in snapshot.rows}
    for run in runs:
        row = by_run[run.pk]
        for m in MEASURES:
            cell = row[m]
            truth = world.true_value(run, m)
            # Monte-Carlo: 12 intervals at 95% on one fixed seed, checked against the truth.
            assert cell["low"] <= truth <= cell["high"], (run.name, m, cell, truth)
            assert (cell["high"] - cell["low"]) / 2 <= 0.2 + 1e-9
    assert Estimate.objects.filter(snapshot=snapshot).count() == 3 * len(MEASURES)
    html = client.get(reverse("task_board", args=[task.slug]) + "?sort=mcc").content.decode()
    assert 'data-metric="mcc"' in html and html.count('class="run-row') == 3
