"""A job that finds its task's engine lease taken waits for it a little
(``ENGINE_LOCK_WAIT_SECONDS``) instead of going back to Celery's back-off at once, which sleeps
whole seconds against plan jobs of a fraction of one (docs/BENCHMARKS.md, "2 workers on one
task"); past the wait it is busy as before, and writes nothing."""

from __future__ import annotations

import time

import numpy as np
import pytest

from evaluation.kinds.open_world.state import forget_cached_states
from evaluation.locks import EngineBusy, engine_lock
from evaluation.models import PlanRound
from evaluation.services import estimate_task, plan_run
from leaderboard.models import Run

from pipeline_support import add_items, add_run, make_task, make_team

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(driver):
    forget_cached_states()
    rng = np.random.default_rng(3)
    task = make_task(target_half_width=0.1)
    add_items(task, 2000)
    items = rng.choice(2000, size=800, replace=False)
    yield add_run(task, make_team("A"), items, rng.random(items.size))
    forget_cached_states()


def test_a_plan_waits_for_a_lease_that_ends_within_the_wait(run, settings):
    settings.ENGINE_LOCK_WAIT_SECONDS = 10
    # Another job's lease, ending in 0.3 s (a job killed mid-plan: its lease expires).
    with engine_lock(run.task_id, seconds=0.3):
        started = time.monotonic()
        assert plan_run(run.pk) == "sample"
    assert 0.25 <= time.monotonic() - started < 5
    assert PlanRound.objects.filter(run=run).count() == 1


def test_an_estimation_waits_for_a_lease_that_ends_within_the_wait(run, settings):
    settings.ENGINE_LOCK_WAIT_SECONDS = 10
    with engine_lock(run.task_id, seconds=0.3):
        estimate_task(run.task_id)  # does not raise EngineBusy
    assert not type(run.task).objects.get(pk=run.task_id).estimate_pending


def test_past_the_wait_a_plan_is_busy_and_writes_nothing(run, settings):
    settings.ENGINE_LOCK_WAIT_SECONDS = 0.3
    with engine_lock(run.task_id):
        started = time.monotonic()
        with pytest.raises(EngineBusy):
            plan_run(run.pk)
        waited = time.monotonic() - started
    assert 0.2 <= waited < 3
    run.refresh_from_db()
    assert run.state == Run.State.QUEUED and not PlanRound.objects.filter(run=run).exists()


def test_without_a_wait_a_held_lease_is_busy_at_once(run):
    with engine_lock(run.task_id):
        started = time.monotonic()
        with pytest.raises(EngineBusy), engine_lock(run.task_id):
            pass
    assert time.monotonic() - started < 0.2
