"""Look rules: doubtful answer patterns per band, looks owed task-wide, a new item's noise."""

import numpy as np

from evaluation.core.designs.record import SamplingRecord
from evaluation.core.designs.second_looks import (
    HIGH,
    LOW,
    MIXED,
    _doubtful,
    band_of_rates,
    due_looks,
    noise_profile,
)
from evaluation.core.labels import item_labels
from evaluation.core.state import TaskState


def test_bands_follow_the_rate():
    assert band_of_rates(np.array([0.0, 0.19, 0.5, 0.81, 1.0])).tolist() == [
        LOW,
        LOW,
        MIXED,
        HIGH,
        HIGH,
    ]


def test_doubtful_patterns_are_the_surprising_answers_of_each_band():
    patterns = [(1, 0), (0, 1), (1, 1), (2, 0), (0, 2)]
    # HIGH: an "incorrect", a tie, even two "incorrect" (1 in 20 is still correct); LOW: mirror.
    assert _doubtful(patterns, 0.95, 0.95, 0.95) == [(0, 1), (1, 1), (0, 2)]
    assert _doubtful(patterns, 0.05, 0.95, 0.95) == [(1, 0), (1, 1), (2, 0)]
    assert _doubtful(patterns, 0.5, 0.95, 0.95) == [(1, 1)]  # MIXED: only a tie
    # Perfect annotators: no answer they give is doubtful (a tie, which they never give, is).
    assert _doubtful(patterns, 0.95, 1 - 1e-9, 1 - 1e-9) == [(1, 1)]


def test_noise_profile_is_neutral_for_exact_labels_and_priced_otherwise():
    rates = np.array([0.02, 0.5, 0.98])
    inflation, cost = noise_profile(
        rates, sensitivity=1.0, specificity=1.0, judgments=1, max_judgments=3
    )
    assert (inflation == 1).all() and (cost == 1).all()
    none, plain = noise_profile(
        rates, sensitivity=0.95, specificity=0.95, judgments=1, max_judgments=3
    )
    patterns = (frozenset({(1, 0)}), frozenset({(1, 1)}), frozenset({(0, 1)}))
    looked, priced = noise_profile(
        rates, sensitivity=0.95, specificity=0.95, judgments=1, max_judgments=3, patterns=patterns
    )
    assert (none > 1).all() and (plain == 1).all()
    # A look on the surprising answer of a nearly pure stratum buys most of its information
    # back for a few percent more judgments.
    assert looked[0] < none[0] / 2 and looked[2] < none[2] / 2
    assert 1.0 < priced[0] < 1.2 and 1.0 < priced[2] < 1.2


def test_due_looks_are_every_item_of_a_band_at_a_switched_on_pattern():
    state = TaskState(8)
    rec = SamplingRecord(np.zeros(8), np.zeros(8, bool))
    rec.grow(8)
    rec.add_run(np.arange(8), np.array([0, 0, 0, 0, 1, 1, 1, 1], np.int8))
    rec.request(np.arange(8), 1)
    rec.give_bands(np.array([0, 1]), np.array([HIGH, LOW], np.int8))
    rec.switch_on(HIGH, [(0, 1)])
    rec.switch_on(LOW, [(1, 0)])
    says = [True, False, False, True, True, False, True, False]
    state.add_judgments(np.arange(8), np.zeros(8, np.int64), says)
    labels = item_labels(state, item_class=rec.cell)
    # HIGH cell (items 0-3): the "incorrect" ones; LOW cell (4-7): the "correct" ones.
    assert due_looks(labels, rec, max_judgments=3).tolist() == [1, 2, 4, 6]
    rec.ask(np.array([1, 2]))  # asked, not answered yet: not owed again
    assert due_looks(labels, rec, max_judgments=3).tolist() == [4, 6]
    assert due_looks(labels, rec, max_judgments=1).tolist() == []
