"""The planner's order option (``evaluation.core.order_rounds``): which items a round draws."""

import numpy as np
import pytest

from evaluation.core.designs import make_design
from evaluation.core.order_rounds import ORDER_RUN, order_round, unresolved_neighbours
from evaluation.core.paired import paired_differences
from evaluation.core.state import TaskState

from design_campaigns import plan_until_done


def neighbours_world(seed=0):
    """Three runs on 4,000 items: two that differ on 400 items (precision 0.80 and 0.84, so
    their order is open after the precision target), and a far worse one."""
    rng = np.random.default_rng(seed)
    truth = np.zeros(4000, bool)
    truth[:2400] = True
    shared = np.concatenate([np.arange(0, 1500), np.arange(2400, 2800)])
    a = np.sort(np.concatenate([shared, np.arange(1500, 1700), np.arange(2800, 3000)]))
    b = np.sort(np.concatenate([shared, np.arange(1700, 1980), np.arange(3000, 3120)]))
    c = np.sort(np.concatenate([np.arange(2000, 2400), np.arange(3200, 4000)]))
    design = make_design("default", target_half_width=0.05)
    state = TaskState(truth.size)
    state.set_reference(np.sort(rng.choice(np.flatnonzero(truth), 300, replace=False)))
    plan_rng = np.random.default_rng(seed)
    for items in (a, b, c):
        plan_until_done(design, state, state.add_run(items), truth, plan_rng)
    return design, state, truth


def test_a_round_draws_only_where_unresolved_neighbours_disagree():
    design, state, truth = neighbours_world()
    paired = paired_differences(design, state)
    pairs = unresolved_neighbours(paired["precision"], family_level=0.95, min_gap=0.01)
    assert pairs == [(1, 0)]
    before = design.inclusion(state).copy()
    spent = state.n_labelled
    plan = order_round(
        design, state, judgments=60, rng=np.random.default_rng(1), measures=("precision",)
    )
    assert plan.run == ORDER_RUN and plan.status == "sample"
    assert 0 < plan.items.size <= 60
    disagree = np.setxor1d(state.runs[0].items, state.runs[1].items)
    assert np.isin(plan.items, disagree).all()
    after = design.inclusion(state)
    raised = np.flatnonzero(after > before)
    assert raised.size and np.isin(raised, disagree).all()
    assert state.n_labelled == spent  # nothing is labelled until the items are answered
    state.set_labels(plan.items, truth[plan.items].astype(int))
    assert np.isfinite(design.estimate(state)[0].precision.value)


def test_a_round_respects_the_budget_and_stops_when_nothing_is_open():
    design, state, _ = neighbours_world()
    assert order_round(design, state, judgments=0.5, rng=np.random.default_rng(1)).status == (
        "budget_exhausted"
    )
    plan = order_round(design, state, judgments=50, rng=np.random.default_rng(1), min_gap=0.5)
    assert plan.status == "met" and plan.items.size == 0 and plan.details["pairs"] == []


def test_unresolved_neighbours_skip_identical_and_close_runs():
    design, state, _ = neighbours_world()
    paired = paired_differences(design, state)["precision"]
    assert unresolved_neighbours(paired, family_level=0.95, min_gap=1.0) == []
    with pytest.raises(ValueError):
        unresolved_neighbours(paired, family_level=1.5, min_gap=0.01)


def test_the_runs_option_draws_from_every_item_of_the_open_pairs():
    design, state, _ = neighbours_world()
    plan = order_round(
        design,
        state,
        judgments=60,
        rng=np.random.default_rng(1),
        measures=("precision",),
        items="runs",
    )
    both = np.union1d(state.runs[0].items, state.runs[1].items)
    assert plan.items.size and np.isin(plan.items, both).all()
    with pytest.raises(ValueError, match="unknown items"):
        order_round(design, state, judgments=60, rng=np.random.default_rng(1), items="all")
