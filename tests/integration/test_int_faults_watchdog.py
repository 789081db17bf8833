"""Faults: work stuck past its deadline, recovered or failed by the watchdog, with a real worker.

What the product does: ``evaluation.services.watchdog`` (run by beat every
``PIPELINE_WATCHDOG_INTERVAL`` seconds) re-sends the message of a run untouched for
``PIPELINE_STUCK_SECONDS`` in ``queued``/``planning``/``estimating`` (counting ``attempts``), fails
it with a reason and refunds its quota after ``PIPELINE_MAX_ATTEMPTS``, and re-sends a task's
estimation that was requested (``estimate_pending``) but never ran. Deadlines are shortened here
(1 s instead of 600 s); no beat runs in tests, so each test triggers the watchdog itself: through
the worker (``send_task("evaluation.watchdog")``, as beat does) or in-process to read its counts.
"""

from __future__ import annotations

import numpy as np
import pytest
from celery import current_app
from django.contrib.auth.models import Group
from django.utils import timezone

from annotation.models import Judgment, VerificationRequest
from evaluation.models import PlanRound
from evaluation.services import watchdog
from leaderboard.jobs import enqueue_plan
from leaderboard.models import LeaderboardSnapshot, Run, Task
from leaderboard.selectors import quota_for
from leaderboard.services.lifecycle import transition_run

from pipeline_support import (
    annotator,
    answer_all,
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
STUCK = {"PIPELINE_STUCK_SECONDS": "1"}
FINAL = {Run.State.SCORED, Run.State.PARTIAL}
RECORD_USER_COUNT = "tests_support.record_user_count"  # tests/integration/support/worker_tasks.py


def _world(slug: str = "stuck", n_runs: int = 2) -> dict:
    rng = np.random.default_rng(5)
    base = truth_world(
        rng, n_items=N_ITEMS, p_true=0.7, reference=60, groups=12, slug=slug, target_half_width=0.1
    )
    task, truth = base.task, base.truth
    team = make_team(f"team-{slug}")
    runs = random_runs(task, team, rng, n_runs=n_runs, size=220, among=N_ITEMS)
    return {"task": task, "team": team, "truth": truth, "runs": runs, "user": annotator(task)}


def _settle(world: dict, wait_for, timeout: float = 90) -> list[Run]:
    return settle_runs(world["task"], world["truth"], world["user"], wait_for, timeout=timeout)


def _older_than(model_filter, field: str, seconds: float):
    def check():
        cutoff = timezone.now() - timezone.timedelta(seconds=seconds)
        return not model_filter().filter(**{f"{field}__gte": cutoff}).exists()

    return check


def test_runs_stuck_in_queued_and_planning_are_resent_and_complete(celery_worker_factory, wait_for):
    """A run whose message was never delivered (queued) and one whose worker died after it
    started planning (planning): the watchdog, run by the worker as beat would, re-sends both."""
    world = _world()
    task, (_queued, planning) = world["task"], world["runs"]
    transition_run(planning, Run.State.PLANNING, "planning the first round")  # then the crash
    celery_worker_factory(env=STUCK)
    stuck = lambda: Run.objects.filter(task=task)  # noqa: E731
    wait_for(
        _older_than(stuck, "state_changed_at", 1.0),
        timeout=10,
        message="the runs to be past the deadline",
    )
    assert not PlanRound.objects.filter(task=task).exists()  # nobody planned them on their own

    current_app.send_task("evaluation.watchdog")

    wait_for(
        lambda: all(r.state == Run.State.AWAITING_LABELS for r in stuck()),
        timeout=40,
        message="both runs to be planned after the watchdog re-sent them",
    )
    assert [r.attempts for r in stuck()] == [1, 1]
    final = _settle(world, wait_for)
    assert {r.state for r in final} <= FINAL, [(r.name, r.state, r.reason) for r in final]
    assert not VerificationRequest.objects.filter(task=task, state="pending").exists()
    snapshot = LeaderboardSnapshot.objects.filter(task=task).order_by("-version").first()
    assert snapshot is not None and {row["state"] for row in snapshot.rows} <= {"scored", "partial"}


def test_a_run_stuck_past_max_attempts_fails_with_a_reason_and_its_quota_back(
    celery_worker_factory, settings, wait_for
):
    """A hung job holds the task's engine lease: every attempt to plan the run finds the task
    busy. After ``PIPELINE_MAX_ATTEMPTS`` re-sends the watchdog fails the run with the reason and
    gives its quota slot back; a late message for it changes nothing."""
    settings.PIPELINE_STUCK_SECONDS = 1
    settings.PIPELINE_MAX_ATTEMPTS = 2
    world = _world(slug="hung", n_runs=1)
    task, team, (run,) = world["task"], world["team"], world["runs"]
    hung_until = timezone.now() + timezone.timedelta(hours=1)
    Task.objects.filter(pk=task.pk).update(engine_lock_token="hung", engine_lock_until=hung_until)
    worker = celery_worker_factory()
    before = quota_for(task=task, team=team)
    assert before.used_total == 1
    enqueue_plan(run.pk)
    wait_for(
        lambda: "EngineBusy" in worker.log_tail(200),
        timeout=30,
        message="the worker to find the task busy",
    )

    counts = []

    def failed():
        counts.append(watchdog())
        return Run.objects.filter(pk=run.pk, state=Run.State.FAILED).first()

    run = wait_for(failed, timeout=30, interval=0.5, message="the watchdog to fail the run")
    assert sum(c["requeued"] for c in counts) == 2 and sum(c["failed"] for c in counts) == 1
    assert run.attempts == 2 and run.quota_refunded
    assert run.reason == (
        "the pipeline did not finish queued after 3 attempts; your quota was refunded"
    )
    assert run.events.order_by("-at", "-pk").first().state == Run.State.FAILED
    after = quota_for(task=task, team=team)
    assert after.used_total == before.used_total - 1 and after.remaining == before.remaining + 1

    # The hung job goes away; a late plan message for the failed run is a no-op.
    Task.objects.filter(pk=task.pk).update(engine_lock_token="", engine_lock_until=None)
    enqueue_plan(run.pk)
    current_app.send_task(RECORD_USER_COUNT, args=["after-late-plan"])  # processed after it
    wait_for(
        lambda: Group.objects.filter(name__startswith="after-late-plan ").exists(),
        timeout=60,
        message="the worker to get past the late message",
    )
    run.refresh_from_db()
    assert run.state == Run.State.FAILED and not PlanRound.objects.filter(run=run).exists()


def test_an_estimation_requested_but_never_run_is_resent(
    celery_worker, redis_server, settings, wait_for
):
    """Answers asked for an estimation, but the message was lost with the broker's data: the
    task's ``estimate_pending`` flag says so, and the watchdog sends it again."""
    settings.PIPELINE_STUCK_SECONDS = 1
    world = _world(slug="lost-estimate")
    task = world["task"]
    for run in world["runs"]:
        enqueue_plan(run.pk)
    wait_for(
        lambda: all(r.state == Run.State.AWAITING_LABELS for r in Run.objects.filter(task=task)),
        timeout=60,
    )
    celery_worker.stop()
    answered = answer_all(task, world["truth"], world["user"])
    assert answered > 0 and redis_server.client().llen("celery") >= 1
    redis_server.flushall()  # the message is lost
    celery_worker.start()
    task.refresh_from_db()
    assert task.estimate_pending and not LeaderboardSnapshot.objects.filter(task=task).exists()
    labels_version = task.labels_version
    wait_for(
        _older_than(lambda: Task.objects.filter(pk=task.pk), "estimate_requested_at", 1.0),
        timeout=10,
    )

    done = watchdog()

    assert done["estimates"] == 1
    snapshot = wait_for(
        lambda: LeaderboardSnapshot.objects.filter(task=task).first(),
        timeout=40,
        message="the re-sent estimation's snapshot",
    )
    # It rests on every answer given while its first message was lost: the estimation
    # numbered them all as one new version of the judgment set.
    assert snapshot.labels_version == labels_version + 1
    assert (
        Judgment.objects.filter(
            request__task=task, counted=True, seq__lte=snapshot.labels_version
        ).count()
        == answered
    )
    final = _settle(world, wait_for)
    assert {r.state for r in final} <= FINAL, [(r.name, r.state, r.reason) for r in final]
