"""Measures of a closed-pool run as functions of (tp, fn): against direct confusion counts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluation.core.closed_pool import (
    CLOSED_POOL_MEASURES,
    PoolState,
    f_beta_label,
    measure_beta,
    measure_gradient,
    measure_value,
)


def _direct(name: str, y: np.ndarray, f: np.ndarray, beta: float = 1.0) -> float:
    tp = float(np.sum(y & f))
    fp = float(np.sum(~y & f))
    fn = float(np.sum(y & ~f))
    tn = float(np.sum(~y & ~f))
    if name == "precision":
        return tp / (tp + fp)
    if name == "recall":
        return tp / (tp + fn)
    if name in ("f1", "fbeta"):
        b2 = beta * beta
        return (1 + b2) * tp / ((1 + b2) * tp + b2 * fn + fp)
    if name == "accuracy":
        return (tp + tn) / y.size
    if name == "balanced_accuracy":
        return 0.5 * (tp / (tp + fn) + tn / (tn + fp))
    denom = math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return (tp * tn - fp * fn) / denom


@pytest.mark.parametrize("name", CLOSED_POOL_MEASURES)
@pytest.mark.parametrize("beta", [1.0, 0.5, 2.0])
def test_every_measure_equals_its_confusion_matrix_definition(name, beta):
    rng = np.random.default_rng(11)
    for _ in range(20):
        n = int(rng.integers(20, 200))
        y = rng.random(n) < rng.uniform(0.05, 0.6)
        f = np.where(rng.random(n) < 0.7, y, ~y)
        y[0], f[0], y[1], f[1] = True, True, False, False  # every cell of the matrix non-empty
        tp, fn, pp = np.sum(y & f), np.sum(y & ~f), np.sum(f)
        got = float(measure_value(name, tp, fn, pp=pp, n=n, beta=beta))
        assert got == pytest.approx(_direct(name, y, f, beta), rel=1e-12)


def test_undefined_measures_are_nan_not_an_error():
    assert math.isnan(measure_value("recall", 0, 0, pp=3, n=10))
    assert math.isnan(measure_value("precision", 0, 2, pp=0, n=10))
    # F1 of a run that predicts nothing on a pool with positives is 0, not undefined.
    assert measure_value("f1", 0, 2, pp=0, n=10) == 0.0


def test_unknown_measure_is_named():
    with pytest.raises(KeyError, match="auc"):
        measure_value("auc", 1, 1, pp=2, n=10)


@pytest.mark.parametrize("name", CLOSED_POOL_MEASURES)
def test_gradient_matches_the_analytic_derivatives(name):
    tp, fn, pp, n = 30.0, 12.0, 45.0, 1000.0
    d_tp, d_fn = measure_gradient(name, tp, fn, pp=pp, n=n)
    analytic = {
        "precision": (1 / pp, 0.0),
        "recall": (fn / (tp + fn) ** 2, -tp / (tp + fn) ** 2),
        "f1": (2 * (pp + fn) / (pp + tp + fn) ** 2, -2 * tp / (pp + tp + fn) ** 2),
        "accuracy": (1 / n, -1 / n),
    }
    if name in analytic:
        assert (float(d_tp), float(d_fn)) == pytest.approx(analytic[name], rel=1e-6, abs=1e-12)
    else:  # checked against a wider central difference
        h = 1e-3
        num_tp = (
            measure_value(name, tp + h, fn, pp=pp, n=n)
            - measure_value(name, tp - h, fn, pp=pp, n=n)
        ) / (2 * h)
        num_fn = (
            measure_value(name, tp, fn + h, pp=pp, n=n)
            - measure_value(name, tp, fn - h, pp=pp, n=n)
        ) / (2 * h)
        assert (float(d_tp), float(d_fn)) == pytest.approx((num_tp, num_fn), rel=1e-5)


def test_pool_state_keeps_runs_and_labels():
    state = PoolState(5)
    run = state.add_run([0.1, 0.9, 0.5, 0.0, 1.0], [0, 1, 1, 0, 1], name="a")
    assert run == 0 and state.runs[0].predicted_positives == 3
    state.set_labels([1, 3], [1, 0])
    assert state.labels.tolist() == [-1, 1, -1, 0, -1]
    assert state.n_labelled == 2
    with pytest.raises(ValueError, match="every one of the 5"):
        state.add_run([0.5] * 4, [1] * 4)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        state.add_run([0.5, 0.5, 0.5, 0.5, 1.5], [1] * 5)
    with pytest.raises(IndexError):
        state.set_labels([5], [1])


@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0, 3.0])
def test_f_beta_is_the_direct_formula_and_f1_at_beta_one(beta):
    rng = np.random.default_rng(5)
    n = 500
    y = rng.random(n) < 0.1
    f = np.where(rng.random(n) < 0.8, y, ~y)
    tp, fp, fn = np.sum(y & f), np.sum(~y & f), np.sum(y & ~f)
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    # van Rijsbergen's definition: the weighted harmonic mean of precision and recall.
    direct = (1 + beta**2) * precision * recall / (beta**2 * precision + recall)
    got = float(measure_value("fbeta", tp, fn, pp=tp + fp, n=n, beta=beta))
    assert got == pytest.approx(direct, rel=1e-12)
    f1 = float(measure_value("f1", tp, fn, pp=tp + fp, n=n))
    assert (got == pytest.approx(f1, rel=1e-12)) == (beta == 1.0)
    # Its gradient is F1's at beta = 1 (one function, not a copy).
    if beta == 1.0:
        assert measure_gradient("fbeta", tp, fn, pp=tp + fp, n=n) == measure_gradient(
            "f1", tp, fn, pp=tp + fp, n=n
        )


def test_a_design_computes_f1_at_beta_one_and_f_beta_at_its_beta():
    assert measure_beta("f1", 2.0) == 1.0 and measure_beta("fbeta", 2.0) == 2.0
    assert measure_beta("precision", 0.5) == 1.0
    assert [f_beta_label(b) for b in (0.5, 1, 2.0, 0.25)] == ["F0.5", "F1", "F2", "F0.25"]
