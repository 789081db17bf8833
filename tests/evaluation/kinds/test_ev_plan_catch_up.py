"""A plan job's state loaded before the engine lease, brought up to date under it (``catch_up``).

Two workers on one task load in parallel; the one that takes the lease second plans on a state
that misses the round the first one stored. Caught up, it must be the state a load under the
lease gives, bit for bit, and the round planned on it the round a load under the lease plans.
"""

from __future__ import annotations

import numpy as np
import pytest
from django.db import transaction

from evaluation.core.designs import coordinated
from evaluation.kinds.open_world import state as engine_state
from evaluation.kinds.open_world.planning import plan_locked, prepare_plan
from evaluation.kinds.open_world.state import catch_up, forget_cached_states, load_task_state
from evaluation.locks import engine_lock
from evaluation.models import Draw, PlanRound
from evaluation.services import plan_run
from leaderboard.models import Run, Task

from pipeline_support import (
    PipelineDriver,
    add_items,
    add_run,
    annotator,
    answer_all,
    make_task,
    make_team,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_state_cache")]


def _task_with_runs(monkeypatch, n_runs=3, seed=5):
    rng = np.random.default_rng(seed)
    task = make_task(target_half_width=0.1)
    add_items(task, 3000)
    PipelineDriver(monkeypatch)  # messages the plans send are collected, not run
    runs = []
    for j in range(n_runs):
        items = rng.choice(3000, size=1200, replace=False)
        runs.append(add_run(task, make_team(f"T{j}"), items, rng.random(items.size), name=f"r{j}"))
    return task, runs


def _fresh(task):
    forget_cached_states()
    return load_task_state(Task.objects.get(pk=task.pk))


def _assert_same_record(a, b):
    ra, rb = a.record(), b.record()
    assert np.array_equal(ra.inclusion, rb.inclusion)
    assert np.array_equal(ra.requested, rb.requested)
    assert ra.rounds == rb.rounds
    assert np.array_equal(ra.asked, rb.asked) and ra.judgments_asked == rb.judgments_asked
    assert a.round_runs == b.round_runs and a.round_keys == b.round_keys


def _stored_round(run):
    rnd = PlanRound.objects.get(run=run, round=1)
    draws = sorted(
        Draw.objects.filter(plan_round=rnd).values_list("item__index", "inclusion"),
    )
    return (rnd.levels, rnd.fraction, rnd.seed, rnd.n_items, rnd.labels_version, draws)


def _plan_with(run, prepared):
    run = Run.objects.select_related("task").get(pk=run.pk)
    with engine_lock(run.task_id) as token:
        return plan_locked(run, token, prepared)


def test_a_snapshot_caught_up_equals_a_load_under_the_lease(monkeypatch):
    task, runs = _task_with_runs(monkeypatch)
    assert plan_run(runs[0].pk) == "sample"
    snapshot = prepare_plan(Run.objects.select_related("task").get(pk=runs[1].pk))
    stale = len(snapshot.rounds)
    # Another worker plans a run meanwhile: the record moves on.
    assert plan_run(runs[2].pk) == "sample"
    caught = catch_up(snapshot)
    assert caught is snapshot  # only rounds were added: replayed on it, not loaded again
    assert len(caught.rounds) == stale + 1
    _assert_same_record(caught, _fresh(task))


def test_a_round_planned_on_a_caught_up_snapshot_is_the_round_a_load_plans(monkeypatch):
    task, runs = _task_with_runs(monkeypatch)
    assert plan_run(runs[0].pk) == "sample"
    # Answers, so that the label view the snapshot fits before the lease is not a trivial one.
    truth = {i: i % 3 != 0 for i in range(3000)}
    assert answer_all(task, truth, annotator(task)) > 0
    checkpoint = transaction.savepoint()
    snapshot = prepare_plan(Run.objects.select_related("task").get(pk=runs[1].pk))
    assert plan_run(runs[2].pk) == "sample"
    assert _plan_with(runs[1], snapshot) == "sample"
    on_snapshot = _stored_round(runs[1])
    transaction.savepoint_rollback(checkpoint)
    forget_cached_states()
    # The same two plans, the second loading its state under the lease.
    assert plan_run(runs[2].pk) == "sample"
    assert _plan_with(runs[1], None) == "sample"
    assert _stored_round(runs[1]) == on_snapshot
    assert on_snapshot[3] > 0
    # And the record replays the same from the database.
    forget_cached_states()
    replayed = load_task_state(Task.objects.get(pk=task.pk))
    assert replayed.record().rounds[replayed.run_index[runs[1].pk]] == 1


def test_a_run_added_or_withdrawn_since_the_snapshot_loads_the_task_again(monkeypatch):
    task, runs = _task_with_runs(monkeypatch, n_runs=2)
    snapshot = prepare_plan(Run.objects.select_related("task").get(pk=runs[0].pk))
    late = add_run(task, make_team("late"), np.arange(100, 900), name="late")
    caught = catch_up(snapshot)
    assert caught is not snapshot and late.pk in caught.run_index
    snapshot = prepare_plan(Run.objects.select_related("task").get(pk=runs[0].pk))
    Run.objects.filter(pk=late.pk).update(state=Run.State.WITHDRAWN)
    caught = catch_up(snapshot)
    assert caught is not snapshot and caught.run_index[late.pk] in caught.state.withdrawn


def test_a_snapshot_whose_rounds_vanished_loads_the_task_again(monkeypatch):
    task, runs = _task_with_runs(monkeypatch, n_runs=2)
    assert plan_run(runs[0].pk) == "sample"
    snapshot = prepare_plan(Run.objects.select_related("task").get(pk=runs[1].pk))
    PlanRound.objects.filter(task=task).delete()
    engine_state.forget_cached_states()
    caught = catch_up(snapshot)
    assert caught is not snapshot and caught.rounds == []


def test_the_label_view_is_fitted_before_the_lease(monkeypatch):
    task, runs = _task_with_runs(monkeypatch)
    assert plan_run(runs[0].pk) == "sample"
    assert answer_all(task, {i: i % 3 != 0 for i in range(3000)}, annotator(task)) > 0
    snapshot = prepare_plan(Run.objects.select_related("task").get(pk=runs[1].pk))
    assert plan_run(runs[2].pk) == "sample"
    fits = []
    fit = coordinated.item_labels
    monkeypatch.setattr(coordinated, "item_labels", lambda *a, **k: fits.append(1) or fit(*a, **k))
    assert _plan_with(runs[1], snapshot) == "sample"
    assert fits == []  # under the lease: the snapshot's fit, kept through the catch-up
