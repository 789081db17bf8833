"""A closed-pool run's estimated precision-recall curve: through the run's own estimates, exact
with every item verified, and (by simulation) as biased and as covered as the estimator itself.

The synthetic pool (tests/support/closed_pools.py) holds 400 items, 12 positives and four runs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from closed_pools import synthetic_pool

from evaluation.core.closed_pool import AdaptivePoolDesign, PoolState, PrecisionRecallCurve
from evaluation.core.closed_pool.curve import (
    curve_thresholds,
    operating_threshold,
    score_threshold_totals,
)
from evaluation.core.closed_pool.totals import prediction_totals


def _campaign(truth, systems, budget, rng):
    """As test_core_closed_pool_adaptive: runs arrive one by one, labels shared."""
    design = AdaptivePoolDesign()
    state = PoolState(truth.size)
    for k, (name, (scores, f)) in enumerate(systems.items(), start=1):
        run = state.add_run(scores, f, name=name)
        cap = budget * k // len(systems)
        while (room := cap - state.n_labelled) > 0:
            items = design.plan(state, run, budget=room, rng=rng)
            if not items.size:
                break
            state.set_labels(items, truth[items])
    return state, design


def _true_curve(truth, scores, thresholds):
    precision, recall = [], []
    for t in thresholds:
        f = scores >= t
        tp = np.sum(truth & f)
        precision.append(tp / f.sum() if f.any() else math.nan)
        recall.append(tp / truth.sum())
    return np.array(precision), np.array(recall)


def test_the_curve_passes_through_the_runs_own_estimates():
    truth, systems = synthetic_pool()
    state, design = _campaign(truth, systems, 90, np.random.default_rng(3))
    estimates = design.estimate(state, level=0.9, measures=("precision", "recall"))
    for run in (0, 1, 3):  # runs whose predictions are score >= t (c-nothing: see below)
        curve = design.curve(state, run, level=0.9, points=25)
        k = curve.operating_point
        assert k is not None
        scores, f = systems[state.runs[run].name]
        assert np.array_equal(scores >= curve.thresholds[k], f)
        for name, (value, low, high) in {
            "precision": (curve.precision, curve.precision_low, curve.precision_high),
            "recall": (curve.recall, curve.recall_low, curve.recall_high),
        }.items():
            own = estimates[run][name]
            # The same sums, added in another order (one pass over the pool for all thresholds).
            assert (value[k], low[k], high[k]) == pytest.approx(
                (own.value, own.low, own.high), rel=1e-12, abs=1e-12
            ), (run, name)
        assert curve.labels_used == estimates[run]["recall"].labels_used == 90
        # Not a coincidence of one point: the other thresholds give other recalls.
        assert len(set(curve.recall)) > 5


def test_every_item_verified_gives_the_true_curve_exactly():
    truth, systems = synthetic_pool()
    state, design = _campaign(truth, systems, truth.size, np.random.default_rng(8))
    assert state.labelled.all()
    curve = design.curve(state, 0, level=0.95, points=40)
    scores = state.runs[0].scores
    precision, recall = _true_curve(truth, scores, curve.thresholds)
    defined = np.isfinite(precision)
    assert np.array_equal(np.array(curve.precision)[defined], precision[defined])
    assert np.array_equal(np.array(curve.recall), recall)
    assert np.array_equal(np.array(curve.recall_low), recall)
    assert np.array_equal(np.array(curve.recall_high), recall)
    assert np.array_equal(np.array(curve.precision_low)[defined], precision[defined])
    # The curve goes from every item predicted positive (recall 1) to few.
    assert curve.recall[0] == 1.0 and curve.precision[0] == pytest.approx(truth.mean())
    assert list(curve.thresholds) == sorted(curve.thresholds)


def test_one_pass_totals_equal_the_totals_of_each_thresholds_predictions():
    truth, systems = synthetic_pool()
    state, design = _campaign(truth, systems, 70, np.random.default_rng(6))
    record = design._record(state, None)
    cells, rates, labels = design._model(state, record)
    assert labels is None  # exact labels
    pi = record.inclusion
    for run in state.runs:
        t = curve_thresholds(run.scores, points=40)
        fast = score_threshold_totals(state, cells, rates, pi, run.scores, t)
        masks = prediction_totals(state, cells, rates, pi, run.scores[None, :] >= t[:, None])
        for name in ("tp", "fn", "tp_variance", "fn_variance", "pp", "tp_verified"):
            # The same sums, added in another order.
            assert np.allclose(getattr(fast, name), getattr(masks, name), rtol=1e-9, atol=1e-9)
    with pytest.raises(ValueError, match="increase"):
        score_threshold_totals(state, cells, rates, pi, run.scores, [0.5, 0.2])


def test_thresholds_are_score_quantiles_with_the_operating_threshold():
    scores = np.linspace(0.0, 1.0, 101)
    t = curve_thresholds(scores, points=20, include=0.555)
    assert t.size == 21 and t[0] == 0.0 and 0.555 in t
    assert np.all(np.isin(np.delete(t, np.flatnonzero(t == 0.555)), scores))
    assert operating_threshold(scores, scores >= 0.3) == pytest.approx(0.3)
    assert operating_threshold(scores, scores < 0.3) is None
    nothing = operating_threshold(scores, np.zeros(101, dtype=bool))
    assert nothing is not None and not np.any(scores >= nothing)
    with pytest.raises(ValueError):
        curve_thresholds(scores, points=1)


def test_a_run_predicting_nothing_has_its_operating_point_above_every_score():
    truth, systems = synthetic_pool()
    state, design = _campaign(truth, systems, 60, np.random.default_rng(2))
    curve = design.curve(state, 2, level=0.95)
    k = curve.operating_point
    assert k == len(curve) - 1
    assert math.isnan(curve.precision[k]) and curve.recall[k] == 0.0
    stored = curve.as_dict()
    assert stored["precision"][k] is None and stored["operating_point"] == k
    assert stored["method"].startswith("pointwise/cell-posterior/")
    assert isinstance(curve, PrecisionRecallCurve)


@pytest.mark.slow
def test_curve_points_by_simulation_coverage_and_bias_like_the_estimators():
    # 200 campaigns at 80 and at 160 labels; three fixed thresholds of the good run (its score
    # quantiles 0.5, 0.9, 0.97: true precision 0.06 / 0.29 / 0.77, recall 1 / 1 / 0.83).
    # The curve is the adaptive estimator applied to "score >= t", so it is what that estimator
    # is: consistent, not unbiased (each cell's rate is shrunk to its prior; docs/STATISTICS.md).
    # Checked as the estimator's own test checks it: the mean error of every point < 0.06 and
    # at least halved when the labels double; and at 160 labels every point's 95% interval
    # covers in >= 0.95 - 3 sqrt(0.95 0.05 / 200) = 0.904 of the campaigns. At 80 labels the
    # precision points cover (>= 0.904); recall at the 0.9 quantile, whose truth is 1 (the
    # boundary: the estimate is always below it), covers only about 0.80 (measured 0.795), so it
    # is left out there: the estimator's "too sure after many negatives" (docs/STATISTICS.md).
    truth, systems = synthetic_pool()
    scores = systems["a-good"][0]
    thresholds = np.quantile(scores, [0.5, 0.9, 0.97], method="inverted_cdf")
    precision, recall = _true_curve(truth, scores, thresholds)
    true = np.stack([precision, recall], axis=1)  # (point, measure)
    repeats = 200
    floor = 0.95 - 3 * math.sqrt(0.95 * 0.05 / repeats)
    bias = {}
    for budget in (80, 160):
        values = np.empty((repeats, 3, 2))
        covered = np.zeros((3, 2))
        for r in range(repeats):
            state, design = _campaign(truth, systems, budget, np.random.default_rng([budget, r]))
            curve = design.curve(state, 0, level=0.95, thresholds=thresholds)
            values[r] = np.stack([curve.precision, curve.recall], axis=1)
            low = np.stack([curve.precision_low, curve.recall_low], axis=1)
            high = np.stack([curve.precision_high, curve.recall_high], axis=1)
            covered += (low - 1e-12 <= true) & (true <= high + 1e-12)
        coverage = covered / repeats
        if budget == 160:
            assert coverage.min() >= floor, coverage
        else:
            assert coverage[:, 0].min() >= floor and coverage[2, 1] >= floor, coverage
        bias[budget] = np.abs(values.mean(axis=0) - true)
        assert bias[budget].max() < 0.06, (budget, bias[budget])
    assert bias[160].max() <= 0.5 * bias[80].max(), bias
    # The points with doubt (recall at the 0.9 and 0.97 quantiles) each lose half their bias.
    assert np.all(bias[160][1:, 1] <= 0.5 * bias[80][1:, 1])


def test_the_curve_needs_a_known_run_and_a_level():
    truth, systems = synthetic_pool()
    state, design = _campaign(truth, systems, 40, np.random.default_rng(1))
    with pytest.raises(IndexError):
        design.curve(state, 9, level=0.95)
    with pytest.raises(ValueError, match="level"):
        design.curve(state, 0, level=1.0)
