"""The ``passive`` closed-pool design: uniform draws, unbiased totals, honest intervals, edge cases.

Monte-Carlo checks use fixed seeds and state their error; the pools are small (``n = 400``, 12
positives) so that few positives are sampled, where naive intervals fail.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from closed_pools import pool_state, synthetic_pool
from scipy import stats

from evaluation.core.closed_pool import (
    CLOSED_POOL_MEASURES,
    POOL_DESIGNS,
    PassiveDesign,
    PoolDesign,
    PoolSampling,
    PoolState,
    make_pool_design,
    measure_range,
    measure_value,
)
from evaluation.core.closed_pool.passive import passive_estimates, sample_counts


def _true(name, truth, f):
    tp, fn = np.sum(truth & f), np.sum(truth & ~f)
    return float(measure_value(name, tp, fn, pp=np.sum(f), n=truth.size))


def _campaign(truth, systems, m, rng):
    """A fresh state with every system, then ``m`` labels drawn by ``passive``."""
    state = pool_state(systems, truth.size)
    design = PassiveDesign()
    items = design.plan(state, state.n_runs - 1, budget=m, rng=rng)
    state.set_labels(items, truth[items])
    return state, design


def test_passive_is_a_registered_pool_design():
    assert POOL_DESIGNS["passive"] is PassiveDesign
    assert isinstance(make_pool_design("passive"), PoolDesign)
    with pytest.raises(ValueError, match="unknown design 'oasis'"):
        make_pool_design("oasis")


def test_plan_draws_distinct_unverified_items_up_to_the_budget():
    rng = np.random.default_rng(1)
    state = PoolState(30)
    state.add_run(np.zeros(30), np.zeros(30, dtype=bool))
    state.set_labels(np.arange(10), np.zeros(10))
    design = PassiveDesign()
    assert design.plan(state, 0, budget=0, rng=rng).size == 0
    items = design.plan(state, 0, budget=8, rng=rng)
    assert items.size == 8 and np.unique(items).size == 8 and items.min() >= 10
    state.set_labels(items, np.zeros(8))
    rest = design.plan(state, 0, budget=100, rng=rng)  # more than the 12 left: all of them
    assert np.array_equal(np.sort(rest), np.flatnonzero(~state.labelled))
    state.set_labels(rest, np.zeros(rest.size))
    assert design.plan(state, 0, budget=5, rng=rng).size == 0
    with pytest.raises(IndexError):
        design.plan(state, 1, budget=5, rng=rng)


def test_plan_is_uniform_over_the_unverified_items():
    # 4,000 draws of 10 among the 50 unverified items of 60: each is drawn with probability
    # 0.2, so its frequency has standard error sqrt(0.2 * 0.8 / 4000) = 0.0063; the largest
    # deviation of 50 stays below 4.5 standard errors (a 1e-4 chance for each item).
    rng = np.random.default_rng(2)
    state = PoolState(60)
    state.add_run(np.zeros(60), np.zeros(60, dtype=bool))
    state.set_labels(np.arange(10), np.ones(10))
    counts = np.zeros(60)
    design = PassiveDesign()
    for _ in range(4000):
        counts[design.plan(state, 0, budget=10, rng=rng)] += 1
    assert counts[:10].sum() == 0
    freq = counts[10:] / 4000
    assert np.max(np.abs(freq - 0.2)) < 4.5 * math.sqrt(0.2 * 0.8 / 4000)


def test_expansion_totals_and_accuracy_are_unbiased():
    # 5,000 samples of 60 of the 400 items: each mean is within 4 Monte-Carlo standard errors
    # of the truth (its sample standard deviation / sqrt(5000); about 0.1 for tp).
    truth, systems = synthetic_pool()
    rng = np.random.default_rng(3)
    n, m, repeats = truth.size, 60, 5000
    draws = {name: [] for name in systems}
    for _ in range(repeats):
        items = rng.choice(n, m, replace=False)
        for name, (_, f) in systems.items():
            c = sample_counts(truth[items], f[items], n_items=n)
            tp, fn, pp = (float(t[0]) for t in c.totals())
            draws[name].append((tp, fn, pp, float(c.tp[0] + c.tn[0]) / c.size))
    for name, (_, f) in systems.items():
        est = np.array(draws[name])
        target = [np.sum(truth & f), np.sum(truth & ~f), np.sum(f), _true("accuracy", truth, f)]
        se = est.std(axis=0, ddof=1) / math.sqrt(repeats)
        assert np.all(np.abs(est.mean(axis=0) - target) <= 4 * se + 1e-12), name


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow)])
def test_intervals_cover_at_least_the_nominal_level(seed):
    # 1,000 campaigns of 80 labels (about 2.4 positives sampled): the coverage of every measure's
    # 95% interval for every run is at least 0.95 - 3 * sqrt(0.95 * 0.05 / 1000) = 0.929. The
    # interval is checked whether or not the value is defined (a 0/0 value's interval must still
    # hold). Wald intervals from the same counts cover about 0.2 here.
    truth, systems = synthetic_pool(seed=seed)
    rng = np.random.default_rng([seed, 4])
    repeats = 1000
    true = [[_true(m, truth, f) for m in CLOSED_POOL_MEASURES] for _, f in systems.values()]
    covered = np.zeros((len(systems), len(CLOSED_POOL_MEASURES)))
    for _ in range(repeats):
        state, design = _campaign(truth, systems, 80, rng)
        for k, est in enumerate(design.estimate(state, level=0.95, measures=CLOSED_POOL_MEASURES)):
            for j, m in enumerate(CLOSED_POOL_MEASURES):
                covered[k, j] += math.isnan(true[k][j]) or est[m].covers(true[k][j])
    assert covered.min() / repeats >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / repeats)


def test_f1_is_undefined_exactly_when_nothing_sampled_is_positive_or_predicted_positive():
    # The undefined share of 2,000 campaigns of 20 labels against the hypergeometric chance that
    # no sampled item lies in the run's positives or predicted positives; standard error of the
    # share at most sqrt(0.25 / 2000) = 0.011, tolerance 4 of them.
    truth, systems = synthetic_pool()
    rng = np.random.default_rng(5)
    repeats, m = 2000, 20
    undefined = np.zeros(len(systems))
    for _ in range(repeats):
        state, design = _campaign(truth, systems, m, rng)
        for k, est in enumerate(design.estimate(state, level=0.95, measures=("f1",))):
            undefined[k] += math.isnan(est["f1"].value)
    for k, (_, f) in enumerate(systems.values()):
        union = int(np.sum(truth | f))
        exact = stats.hypergeom.pmf(0, truth.size, union, m)
        assert abs(undefined[k] / repeats - exact) < 4 * math.sqrt(0.25 / repeats), k


def test_no_positive_sampled():
    # Four negatives, two of them predicted positive: precision and F1 are 0 with a bounded
    # interval that still reaches above 0; recall is 0/0: nan, and its interval the whole range.
    c = sample_counts([0, 0, 0, 0], [1, 1, 0, 0], n_items=100)
    (est,) = passive_estimates(c, level=0.95, measures=CLOSED_POOL_MEASURES)
    assert est["precision"].value == 0.0 and est["f1"].value == 0.0
    assert est["precision"].low == 0.0 and 0.5 < est["precision"].high < 1.0
    assert est["f1"].low == 0.0 and 0.0 < est["f1"].high < 1.0
    assert math.isnan(est["recall"].value)
    assert (est["recall"].low, est["recall"].high) == (0.0, 1.0)
    assert math.isnan(est["mcc"].value) and math.isnan(est["balanced_accuracy"].value)
    assert -1.0 <= est["mcc"].low < est["mcc"].high <= 1.0
    # nothing predicted positive either: F1 is 0/0 as well
    c = sample_counts([0, 0, 0], [0, 0, 0], n_items=100)
    f1 = passive_estimates(c, level=0.95, measures=("f1",))[0]["f1"]
    assert math.isnan(f1.value) and (f1.low, f1.high) == (0.0, 1.0)


def test_a_run_predicting_nothing():
    truth, systems = synthetic_pool()
    state, design = _campaign(truth, systems, 200, np.random.default_rng(6))
    nothing = list(systems).index("c-nothing")
    est = design.estimate(state, level=0.95, measures=CLOSED_POOL_MEASURES)[nothing]
    assert math.isnan(est["precision"].value)
    assert (est["precision"].low, est["precision"].high) == (0.0, 1.0)
    assert math.isnan(est["mcc"].value)
    # with positives sampled (200 of 400 items, 12 positives: all but surely), recall and F1
    # are exactly 0 and their intervals start at 0
    assert est["recall"].value == 0.0 and est["f1"].value == 0.0
    assert est["f1"].low == 0.0 and est["f1"].high > 0.0
    assert est["accuracy"].low <= _true("accuracy", truth, systems["c-nothing"][1])


def test_every_item_verified_gives_the_exact_values_with_zero_width():
    truth, systems = synthetic_pool()
    state, design = _campaign(truth, systems, truth.size, np.random.default_rng(7))
    assert state.labelled.all()
    for k, est in enumerate(design.estimate(state, level=0.95, measures=CLOSED_POOL_MEASURES)):
        f = state.runs[k].predictions
        for m in CLOSED_POOL_MEASURES:
            t, e = _true(m, truth, f), est[m]
            assert e.method == "census" and e.labels_used == truth.size
            if math.isnan(t):  # precision and MCC of the run predicting nothing
                assert math.isnan(e.value) and (e.low, e.high) == measure_range(m)
            else:
                assert e.value == pytest.approx(t, abs=1e-12)
                assert e.low == e.high == e.value


def test_unknown_measures_are_refused():
    truth, systems = synthetic_pool()
    state, design = _campaign(truth, systems, 10, np.random.default_rng(8))
    with pytest.raises(ValueError, match="unknown measures"):
        design.estimate(state, level=0.95, measures=("f2",))


# --- what the pipeline asks of every design (interface.PoolDesign), the passive way ---------


def test_every_design_offers_what_the_pipeline_calls():
    for cls in POOL_DESIGNS.values():
        for method in ("plan", "estimate", "labels", "looks", "sampling", "resume", "curve"):
            assert callable(getattr(cls, method)), (cls.name, method)


def test_passive_takes_labels_as_they_are_and_asks_no_look():
    truth, systems = synthetic_pool()
    state, design = _campaign(truth, systems, 60, np.random.default_rng(4))
    assert design.labels(state) is None
    looks = design.looks(state)
    assert looks.dtype == np.int64 and looks.size == 0


def test_passives_sampling_record_is_the_share_verified_and_resumes_on_its_pool_only():
    truth, systems = synthetic_pool()
    state, design = _campaign(truth, systems, 60, np.random.default_rng(4))
    sampling = design.sampling(state)
    assert np.array_equal(sampling.inclusion, np.full(400, 60 / 400))
    assert np.array_equal(sampling.permanent, np.zeros(400))
    resumed = PassiveDesign()
    resumed.resume(state, sampling)
    again = resumed.estimate(state, level=0.9, measures=("f1",))
    assert repr(again) == repr(design.estimate(state, level=0.9, measures=("f1",)))  # nan != nan
    with pytest.raises(ValueError, match="sampling record of the pool's 400 items"):
        resumed.resume(state, PoolSampling(np.zeros(3), np.zeros(3)))


def test_passives_curve_passes_through_the_runs_own_estimates():
    truth, systems = synthetic_pool()
    state, design = _campaign(truth, systems, 120, np.random.default_rng(5))
    estimates = design.estimate(state, level=0.9, measures=("precision", "recall"))
    for run in (0, 1, 3):  # c-nothing predicts nothing: no threshold gives its predictions
        curve = design.curve(state, run, level=0.9, points=20)
        k = curve.operating_point
        assert k is not None and curve.labels_used == 120
        assert curve.method == "pointwise/passive-srs/clopper-pearson"
        own = estimates[run]
        for name, (value, low, high) in {
            "precision": (curve.precision, curve.precision_low, curve.precision_high),
            "recall": (curve.recall, curve.recall_low, curve.recall_high),
        }.items():
            assert (value[k], low[k], high[k]) == pytest.approx(
                (own[name].value, own[name].low, own[name].high), nan_ok=True
            )


def test_passives_curve_is_the_true_curve_once_every_item_is_verified():
    truth, systems = synthetic_pool()
    state, design = _campaign(truth, systems, 400, np.random.default_rng(6))
    scores = systems["a-good"][0]
    curve = design.curve(state, 0, level=0.95, points=30)
    for k, t in enumerate(curve.thresholds):
        f = scores >= t
        tp = np.sum(truth & f)
        assert curve.recall[k] == pytest.approx(tp / truth.sum())
        assert curve.recall_low[k] == curve.recall_high[k] == curve.recall[k]
        if f.any():
            assert curve.precision[k] == pytest.approx(tp / f.sum())


def test_passives_curve_refuses_a_run_or_level_it_cannot_draw():
    truth, systems = synthetic_pool()
    state, design = _campaign(truth, systems, 30, np.random.default_rng(7))
    with pytest.raises(IndexError, match="no run 9"):
        design.curve(state, 9, level=0.95)
    with pytest.raises(ValueError, match="level must lie strictly between 0 and 1"):
        design.curve(state, 0, level=1.0)
