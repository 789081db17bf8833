"""A run's precision when its only verified items were sampled with certainty: the bounds must
still cover the truth once those items' labels come from fallible annotators."""

import numpy as np
import pytest

from evaluation.core.designs.precision import stratified_precision
from evaluation.core.labels import item_labels
from evaluation.core.state import TaskState

RUN, CERTAIN, GOLD = 120, 40, 40


def _bounds_only_precision(seed, run_truth, *, accuracy, level=0.95):
    """A run of ``RUN`` items whose first ``CERTAIN`` were verified at ``pi = 1`` (one judgment
    each by one of five annotators of ``accuracy``), the rest at ``pi = 0.1`` and not drawn; gold
    items (half correct) judged twice anchor the annotators."""
    rng = np.random.default_rng(seed)
    n = RUN + GOLD
    state = TaskState(n)
    gold = np.arange(RUN, n)
    gold_truth = np.arange(GOLD) % 2 == 0
    state.set_gold(gold, gold_truth)
    truth = np.concatenate([run_truth, gold_truth])
    judged = np.concatenate([np.arange(CERTAIN), np.repeat(gold, 2)])
    right = rng.random(judged.size) < accuracy
    says = np.where(right, truth[judged], ~truth[judged])
    first = rng.integers(0, 5, CERTAIN + GOLD)
    second = (first[CERTAIN:] + rng.integers(1, 5, GOLD)) % 5
    who = np.concatenate([first[:CERTAIN], np.column_stack([first[CERTAIN:], second]).ravel()])
    state.add_judgments(judged, who, says)
    labels = item_labels(state, item_class=np.zeros(n, np.int64))
    inclusion = np.full(n, 0.1)
    inclusion[:CERTAIN] = 1.0
    known = np.zeros(n, bool)
    known[:CERTAIN] = True
    parts = stratified_precision(
        np.arange(RUN),
        np.zeros(RUN, np.int64),
        np.array([float(RUN)]),
        inclusion,
        known,
        labels,
        covered=True,
        level=level,
        interval="clopper-pearson",
    )
    return parts.estimate


@pytest.mark.parametrize("correct_share", [pytest.param(1.0, marks=pytest.mark.slow), 0.8])
def test_bounds_of_a_run_verified_only_with_certainty_cover_with_fallible_annotators(
    correct_share,
):
    rng = np.random.default_rng(7)
    covered, reps = 0, 200
    for seed in range(reps):
        truth = rng.random(RUN) < correct_share
        est = _bounds_only_precision(seed, truth, accuracy=0.9)
        assert est.method == "bounds-only" and np.isnan(est.value)
        precision = truth.mean()
        covered += est.low - 1e-9 <= precision <= est.high + 1e-9
    # Before the verified part's labels carried their noise, a run of precision 1 was covered
    # in 0 of 200 (its upper bound was the posterior sum, below 1); 0.93 is 3 Monte-Carlo
    # standard errors under 0.95 at 200 replicates.
    assert covered / reps >= 0.93


def test_bounds_with_exact_labels_are_the_worst_cases_of_the_unverified_items():
    state = TaskState(10)
    state.set_labels([0, 1, 2, 3], [1, 1, 0, 1])
    labels = item_labels(state, item_class=np.zeros(10, np.int64))
    inclusion = np.full(10, 0.2)
    inclusion[:4] = 1.0
    known = np.zeros(10, bool)
    known[:4] = True
    est = stratified_precision(
        np.arange(10),
        np.zeros(10, np.int64),
        np.array([10.0]),
        inclusion,
        known,
        labels,
        covered=True,
        level=0.95,
        interval="clopper-pearson",
    ).estimate
    assert est.method == "bounds-only"
    assert (est.low, est.high) == (0.3, 0.9)
