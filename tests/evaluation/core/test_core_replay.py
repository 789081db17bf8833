"""Replaying stored rounds rebuilds the default design's sampling record bit for bit."""

import numpy as np
import pytest

from evaluation.core.designs import CoordinatedPoissonDesign
from evaluation.core.results import RoundRecord
from evaluation.core.state import TaskState


def _campaign(design, n_items=4000, n_runs=4, seed=3):
    rng = np.random.default_rng(seed)
    truth = rng.random(n_items) < 0.7
    state = TaskState(n_items)
    state.set_reference(np.flatnonzero(truth)[:200])
    rounds = []
    for _ in range(n_runs):
        items = np.sort(rng.choice(n_items, size=1500, replace=False))
        run = state.add_run(items, rng.random(items.size))
        for _ in range(50):
            plan = design.plan(state, run, rng=rng)
            rounds.append(
                RoundRecord(
                    run,
                    plan.round,
                    plan.items,
                    plan.details.get("levels"),
                    plan.details.get("fraction", 1.0),
                    plan.seed,
                )
            )
            state.set_labels(plan.items, truth[plan.items])
            if plan.done:
                break
    return state, rounds


def _rebuild(state, design, rounds):
    fresh = TaskState(state.n_items)
    for run in state.runs:
        fresh.add_run(run.items, run.scores)
    fresh.set_reference(state.reference.items, state.reference.groups)
    known = np.flatnonzero(state.labels >= 0)
    fresh.set_labels(known, state.labels[known])
    design.replay(fresh, rounds)
    return fresh


@pytest.mark.parametrize("budget", [None, 700])
def test_replay_reproduces_inclusion_requests_and_estimates(budget):
    design = CoordinatedPoissonDesign(budget=budget)
    state, rounds = _campaign(design)
    fresh = _rebuild(state, CoordinatedPoissonDesign(budget=budget), rounds)
    original, replayed = design.record(state), design.record(fresh)
    assert np.array_equal(original.inclusion, replayed.inclusion)
    assert np.array_equal(original.requested, replayed.requested)
    assert original.rounds == replayed.rounds
    assert design.estimate(state) == CoordinatedPoissonDesign(budget=budget).estimate(fresh)


def test_replayed_state_plans_the_same_next_round():
    design = CoordinatedPoissonDesign()
    state, rounds = _campaign(design, n_runs=2)
    fresh = _rebuild(state, CoordinatedPoissonDesign(), rounds)
    items = np.arange(0, 4000, 3)
    state.add_run(items, np.linspace(0, 1, items.size))
    fresh.add_run(items, np.linspace(0, 1, items.size))
    a = design.plan(state, 2, rng=np.random.default_rng(9))
    b = CoordinatedPoissonDesign().plan(fresh, 2, rng=np.random.default_rng(9))
    assert np.array_equal(a.items, b.items) and a.round == b.round == 1


def test_a_draw_cut_to_the_budget_keeps_every_drawn_item_reachable():
    design = CoordinatedPoissonDesign(budget=50)
    state, _ = _campaign(design, n_runs=1)
    rec = design.record(state)
    assert rec.n_requested == 50
    assert (rec.inclusion[rec.requested] > 0).all()
    est = design.estimate(state)[0].precision
    assert np.isfinite(est.value) and est.low <= est.value <= est.high


def test_replay_rejects_a_used_state_and_double_draws():
    design = CoordinatedPoissonDesign()
    state, rounds = _campaign(design, n_runs=1)
    with pytest.raises(ValueError, match="no sampling record"):
        design.replay(state, rounds)
    fresh = TaskState(state.n_items)
    fresh.add_run(state.runs[0].items, state.runs[0].scores)
    twice = [rounds[0], RoundRecord(0, 2, rounds[0].items)]
    with pytest.raises(ValueError, match="twice"):
        CoordinatedPoissonDesign().replay(fresh, twice)


def _runs_only(state):
    fresh = TaskState(state.n_items)
    for run in state.runs:
        fresh.add_run(run.items, run.scores)
    return fresh


@pytest.mark.parametrize("split", [0, 1, 5, -1])
def test_replay_in_two_parts_equals_replay_at_once(split):
    design = CoordinatedPoissonDesign()
    state, rounds = _campaign(design)
    whole = _rebuild(state, CoordinatedPoissonDesign(), rounds)
    parts = _runs_only(state)
    CoordinatedPoissonDesign().replay(parts, rounds[:split])
    CoordinatedPoissonDesign().replay(parts, rounds[split:], extend=True)
    a, b = design.record(whole), design.record(parts)
    assert np.array_equal(a.inclusion, b.inclusion)
    assert np.array_equal(a.requested, b.requested)
    assert a.rounds == b.rounds and a.log == b.log


def test_runs_added_between_replays_extend_the_record():
    design = CoordinatedPoissonDesign()
    state, rounds = _campaign(design, n_runs=3)
    first_run_rounds = [r for r in rounds if r.run == 0]
    partial = TaskState(state.n_items)
    partial.add_run(state.runs[0].items, state.runs[0].scores)
    CoordinatedPoissonDesign().replay(partial, first_run_rounds)
    for run in state.runs[1:]:
        partial.add_run(run.items, run.scores)
    CoordinatedPoissonDesign().replay(partial, rounds[len(first_run_rounds) :], extend=True)
    whole = _rebuild(state, CoordinatedPoissonDesign(), rounds)
    assert np.array_equal(design.record(whole).inclusion, design.record(partial).inclusion)
    assert np.array_equal(design.record(whole).requested, design.record(partial).requested)


def test_a_fork_plans_and_labels_without_touching_the_original():
    design = CoordinatedPoissonDesign()
    state, _ = _campaign(design, n_runs=2)
    before = design.record(state).copy()
    labels = state.labels.copy()
    fork = state.fork()
    assert design.estimate(fork) == design.estimate(state)
    items = np.arange(1, 4000, 2)
    fork.add_run(items, np.linspace(0, 1, items.size))
    plan = design.plan(fork, 2, rng=np.random.default_rng(4))
    assert plan.items.size > 0
    fork.set_labels(plan.items, np.ones(plan.items.size, bool))
    after = design.record(state)
    assert state.n_runs == 2 and np.array_equal(state.labels, labels)
    assert np.array_equal(after.inclusion, before.inclusion)
    assert np.array_equal(after.requested, before.requested)
    assert after.rounds == before.rounds and len(after.strata) == 2
    assert not np.shares_memory(fork.labels, state.labels)
    assert np.shares_memory(fork.runs[0].items, state.runs[0].items)


def _noisy_campaign(design, n_items=3000, n_runs=3, seed=4):
    """Runs answered by fallible annotators (with gold items) instead of an oracle."""
    from evaluation.simulation.annotators import AnnotatorPanel

    rng = np.random.default_rng(seed)
    truth = rng.random(n_items) < 0.6
    state = TaskState(n_items)
    state.set_reference(np.flatnonzero(truth)[:200])
    gold = np.sort(rng.choice(n_items, 60, replace=False))
    state.set_gold(gold, truth[gold])
    panel = AnnotatorPanel(
        ((0.95, 0.95),) * 3 + ((0.9, 0.85),), truth, gold, 0.05, 1, np.random.default_rng(seed + 1)
    )
    rounds = []
    for _ in range(n_runs):
        items = np.sort(rng.choice(n_items, size=1200, replace=False))
        scores = np.clip(truth[items] * 0.6 + rng.random(items.size) * 0.4, 0, 1)
        run = state.add_run(items, scores)
        for _ in range(60):
            plan = design.plan(state, run, rng=rng)
            rounds.append(
                RoundRecord(
                    run,
                    plan.round,
                    plan.items,
                    plan.details.get("levels"),
                    plan.details.get("fraction", 1.0),
                    plan.seed,
                    again=plan.again,
                    bands=plan.bands,
                    patterns=plan.patterns,
                )
            )
            panel.answer(state, plan)
            if plan.done:
                break
    return state, rounds


def test_replay_with_fallible_annotators_reproduces_looks_bands_and_estimates():
    design = CoordinatedPoissonDesign(max_judgments_per_item=4)
    state, rounds = _noisy_campaign(design)
    assert sum(r.again.size for r in rounds) > 0 and any(r.patterns for r in rounds)
    fresh = TaskState(state.n_items)
    for run in state.runs:
        fresh.add_run(run.items, run.scores)
    fresh.set_reference(state.reference.items, state.reference.groups)
    fresh.set_gold(state.gold.items, state.gold.answers)
    j = state.judgments
    fresh.add_judgments(j.items, j.annotators, j.says_correct)
    other = CoordinatedPoissonDesign(max_judgments_per_item=4)
    other.replay(fresh, rounds)
    original, replayed = design.record(state), other.record(fresh)
    assert np.array_equal(original.inclusion, replayed.inclusion)
    assert np.array_equal(original.asked, replayed.asked)
    assert np.array_equal(original.cell_band, replayed.cell_band)
    assert original.look_patterns == replayed.look_patterns
    assert original.judgments_asked == replayed.judgments_asked
    assert design.estimate(state) == other.estimate(fresh)


@pytest.mark.parametrize("fallible", [False, True])
def test_preparing_a_run_before_other_rounds_plans_the_same_round(fallible):
    """What ``prepare`` computes ahead (a service does it before the engine lease) is still
    right after other runs' rounds moved the record on."""
    design = CoordinatedPoissonDesign()
    state, rounds = _campaign(design, n_runs=2)
    if fallible:
        judged = np.flatnonzero(state.labels >= 0)
        state.add_judgments(judged, np.zeros(judged.size, np.int64), state.labels[judged] == 1)
    fresh = _rebuild(state, CoordinatedPoissonDesign(), rounds)
    if fallible:
        fresh.add_judgments(judged, np.zeros(judged.size, np.int64), fresh.labels[judged] == 1)
    items = np.arange(0, 4000, 3)
    for s in (state, fresh):
        s.add_run(items, np.linspace(0, 1, items.size))
        s.add_run(items[::2], np.linspace(0, 1, items[::2].size))
    other = CoordinatedPoissonDesign()
    design.prepare(state, 2)
    assert design.record(state).piece_cache.get(2) is not None
    # Another run's round is planned after the preparation, before run 2's.
    design.plan(state, 3, rng=np.random.default_rng(4))
    other.plan(fresh, 3, rng=np.random.default_rng(4))
    a = design.plan(state, 2, rng=np.random.default_rng(9))
    b = other.plan(fresh, 2, rng=np.random.default_rng(9))
    assert np.array_equal(a.items, b.items) and np.array_equal(a.again, b.again)
    assert a.details == b.details and a.current_half_width == b.current_half_width
