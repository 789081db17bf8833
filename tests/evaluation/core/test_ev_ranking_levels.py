"""``design.estimate(state, level=...)``: every interval of every path honours the override.

Ranking needs intervals at a Bonferroni-adjusted level; an override that missed one code path
(exact runs, bounds-only runs, recall without reference, F1, runs without draws) would silently
rank on 95% intervals. Planning must keep using the design's own confidence.
"""

import copy
import math

import numpy as np
import pytest

from evaluation.core.designs import make_design
from evaluation.core.measures import OPEN_MEASURES
from evaluation.core.state import TaskState


def build_state(design, *, reference: bool, seed: int = 0):
    """Runs in every estimation situation: answered, exact, awaiting answers, not yet planned."""
    rng = np.random.default_rng(seed)
    n = 3000
    truth = rng.random(n) < 0.4
    state = TaskState(n)
    if reference:
        state.set_reference(np.sort(rng.choice(np.flatnonzero(truth), 120, replace=False)))
    answered = state.add_run(np.arange(0, 900), rng.random(900), name="answered")
    overlapping = state.add_run(np.arange(600, 1500), rng.random(900), name="overlapping")
    tiny = state.add_run(np.array([2000, 2001, 2002]), np.ones(3), name="tiny")
    waiting = state.add_run(np.arange(2100, 2600), rng.random(500), name="waiting")
    plan_rng = np.random.default_rng(seed + 1)
    for run in (answered, overlapping, tiny):
        for _ in range(10):
            plan = design.plan(state, run, rng=plan_rng)
            if plan.items.size:
                state.set_labels(plan.items, truth[plan.items].astype(int))
            if plan.done:
                break
    design.plan(state, waiting, rng=plan_rng)  # requested, never answered
    state.add_run(np.arange(2700, 2900), rng.random(200), name="unplanned")
    return state


def levels_seen(estimates):
    return {e.metric(m).level for e in estimates for m in OPEN_MEASURES}


@pytest.mark.parametrize("name", ["default", "published"])
@pytest.mark.parametrize("reference", [True, False])
def test_every_interval_carries_the_requested_level(name, reference):
    design = make_design(name, confidence=0.95)
    state = build_state(design, reference=reference)
    methods = set()
    for level in (0.8, 0.995, 0.99999):
        out = design.estimate(state, level=level)
        assert len(out) == state.n_runs
        assert levels_seen(out) == {level}
        methods |= {e.metric(m).method for e in out for m in OPEN_MEASURES}
    assert levels_seen(design.estimate(state)) == {0.95}
    # The edge paths were exercised, not just the main one.
    if name == "default":
        assert {"exact", "bounds-only"} <= {m.split("/")[0] for m in methods}
    else:
        assert "no-draws" in methods


@pytest.mark.parametrize("name", ["default", "published"])
def test_higher_levels_widen_and_the_default_is_the_design_confidence(name):
    design = make_design(name, confidence=0.9)
    state = build_state(design, reference=True, seed=3)
    base = design.estimate(state)
    assert design.estimate(state, level=0.9) == base
    wide = design.estimate(state, level=0.999)
    widened = 0
    for b, w in zip(base, wide, strict=True):
        for m in OPEN_MEASURES:
            eb, ew = b.metric(m), w.metric(m)
            assert (math.isnan(eb.value) and math.isnan(ew.value)) or eb.value == ew.value
            assert ew.labels_used == eb.labels_used
            assert ew.low <= eb.low + 1e-12 and ew.high >= eb.high - 1e-12
            widened += (ew.high - ew.low) > (eb.high - eb.low) + 1e-9
    assert widened >= 4


@pytest.mark.parametrize("name", ["default", "published"])
def test_estimating_at_another_level_does_not_change_planning(name):
    truth = np.random.default_rng(9).random(2000) < 0.5
    design_a, design_b = make_design(name), make_design(name)
    state_a, state_b = TaskState(2000), TaskState(2000)
    rng_a, rng_b = np.random.default_rng(4), np.random.default_rng(4)
    scores = np.random.default_rng(5).random(1200)
    for state in (state_a, state_b):
        state.add_run(np.arange(1200), scores)
        state.add_run(np.arange(500, 1700), scores)
    for run in (0, 1):
        for _ in range(8):
            design_b.estimate(state_b, level=0.9999)
            plan_a = design_a.plan(state_a, run, rng=rng_a)
            plan_b = design_b.plan(state_b, run, rng=rng_b)
            assert np.array_equal(plan_a.items, plan_b.items)
            assert plan_a.status == plan_b.status
            assert np.array_equal(
                [plan_a.predicted_half_width, plan_a.expected_labels],
                [plan_b.predicted_half_width, plan_b.expected_labels],
                equal_nan=True,
            )
            for state, plan in ((state_a, plan_a), (state_b, plan_b)):
                if plan.items.size:
                    state.set_labels(plan.items, truth[plan.items].astype(int))
            if plan_a.done:
                break
    assert design_a.estimate(state_a) == design_b.estimate(state_b)


@pytest.mark.parametrize("name", ["default", "published"])
@pytest.mark.parametrize("level", [0.0, 1.0, 1.5, -0.2, math.nan])
def test_levels_outside_the_unit_interval_are_refused(name, level):
    design = make_design(name)
    state = build_state(design, reference=False)
    before = copy.deepcopy(design.estimate(state))
    with pytest.raises(ValueError, match="level"):
        design.estimate(state, level=level)
    assert design.estimate(state) == before
