"""Faults: a worker killed with SIGKILL while it stores a planning round or a snapshot.

Real processes: a Redis server and Celery workers (``--pool=solo``, so ``kill -9`` hits the
process that runs the job). The first worker loads a fault hook (tests/integration/support/
worker_tasks.py) that stops it inside the job's write transaction, with its rows written and not
committed; the test kills it there. What the product does about it:

- the transaction dies with the process, so nothing of the killed attempt is stored;
- the message was not acknowledged (``CELERY_TASK_ACKS_LATE``): once the broker's visibility
  timeout passes, a live worker's sweep puts it back in the queue and a second worker redoes the
  job (the workers here run with ``CELERY_VISIBILITY_TIMEOUT=5`` instead of 1800 s);
- the killed job's engine lease on the task expires (``ENGINE_LOCK_SECONDS``: 3 s for the killed
  worker, 900 s by default), so the redone job can take it.

Figures (kill to redone round / snapshot) are printed: run with ``-s`` to see them.
"""

from __future__ import annotations

import json
import time
from collections import Counter

import numpy as np
import pytest
from django.db.models import Count

from annotation.models import VerificationRequest
from annotation.services import submit_judgment
from evaluation.models import Draw, PlanRound
from leaderboard.jobs import enqueue_plan
from leaderboard.models import Estimate, Item, LeaderboardSnapshot, Run, Task

from pipeline_support import (
    annotator,
    make_team,
    settle_runs,
)
from worlds import random_runs, truth_world

pytestmark = [
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(120),
]

N_ITEMS = 400
# The killed worker's lease on the task expires quickly; both workers sweep for unacknowledged
# messages of dead workers after 5 s (the product's default is 1800 s).
KILLED_ENV = {"CELERY_VISIBILITY_TIMEOUT": "5", "ENGINE_LOCK_SECONDS": "3"}
RESCUER_ENV = {"CELERY_VISIBILITY_TIMEOUT": "5"}
FINAL = {Run.State.SCORED, Run.State.PARTIAL}


def _world(n_runs: int = 2) -> dict:
    rng = np.random.default_rng(11)
    base = truth_world(
        rng,
        n_items=N_ITEMS,
        p_true=0.7,
        reference=60,
        groups=12,
        slug="faults",
        target_half_width=0.1,
    )
    task, truth = base.task, base.truth
    team = make_team("A")
    runs = random_runs(task, team, rng, n_runs=n_runs, size=220, among=N_ITEMS)
    return {"task": task, "truth": truth, "runs": runs, "user": annotator(task)}


def _marker(path):
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None


def _settle(world: dict, wait_for, timeout: float = 90) -> list[Run]:
    return settle_runs(world["task"], world["truth"], world["user"], wait_for, timeout=timeout)


def _assert_sampling_record_consistent(task: Task) -> None:
    rounds = list(PlanRound.objects.filter(task=task))
    per_round = Counter((r.run_id, r.round) for r in rounds)
    assert max(per_round.values()) == 1, per_round
    for r in rounds:
        # Each run's rounds are 1, 2, ... with no gap; each round's draws are all stored.
        assert r.round == 1 or (r.run_id, r.round - 1) in per_round
        assert Draw.objects.filter(plan_round=r).count() == r.n_items
    drawn = list(Draw.objects.filter(plan_round__task=task).values_list("item_id", flat=True))
    assert len(drawn) == len(set(drawn)), "an item was drawn twice"
    requested = list(
        VerificationRequest.objects.filter(task=task).values_list("item_id", flat=True)
    )
    assert len(requested) == len(set(requested)), "an item has two verification requests"
    assert set(requested) == set(drawn)


def _assert_snapshots_whole(task: Task) -> None:
    for snapshot in LeaderboardSnapshot.objects.filter(task=task).annotate(n=Count("estimates")):
        listed = sum(1 for row in snapshot.rows)
        assert listed > 0 and snapshot.n == 3 * listed, (snapshot.version, snapshot.n, listed)
        assert Estimate.objects.filter(snapshot=snapshot).values("run").distinct().count() == listed
    versions = list(
        LeaderboardSnapshot.objects.filter(task=task)
        .order_by("version")
        .values_list("version", flat=True)
    )
    assert versions == list(range(1, len(versions) + 1))


def _lease_free(task: Task) -> bool:
    task.refresh_from_db()
    return task.engine_lock_token == "" and task.engine_lock_until is None


def test_worker_killed_while_storing_a_round_the_round_is_redone_once(
    celery_worker_factory, tmp_path, wait_for
):
    world = _world()
    task, first, second = world["task"], *world["runs"]
    marker = tmp_path / "fault.json"
    doomed = celery_worker_factory(
        env={**KILLED_ENV, "FAULT_PAUSE_AT": "store_round", "FAULT_MARKER": str(marker)}
    )
    enqueue_plan(first.pk)  # what an upload does on commit

    paused = wait_for(lambda: _marker(marker), timeout=60, message="the worker to pause")
    assert paused["point"] == "store_round" and paused["pid"] == doomed.pid
    assert paused["run"] == first.pk and paused["round"] == 1 and paused["items"] > 0
    doomed.kill()
    killed_at = time.monotonic()

    # Nothing of the killed attempt is stored: no round, no draw, no request for annotators.
    assert not PlanRound.objects.filter(task=task).exists()
    assert not Draw.objects.filter(plan_round__task=task).exists()
    assert not VerificationRequest.objects.filter(task=task).exists()
    first.refresh_from_db()
    assert first.state == Run.State.PLANNING  # committed before the round's transaction
    assert not _lease_free(task)  # the dead job's lease is still there, until it expires

    rescuer = celery_worker_factory(env=RESCUER_ENV)
    redone = wait_for(
        lambda: PlanRound.objects.filter(run=first, round=1).first(),
        timeout=60,
        message="the round to be redone by the second worker",
    )
    recovered = time.monotonic() - killed_at
    # The same seed and the same sampling record: the redone round draws the same number of items.
    assert redone.n_items == paused["items"]
    assert "evaluation.plan_run[" in rescuer.log_tail(200)
    first.refresh_from_db()
    assert first.state == Run.State.AWAITING_LABELS and first.rounds == 1
    assert first.n_requested == redone.n_items
    _assert_sampling_record_consistent(task)

    enqueue_plan(second.pk)
    final = _settle(world, wait_for)
    assert {r.state for r in final} <= FINAL, [(r.name, r.state, r.reason) for r in final]
    _assert_sampling_record_consistent(task)
    _assert_snapshots_whole(task)
    assert not VerificationRequest.objects.filter(task=task, state="pending").exists()
    assert wait_for(lambda: _lease_free(task), timeout=10, message="the lease to be released")
    print(
        f"\n[faults] kill -9 in planning: round redone {recovered:.1f}s after the kill "
        f"(visibility timeout 5 s, killed lease 3 s); rounds per run "
        f"{[r.rounds for r in final]}"
    )


def test_worker_killed_while_storing_a_snapshot_the_estimation_is_redone(
    celery_worker_factory, tmp_path, wait_for
):
    world = _world()
    task, runs = world["task"], world["runs"]
    marker = tmp_path / "fault.json"
    doomed = celery_worker_factory(
        env={**KILLED_ENV, "FAULT_PAUSE_AT": "estimate_store", "FAULT_MARKER": str(marker)}
    )
    for run in runs:
        enqueue_plan(run.pk)
    wait_for(
        lambda: all(r.state == Run.State.AWAITING_LABELS for r in Run.objects.filter(task=task)),
        timeout=60,
        message="both runs to be planned",
    )
    # One answer decides an item and asks for an estimation. (Only one: while the worker is
    # stopped inside its write transaction it holds the task row, and on PostgreSQL the next
    # answer that decides an item waits for that lock until the worker dies.)
    request = VerificationRequest.objects.filter(task=task, state="pending").first()
    truth = world["truth"][request.item.index]
    submit_judgment(
        request_id=request.pk, annotator=world["user"], answer="correct" if truth else "incorrect"
    )

    paused = wait_for(lambda: _marker(marker), timeout=60, message="the worker to pause")
    assert paused["point"] == "estimate_store" and paused["pid"] == doomed.pid
    assert paused["task"] == task.pk and paused["version"] == 1
    assert paused["estimates"] == 3 * len(runs)  # written, not committed
    doomed.kill()
    killed_at = time.monotonic()

    # No half-written snapshot: neither the snapshot nor any of its estimates, and no run moved.
    assert not LeaderboardSnapshot.objects.filter(task=task).exists()
    assert not Estimate.objects.filter(run__task=task).exists()
    assert {r.state for r in Run.objects.filter(task=task)} == {Run.State.AWAITING_LABELS}

    rescuer = celery_worker_factory(env=RESCUER_ENV)
    first = wait_for(
        lambda: LeaderboardSnapshot.objects.filter(task=task, version=1).first(),
        timeout=60,
        message="the estimation to be redone by the second worker",
    )
    recovered = time.monotonic() - killed_at
    # It rests on every answer given before the kill.
    assert first.labels_version == Task.objects.get(pk=task.pk).labels_version
    assert first.n_labels == Item.objects.filter(task=task, verified_at__isnull=False).count()
    assert Estimate.objects.filter(snapshot=first).count() == 3 * len(runs)
    assert "evaluation.estimate_task[" in rescuer.log_tail(400)

    final = _settle(world, wait_for)
    assert {r.state for r in final} <= FINAL, [(r.name, r.state, r.reason) for r in final]
    _assert_snapshots_whole(task)
    _assert_sampling_record_consistent(task)
    latest = wait_for(
        lambda: LeaderboardSnapshot.objects.filter(task=task).order_by("-version").first(),
        timeout=10,
    )
    assert {row["state"] for row in latest.rows} <= {"scored", "partial"}
    assert wait_for(lambda: _lease_free(task), timeout=10, message="the lease to be released")
    print(
        f"\n[faults] kill -9 in estimation: snapshot redone {recovered:.1f}s after the kill "
        f"(visibility timeout 5 s, killed lease 3 s); {latest.version} snapshots in all"
    )
