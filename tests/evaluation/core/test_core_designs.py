"""Exact, hand-worked behaviour of both designs on small task states."""

import math

import numpy as np
import pytest

from evaluation.core.designs import CoordinatedPoissonDesign, PublishedDesign, make_design
from evaluation.core.designs.coordinated import score_strata
from evaluation.core.intervals import binomial_interval, normal_quantile
from evaluation.core.state import TaskState


def _finish(design, state, run, truth, rng, max_rounds=100):
    """Plan ``run`` in rounds, answering from ``truth``; return the plans."""
    plans = []
    for _ in range(max_rounds):
        plan = design.plan(state, run, rng=rng)
        plans.append(plan)
        if plan.items.size:
            state.set_labels(plan.items, truth[plan.items])
        if plan.done:
            return plans
    raise AssertionError("planner did not stop")


# -- default design ----------------------------------------------------------------------------


def test_tiny_run_is_verified_completely_and_estimated_exactly():
    state = TaskState(10)
    run = state.add_run([4, 7, 9])
    truth = np.zeros(10, bool)
    truth[[4, 9]] = True
    design = CoordinatedPoissonDesign()
    plans = _finish(design, state, run, truth, np.random.default_rng(0))
    assert sorted(np.concatenate([p.items for p in plans]).tolist()) == [4, 7, 9]
    assert plans[-1].status == "met"
    p = design.estimate(state)[0].precision
    assert (p.value, p.low, p.high) == (2 / 3, 2 / 3, 2 / 3)
    assert p.method == "exact" and p.labels_used == 3


@pytest.mark.parametrize("size", [1, 2, 5])
def test_runs_of_one_to_five_items_reach_the_target(size):
    state = TaskState(size)
    run = state.add_run(np.arange(size))
    truth = np.arange(size) % 2 == 0
    design = CoordinatedPoissonDesign()
    _finish(design, state, run, truth, np.random.default_rng(size))
    est = design.estimate(state)[0]
    assert est.precision.value == pytest.approx(truth.mean())
    assert est.precision.half_width == 0.0


def test_identical_run_gets_no_new_items_and_the_same_precision():
    rng = np.random.default_rng(1)
    truth = rng.random(3000) < 0.8
    state = TaskState(3000)
    a = state.add_run(np.arange(2000), rng.random(2000))
    design = CoordinatedPoissonDesign()
    _finish(design, state, a, truth, rng)
    labelled = state.n_labelled
    b = state.add_run(np.arange(2000), state.runs[a].scores)
    plans = _finish(design, state, b, truth, rng)
    assert [p.status for p in plans] == ["met"]
    assert state.n_labelled == labelled
    ea, eb = design.estimate(state)
    assert (eb.precision.value, eb.precision.low, eb.precision.high) == (
        ea.precision.value,
        ea.precision.low,
        ea.precision.high,
    )


def test_run_made_of_verified_items_needs_nothing_and_is_exact():
    state = TaskState(100)
    truth = np.arange(100) < 70
    design = CoordinatedPoissonDesign()
    a = state.add_run(np.arange(100))
    _finish(design, state, a, truth, np.random.default_rng(2))
    known = np.flatnonzero(state.labels >= 0)
    assert known.size >= 20
    b = state.add_run(known[:20])
    plans = _finish(design, state, b, truth, np.random.default_rng(3))
    assert plans[-1].status == "met" and sum(p.items.size for p in plans) == 0
    p = design.estimate(state, [b])[0].precision
    assert p.value == p.low == p.high == pytest.approx(truth[known[:20]].mean())


def test_every_item_of_a_planned_run_stays_reachable():
    rng = np.random.default_rng(4)
    truth = rng.random(6000) < 0.9
    state = TaskState(6000)
    design = CoordinatedPoissonDesign()
    a = state.add_run(np.arange(4000))
    _finish(design, state, a, truth, rng)
    # 99% overlap plus 40 novel items no earlier level reaches.
    b = state.add_run(np.concatenate([np.arange(3960), np.arange(5000, 5040)]))
    _finish(design, state, b, truth, rng)
    # A disjoint run.
    c = state.add_run(np.arange(5100, 6000))
    _finish(design, state, c, truth, rng)
    rec = design.record(state)
    for run in (a, b, c):
        assert (rec.inclusion[state.runs[run].items] > 0).all()


def test_budget_is_never_exceeded():
    rng = np.random.default_rng(5)
    truth = rng.random(5000) < 0.5
    state = TaskState(5000)
    design = CoordinatedPoissonDesign(budget=40)
    a = state.add_run(np.arange(5000), rng.random(5000))
    plans = _finish(design, state, a, truth, rng)
    assert state.n_labelled <= 40
    assert plans[-1].status == "budget_exhausted"
    assert design.estimate(state)[0].precision.half_width > 0.05


def test_zero_budget_asks_for_nothing():
    state = TaskState(50)
    run = state.add_run(np.arange(50))
    plan = CoordinatedPoissonDesign(budget=0).plan(state, run, rng=np.random.default_rng(0))
    assert plan.status == "budget_exhausted" and plan.items.size == 0


def test_no_labels_gives_honest_bounds_not_a_value():
    state = TaskState(20)
    state.add_run(np.arange(20))
    state.set_reference(np.arange(5))
    design = CoordinatedPoissonDesign()
    est = design.estimate(state)[0]
    assert math.isnan(est.precision.value)
    assert (est.precision.low, est.precision.high) == (0.0, 1.0)


def test_empty_reference_sample_makes_recall_not_identifiable():
    rng = np.random.default_rng(6)
    truth = rng.random(500) < 0.7
    state = TaskState(500)
    design = CoordinatedPoissonDesign()
    run = state.add_run(np.arange(300))
    _finish(design, state, run, truth, rng)
    est = design.estimate(state)[0]
    assert math.isnan(est.recall.value) and math.isnan(est.f1.value)
    assert est.recall.low == 0.0 and 0.0 < est.recall.high <= 1.0
    assert "not-identifiable" in est.recall.method
    assert est.precision.covers(truth[:300].mean()) or est.precision.half_width <= 0.05


def test_all_correct_sample_keeps_a_clopper_pearson_width():
    state = TaskState(10_000)
    run = state.add_run(np.arange(10_000))
    truth = np.ones(10_000, bool)
    design = CoordinatedPoissonDesign()
    _finish(design, state, run, truth, np.random.default_rng(7))
    p = design.estimate(state)[0].precision
    n = p.labels_used
    assert p.value == 1.0 and p.high == 1.0
    # At most the finite-population gain over the exact binomial bound of n all-correct draws.
    assert p.low <= 1.0 - 0.9 * (1.0 - binomial_interval(n, n)[0])
    # ~37 draws give a Clopper-Pearson half-width of 0.05; rounds (16, then doubling) overshoot.
    assert 30 <= n <= 60


def test_plans_are_reproducible_from_the_seed():
    def once():
        state = TaskState(2000)
        run = state.add_run(np.arange(2000), np.linspace(0, 1, 2000))
        return CoordinatedPoissonDesign().plan(state, run, rng=np.random.default_rng(42))

    a, b = once(), once()
    assert a.seed == b.seed and np.array_equal(a.items, b.items) and a.items.size > 0


def test_a_state_belongs_to_the_design_that_sampled_it():
    state = TaskState(10)
    state.add_run(np.arange(10))
    state.design_state["default"] = object()
    with pytest.raises(ValueError, match="another design"):
        CoordinatedPoissonDesign().estimate(state)


def test_score_strata_keep_ties_together_and_balance_sizes():
    scores = np.repeat([0.1, 0.2, 0.3, 0.9], [100, 100, 100, 700])
    strata = score_strata(scores, max_strata=4, min_stratum_size=50)
    for value in np.unique(scores):
        assert np.unique(strata[scores == value]).size == 1
    assert np.all(np.diff(strata[np.argsort(scores, kind="stable")]) >= 0)
    assert score_strata(np.full(500, 0.7), max_strata=4, min_stratum_size=50).max() == 0
    balanced = score_strata(np.linspace(0, 1, 1000), max_strata=4, min_stratum_size=50)
    assert np.bincount(balanced).tolist() == [250, 250, 250, 250]
    assert score_strata(np.linspace(0, 1, 60), max_strata=4, min_stratum_size=50).max() == 0


def test_unknown_design_and_bad_options_are_rejected():
    with pytest.raises(ValueError, match="unknown design"):
        make_design("nope")
    with pytest.raises(ValueError, match="half-width"):
        CoordinatedPoissonDesign(target_half_width=0.0)
    with pytest.raises(ValueError, match="interval"):
        CoordinatedPoissonDesign(interval="normal")
    with pytest.raises(ValueError, match="confidence"):
        PublishedDesign(confidence=1.0)


# -- published design --------------------------------------------------------------------------


def test_published_single_run_is_the_sample_mean_with_wald_interval():
    state = TaskState(6)
    state.add_run(np.arange(6))
    state.set_labels(np.arange(6), [1, 1, 0, 1, 0, 1])
    design = PublishedDesign()
    rec = design.record(state)
    rec.draws.append(np.array([0, 2, 2, 5]))
    rec.seeds.append(None)
    p = design.estimate(state)[0].precision
    f = np.array([1, 0, 0, 1.0])
    assert p.value == pytest.approx(f.mean())
    half = normal_quantile(0.95) * f.std(ddof=1) / 2
    assert (p.low, p.high) == pytest.approx((max(0, 0.5 - half), min(1, 0.5 + half)))


def test_published_mixture_weights_by_hand():
    # X1 = {0,1,2,3}, X2 = {2,3,4,5}; <p1,p2> = 2/16, <p1,p1> = 1/4; two draws each.
    state = TaskState(6)
    state.add_run([0, 1, 2, 3])
    state.add_run([2, 3, 4, 5])
    state.set_labels([0, 2, 3, 4], [1, 0, 1, 1])
    design = PublishedDesign()
    rec = design.record(state)
    rec.draws += [np.array([0, 2]), np.array([3, 4])]
    rec.seeds += [None, None]
    p1 = design.estimate(state, [0])[0].precision
    # w1 = (2/3, 1/3); q1(0) = 1/6, q1(2) = q1(3) = 1/4; p1 = 1/4 on X1.
    expected = (2 / 3) / 2 * (0.25 / (1 / 6) + 0) + (1 / 3) / 2 * (0.25 / 0.25 + 0)
    assert p1.value == pytest.approx(expected)


def test_published_plans_once_at_least_one_draw_and_wald_collapses_at_one():
    rng = np.random.default_rng(8)
    state = TaskState(3000)
    truth = np.ones(3000, bool)
    design = PublishedDesign()
    a = state.add_run(np.arange(3000))
    plans = _finish(design, state, a, truth, rng)
    assert [p.status for p in plans] == ["sample", "gave_up"]
    b = state.add_run(np.arange(3000))
    assert design.required_draws(state, b) == 1
    _finish(design, state, b, truth, rng)
    p = design.estimate(state)[0].precision
    # The documented flaw the default design fixes: all-correct draws give a zero-width interval.
    assert p.value == 1.0 and p.half_width < 1e-6


def test_published_first_run_needs_about_the_paper_bound():
    # For a lone run the bound is sum p (p/q)^2 = 1 with w = 1: n = (z / h)^2.
    state = TaskState(1000)
    run = state.add_run(np.arange(1000))
    n = PublishedDesign().required_draws(state, run)
    assert n == math.ceil((normal_quantile(0.95) / 0.05) ** 2)


def test_round_log_records_the_levels_actually_applied():
    state = TaskState(5)
    run = state.add_run(np.arange(5))
    design = CoordinatedPoissonDesign()
    plan = design.plan(state, run, rng=np.random.default_rng(0))
    rec = design.record(state)
    # A five-item run needs take-all: the logged level is the applied one, 1.
    assert plan.details["levels"] == [1.0]
    assert rec.log[-1]["levels"] == [1.0]
    assert (rec.inclusion[:5] == 1.0).all()


# -- the service interface ---------------------------------------------------------------------


def test_only_designs_with_a_replayable_record_run_tasks():
    from evaluation.core.designs import ServiceDesign, make_service_design

    assert isinstance(make_service_design("default"), ServiceDesign)
    # Paper 003's design plans and estimates in simulations but keeps nothing to replay.
    assert not isinstance(make_design("published"), ServiceDesign)
    with pytest.raises(ValueError, match="'published' is a simulation baseline"):
        make_service_design("published")
    with pytest.raises(ValueError, match="unknown design 'magic'; choose one of default"):
        make_service_design("magic")
