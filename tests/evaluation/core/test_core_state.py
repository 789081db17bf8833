"""Tests for evaluation.core.state (TaskState, RunData, ReferenceSample) and core.results."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluation.core.results import IntervalEstimate, Plan, RunEstimate
from evaluation.core.state import UNKNOWN, ReferenceSample, RunData, TaskState

# --------------------------------------------------------------------------- items and labels


def test_new_state_is_empty_and_unknown():
    state = TaskState(4)
    assert state.n_items == 4
    assert state.labels.dtype == np.int8
    assert state.labels.tolist() == [UNKNOWN] * 4 == [-1] * 4
    assert state.in_union.tolist() == [False] * 4
    assert state.n_labelled == 0
    assert state.n_runs == 0
    assert state.reference.size == 0
    assert TaskState().n_items == 0


def test_negative_sizes_are_rejected():
    with pytest.raises(ValueError):
        TaskState(-1)
    with pytest.raises(ValueError):
        TaskState(2).add_items(-1)


def test_add_items_returns_new_ids_and_grows_arrays():
    state = TaskState(3)
    state.set_labels([1], [1])
    ids = state.add_items(4)
    assert ids.dtype == np.int64
    assert ids.tolist() == [3, 4, 5, 6]
    assert state.n_items == 7
    assert state.labels.tolist() == [-1, 1, -1, -1, -1, -1, -1]
    assert state.in_union.shape == (7,)
    assert state.add_items(0).tolist() == []
    assert state.n_items == 7


def test_add_items_grows_design_records():
    class Record:
        def __init__(self):
            self.calls = []

        def grow(self, n):
            self.calls.append(n)

    state = TaskState(2)
    rec = Record()
    state.design_state["x"] = rec
    state.design_state["plain"] = object()  # no grow(): ignored
    state.add_items(3)
    state.add_items(1)
    assert rec.calls == [5, 6]


def test_set_labels_and_n_labelled():
    state = TaskState(6)
    state.set_labels([0, 2, 5], [1, 0, True])
    assert state.labels.tolist() == [1, -1, 0, -1, -1, 1]
    assert state.n_labelled == 3
    state.set_labels(np.array([3, 4]), np.array([False, True]))
    assert state.labels.tolist() == [1, -1, 0, 0, 1, 1]
    assert state.n_labelled == 5
    # relabelling an item does not count it twice
    state.set_labels([0], [0])
    assert state.labels[0] == 0
    assert state.n_labelled == 5
    state.set_labels([], [])
    assert state.n_labelled == 5


@pytest.mark.parametrize(
    ("items", "values"),
    [
        ([0, 1], [1, 2]),  # not a 0/1 label
        ([0], [-1]),  # UNKNOWN cannot be set
        ([0], [0.5]),  # fractional
        ([0, 1], [1]),  # length mismatch
        ([0], [1, 0]),  # length mismatch
    ],
)
def test_set_labels_rejects_bad_values(items, values):
    state = TaskState(3)
    with pytest.raises(ValueError):
        state.set_labels(items, values)
    assert state.labels.tolist() == [-1, -1, -1]


@pytest.mark.parametrize("items", [[3], [-1], [0, 7]])
def test_set_labels_rejects_unknown_items(items):
    state = TaskState(3)
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        state.set_labels(items, [1] * len(items))


# --------------------------------------------------------------------------- runs


def test_add_run_sorts_items_and_scores_follow():
    state = TaskState(10)
    items = np.array([7, 2, 9, 0])
    scores = np.array([0.7, 0.2, 0.9, 0.0])
    index = state.add_run(items, scores, name="sys-a")
    assert index == 0
    run = state.runs[0]
    assert isinstance(run, RunData)
    assert run.items.tolist() == [0, 2, 7, 9]
    assert run.scores.tolist() == [0.0, 0.2, 0.7, 0.9]
    assert run.items.dtype == np.int64 and run.scores.dtype == np.float64
    assert run.name == "sys-a"
    assert run.size == 4
    assert state.in_union.tolist() == [i in (0, 2, 7, 9) for i in range(10)]
    # the caller's arrays are untouched and still writable
    assert items.tolist() == [7, 2, 9, 0] and items.flags.writeable
    assert scores.tolist() == [0.7, 0.2, 0.9, 0.0] and scores.flags.writeable
    # second run: index 1, in_union is the union of both runs
    assert state.add_run([1, 2]) == 1
    assert state.n_runs == 2
    assert state.runs[1].scores.tolist() == [1.0, 1.0]  # default score
    assert int(state.in_union.sum()) == 5


def test_run_arrays_are_read_only():
    state = TaskState(5)
    state.add_run([3, 1], [0.5, 0.25])
    run = state.runs[0]
    assert not run.items.flags.writeable
    assert not run.scores.flags.writeable
    with pytest.raises(ValueError):
        run.items[0] = 4
    with pytest.raises(ValueError):
        run.scores[0] = 1.0
    with pytest.raises(AttributeError):  # frozen dataclass
        run.name = "other"


def test_duplicate_items_in_a_run_are_rejected():
    state = TaskState(5)
    with pytest.raises(ValueError, match="same item twice"):
        state.add_run([1, 3, 1], [0.1, 0.2, 0.3])
    assert state.n_runs == 0
    assert not state.in_union.any()


@pytest.mark.parametrize("bad", [-0.01, 1.0001, float("nan"), float("inf"), -float("inf")])
def test_scores_outside_unit_interval_are_rejected(bad):
    state = TaskState(3)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        state.add_run([0, 1], [0.5, bad])
    assert state.n_runs == 0


def test_scores_at_the_ends_are_fine():
    state = TaskState(3)
    state.add_run([0, 1], [0.0, 1.0])
    assert state.runs[0].scores.tolist() == [0.0, 1.0]


def test_score_length_must_match():
    with pytest.raises(ValueError, match="same length"):
        TaskState(3).add_run([0, 1], [0.5])


def test_empty_run_is_rejected():
    state = TaskState(3)
    with pytest.raises(ValueError, match="at least one item"):
        state.add_run([])
    with pytest.raises(ValueError, match="at least one item"):
        state.add_run(np.array([], dtype=np.int64), np.array([]))
    assert state.n_runs == 0


@pytest.mark.parametrize("items", [[0, 3], [-1, 0], [100]])
def test_run_items_out_of_range_are_rejected(items):
    state = TaskState(3)
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        state.add_run(items)
    assert state.n_runs == 0
    assert not state.in_union.any()


def test_items_added_later_can_be_used():
    state = TaskState(2)
    with pytest.raises(ValueError):
        state.add_run([2])
    state.add_items(1)
    state.add_run([2])
    assert state.in_union.tolist() == [False, False, True]


# --------------------------------------------------------------------------- reference


def test_set_reference_without_groups_uses_singletons():
    state = TaskState(8)
    state.set_reference([6, 1, 4])
    ref = state.reference
    assert isinstance(ref, ReferenceSample)
    assert ref.items.tolist() == [6, 1, 4]
    assert ref.groups.tolist() == [0, 1, 2]
    assert ref.groups.dtype == np.int64
    assert ref.size == 3


def test_set_reference_with_groups_copies_inputs():
    state = TaskState(8)
    items = np.array([6, 1, 4, 2])
    groups = np.array([10, 10, 3, 3])
    state.set_reference(items, groups)
    items[0] = 0
    groups[0] = 99
    assert state.reference.items.tolist() == [6, 1, 4, 2]
    assert state.reference.groups.tolist() == [10, 10, 3, 3]
    # replacing the sample
    state.set_reference([5])
    assert state.reference.items.tolist() == [5]
    assert state.reference.groups.tolist() == [0]


def test_set_reference_validation():
    state = TaskState(4)
    with pytest.raises(ValueError, match="same length"):
        state.set_reference([0, 1], [0])
    with pytest.raises(ValueError, match=r"\[0, 4\)"):
        state.set_reference([0, 4])
    assert state.reference.size == 0


# --------------------------------------------------------------------------- results


def make_estimate(value=0.5, low=0.4, high=0.7, level=0.95) -> IntervalEstimate:
    return IntervalEstimate(value, low, high, level, "test/clopper-pearson", 12)


def test_estimate_half_width():
    assert make_estimate().half_width == pytest.approx(0.15)
    assert make_estimate(0.0, 0.0, 1.0).half_width == 0.5
    assert make_estimate(0.3, 0.3, 0.3).half_width == 0.0


def test_estimate_covers_is_closed_with_tolerance():
    e = make_estimate()
    assert e.covers(0.4) and e.covers(0.7) and e.covers(0.55)
    assert e.covers(0.4 - 1e-13) and e.covers(0.7 + 1e-13)  # rounding tolerance 1e-12
    assert not e.covers(0.4 - 1e-9)
    assert not e.covers(0.7 + 1e-9)
    assert not e.covers(0.0)
    assert not e.covers(float("nan"))


def test_estimate_exact():
    assert make_estimate(0.3, 0.3, 0.3).exact
    assert not make_estimate().exact
    assert not make_estimate(0.3, 0.3, 0.3 + 1e-15).exact


def test_estimate_is_frozen_and_nan_value_allowed():
    e = make_estimate(float("nan"), 0.0, 1.0)
    assert math.isnan(e.value)
    assert e.half_width == 0.5
    assert e.covers(0.99)
    with pytest.raises(AttributeError):
        e.value = 0.1


def test_run_estimate_metric():
    p, r, f = make_estimate(0.9), make_estimate(0.6), make_estimate(0.72)
    est = RunEstimate(3, p, r, f)
    assert est.metric("precision") is p
    assert est.metric("recall") is r
    assert est.metric("f1") is f
    for bad in ("F1", "accuracy", "run", "", "__class__"):
        with pytest.raises(KeyError):
            est.metric(bad)


@pytest.mark.parametrize(
    ("status", "done"),
    [("sample", False), ("met", True), ("budget_exhausted", True), ("exhausted", True)],
)
def test_plan_done(status, done):
    plan = Plan(run=0, round=1, items=np.array([1, 2]), status=status)
    assert plan.done is done


def test_plan_defaults():
    plan = Plan(run=2, round=3, items=np.array([], dtype=np.int64), status="met")
    assert math.isnan(plan.predicted_half_width)
    assert math.isnan(plan.current_half_width)
    assert plan.expected_labels == 0.0
    assert plan.seed is None
    assert plan.details == {}
    other = Plan(run=2, round=3, items=np.array([]), status="met")
    assert plan.details is not other.details  # no shared mutable default


def test_labels_are_read_only_and_cleared_through_the_state():
    state = TaskState(3)
    state.set_labels([0, 1], [1, 0])
    with pytest.raises(ValueError):
        state.labels[0] = 0
    version = state.labels_version
    state.clear_labels()
    assert state.labels.tolist() == [-1, -1, -1] and state.labels_version != version


def test_judgments_and_gold_are_recorded_and_validated():
    state = TaskState(4)
    state.add_judgments([0, 0, 1], [7, 8, 7], [True, False, True])
    assert state.n_judgments == 3 and state.judged.tolist() == [True, True, False, False]
    assert state.n_labelled == 2
    with pytest.raises(ValueError, match="twice"):
        state.add_judgments([0], [8], [True])
    with pytest.raises(ValueError, match="same length"):
        state.add_judgments([2, 3], [1], [True, False])
    with pytest.raises(ValueError, match="0/1"):
        state.add_judgments([2], [1], [2])
    with pytest.raises(ValueError, match=r"\[0, 4\)"):
        state.add_judgments([4], [1], [True])
    assert state.n_judgments == 3  # nothing of a refused call was kept
    state.set_gold([3, 2], [True, False])
    assert state.gold.items.tolist() == [2, 3] and state.gold.answers.tolist() == [False, True]
    with pytest.raises(ValueError, match="twice"):
        state.set_gold([1, 1], [True, True])


def test_a_fork_does_not_see_judgments_added_to_it():
    state = TaskState(3)
    state.add_judgments([0], [1], [True])
    fork = state.fork()
    fork.add_judgments([1], [1], [False])
    assert state.n_judgments == 1 and fork.n_judgments == 2
    assert not state.judged[1] and fork.judged[1]
