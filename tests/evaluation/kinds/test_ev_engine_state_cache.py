"""The per-process cache of a task's engine state: a cached load equals a fresh one, always.

Every check compares ``load_task_state`` with the cache against the same call with the cache
emptied first, after each kind of change the pipeline makes: new runs, new rounds (draws and
further looks), new judgments and gold answers, an undone answer, new items and a new reference
sample; and one that does not extend the cache (a deleted round).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from annotation.models import GoldAnswer, Judgment
from annotation.services import load_gold, undo_answer
from evaluation.kinds.open_world import state as engine_state
from evaluation.kinds.open_world.state import forget_cached_states, load_task_state
from evaluation.models import Look, PlanRound
from leaderboard.models import Item, ReferenceItem, Task

from pipeline_support import (
    PipelineDriver,
    add_items,
    add_run,
    annotator,
    answer_all,
    answer_what_is_served,
    make_task,
    make_team,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_state_cache")]


def _fresh(task):
    saved = dict(engine_state._cache)
    forget_cached_states()
    try:
        return load_task_state(Task.objects.get(pk=task.pk))
    finally:
        engine_state._cache.clear()
        engine_state._cache.update(saved)


def _assert_same(task):
    cached = load_task_state(Task.objects.get(pk=task.pk))
    fresh = _fresh(task)
    a, b = cached.record(), fresh.record()
    assert np.array_equal(a.inclusion, b.inclusion)
    assert np.array_equal(a.requested, b.requested)
    assert a.rounds == b.rounds
    assert np.array_equal(a.asked, b.asked) and a.judgments_asked == b.judgments_asked
    assert np.array_equal(a.cell_band, b.cell_band) and a.look_patterns == b.look_patterns
    assert np.array_equal(cached.state.labels, fresh.state.labels)
    for name in ("items", "annotators", "says_correct"):
        assert np.array_equal(
            getattr(cached.state.judgments, name), getattr(fresh.state.judgments, name)
        )
    assert np.array_equal(cached.state.gold.items, fresh.state.gold.items)
    assert np.array_equal(cached.state.gold.answers, fresh.state.gold.answers)
    assert np.array_equal(cached.state.reference.items, fresh.state.reference.items)
    assert [r.pk for r in cached.runs] == [r.pk for r in fresh.runs]
    assert cached.round_runs == fresh.round_runs
    assert cached.design.estimate(cached.state) == fresh.design.estimate(fresh.state)
    return cached


def _task_with_runs(monkeypatch, n_runs=2, seed=1):
    rng = np.random.default_rng(seed)
    task = make_task(target_half_width=0.1)
    add_items(task, 3000)
    truth = {i: bool(rng.random() < 0.6) for i in range(3000)}
    team = make_team("A")
    driver = PipelineDriver(monkeypatch)
    for j in range(n_runs):
        items = rng.choice(3000, size=1200, replace=False)
        add_run(task, team, items, rng.random(items.size), name=f"r{j}")
    return task, truth, driver


def test_cached_loads_follow_rounds_labels_runs_items_and_reference(monkeypatch):
    task, truth, driver = _task_with_runs(monkeypatch)
    user = annotator(task)
    for run_pk in task.runs.values_list("pk", flat=True):
        driver.sent.append(("evaluation.plan_run", [run_pk]))
    driver.drain()
    _assert_same(task)
    assert task.pk in engine_state._cache
    answer_all(task, truth, user)
    _assert_same(task)
    driver.drain()
    _assert_same(task)
    # A new run on new items: the cache adds the run and grows the item count.
    new_items = add_items(task, 500)
    truth.update({it.index: True for it in new_items})
    late = add_run(task, make_team("B"), np.arange(2500, 3500), name="late")
    driver.sent.append(("evaluation.plan_run", [late.pk]))
    driver.drain()
    cached = _assert_same(task)
    assert cached.state.n_items == 3500 and cached.state.n_runs == 3
    ReferenceItem.objects.bulk_create(
        [ReferenceItem(task=task, item=it) for it in Item.objects.filter(task=task)[:40]]
    )
    _assert_same(task)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)  # answers enqueue the estimation when they commit
def test_cached_loads_follow_judgments_gold_answers_looks_and_undos(monkeypatch, settings):
    settings.ANNOTATION_UNDO_SECONDS = 3600
    rng = np.random.default_rng(5)
    task = make_task(target_half_width=0.08, gold_rate=0.1)
    add_items(task, 3000)
    truth = {i: bool(rng.random() < 0.6) for i in range(3000)}
    driver = PipelineDriver(monkeypatch)
    # Nearly all correct: a single "incorrect" there is doubtful and gets a further look.
    good = np.array([i for i in range(2950) if truth[i]])
    bad = np.array([i for i in range(2950) if not truth[i]])
    for j, team in enumerate((make_team("A"), make_team("B"))):
        items = np.concatenate(
            [rng.choice(good, 570, replace=False), rng.choice(bad, 30, replace=False)]
        )
        scores = np.where(np.isin(items, good), 0.5, 0.0) + 0.5 * rng.random(items.size)
        add_run(task, team, items, scores, name=f"r{j}")
    load_gold(
        task=task,
        lines=[f"k{i}\t{'correct' if truth[i] else 'incorrect'}" for i in range(2950, 3000)],
    )
    people = [
        (annotator(task, name), accuracy)
        for name, accuracy in (("a", 0.97), ("b", 0.9), ("c", 0.8))
    ]
    keys = {f"k{i}" for i, t in truth.items() if t}
    answers = random.Random(2)
    for run_pk in task.runs.values_list("pk", flat=True):
        driver.sent.append(("evaluation.plan_run", [run_pk]))
    for _ in range(12):
        driver.drain()
        _assert_same(task)
        if Look.objects.filter(plan_round__task=task).exists():
            break
        answer_what_is_served(task, people, keys, answers)
        _assert_same(task)
    else:
        raise AssertionError("the planner asked no further look")
    answer_what_is_served(task, people, keys, answers)
    _assert_same(task)
    user = people[0][0]
    last = max(
        [
            *Judgment.objects.filter(annotator=user, withdrawn_at=None),
            *GoldAnswer.objects.filter(annotator=user, withdrawn_at=None),
        ],
        key=lambda a: (a.created_at, a.pk),
    )
    undo_answer(annotator=user, client_id=last.client_id)
    _assert_same(task)
    driver.drain()
    _assert_same(task)


def test_a_job_cannot_change_the_cached_state(monkeypatch):
    task, _, _ = _task_with_runs(monkeypatch)
    loaded = load_task_state(task)
    plan = loaded.design.plan(loaded.state, 0, rng=np.random.default_rng(0))
    assert plan.items.size
    loaded.state.add_judgments(
        plan.items, np.zeros(plan.items.size, np.int64), np.ones(plan.items.size, bool)
    )
    again = load_task_state(task)
    assert not again.record().requested.any() and not again.record().asked.any()
    assert again.state.judgments.size == 0 and not again.state.verified.any()


def test_rounds_that_do_not_extend_the_cache_rebuild_it(monkeypatch):
    task, _, driver = _task_with_runs(monkeypatch)
    for run_pk in task.runs.values_list("pk", flat=True):
        driver.sent.append(("evaluation.plan_run", [run_pk]))
    driver.drain()
    load_task_state(task)
    PlanRound.objects.filter(
        pk=PlanRound.objects.filter(task=task).order_by("id").first().pk
    ).delete()
    _assert_same(task)


def test_the_cache_keeps_the_most_recent_tasks_within_its_memory_budget(monkeypatch, settings):
    first, _, _ = _task_with_runs(monkeypatch)
    second = make_task(slug="second")
    add_items(second, 10)
    add_run(second, make_team("C"), np.arange(5))
    load_task_state(first)
    load_task_state(second)
    assert list(engine_state._cache) == [first.pk, second.pk]  # both fit in 64 MiB
    size = engine_state._nbytes(engine_state._cache[first.pk])
    assert size > 3000 * 2 + 2 * 1200 * 16  # labels, pool and both runs' arrays at least
    settings.ENGINE_STATE_CACHE_MB = (size - 1) / 2**20
    forget_cached_states()
    load_task_state(first)
    assert list(engine_state._cache) == [first.pk]  # over budget alone, but in use: kept
    load_task_state(second)
    assert list(engine_state._cache) == [second.pk]  # the least recently used went
    settings.ENGINE_STATE_CACHE_MB = 0
    forget_cached_states()
    load_task_state(first)
    assert not engine_state._cache


def test_gold_items_loaded_while_the_state_loads_wait_for_the_next_load(monkeypatch):
    # A job read the item count; gold items on items added since committed before it read the
    # gold: the load failed ("item ids must lie in [0, n)") and the run being planned with it.
    task = make_task()
    add_items(task, 10)
    add_run(task, make_team("A"), np.arange(10), np.linspace(0, 1, 10), "r")
    real = engine_state.working_annotators

    def gold_arrives(*, task):
        add_items(task, 5)  # items 10..14, e.g. of a run uploaded meanwhile
        load_gold(task=task, lines=["k12\tcorrect", "k3\tincorrect"])
        return real(task=task)

    monkeypatch.setattr(engine_state, "working_annotators", gold_arrives)
    loaded = load_task_state(Task.objects.get(pk=task.pk))
    assert loaded.state.n_items == 10
    assert loaded.state.gold.items.tolist() == [3]
    monkeypatch.setattr(engine_state, "working_annotators", real)
    assert sorted(load_task_state(Task.objects.get(pk=task.pk)).state.gold.items) == [3, 12]
