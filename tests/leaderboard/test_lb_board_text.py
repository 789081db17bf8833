"""The board's plain words (leaderboard.board_text): one rank notation, the reference sample
recall rests on, and run states that say what was met."""

from __future__ import annotations

import pytest

from evaluation.core.measures import OPEN_MEASURES
from leaderboard.board_text import (
    ReferenceSupport,
    RunWords,
    SnapshotTerms,
    rank_of,
    rank_text,
)
from leaderboard.models import LeaderboardSnapshot, Run, Task
from leaderboard.presenters import RankInterval
from leaderboard.selectors import REFERENCE_MIN_DOCUMENTS, REFERENCE_MIN_ITEMS

DASH = "\u2013"


# -- one rank notation -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("best", "worst", "text"),
    [
        (1, 1, "1"),  # a settled place
        (7, 7, "7"),
        (2, 5, f"2{DASH}5"),  # a range
        (1, 4, f"1{DASH}4"),  # tied at the top: the range, not "tied for 1st"
        (11, 13, f"11{DASH}13"),
    ],
)
def test_a_rank_is_one_number_or_a_range_with_an_en_dash(best, worst, text):
    assert rank_text(best, worst) == text
    assert RankInterval(best, worst).text == text


@pytest.mark.parametrize(
    ("stored", "interval"),
    [
        ({"best": 2, "worst": 5}, (2, 5)),
        ({"best": "3", "worst": 3}, (3, 3)),
        ({"best": 4, "worst": 2}, (4, 4)),  # worst before best: read as the one place
        (None, None),  # a run without a value
        ({}, None),
        ({"best": None, "worst": None}, None),
        ({"best": "x", "worst": 2}, None),
        ("1-2", None),
    ],
)
def test_a_stored_rank_is_read_or_missing(stored, interval):
    assert rank_of(stored) == interval
    shown = RankInterval.from_row(stored)
    assert (None if shown is None else (shown.best, shown.worst)) == interval


def test_a_tied_ranks_tooltip_says_tied():
    assert RankInterval(1, 3).title == "tied: could rank anywhere from 1st to 3rd"
    assert RankInterval(2, 2).title == "ranks 2nd"


# -- the reference sample recall rests on ------------------------------------------------------
def test_an_empty_reference_sample_says_recall_cannot_be_estimated():
    empty = ReferenceSupport(0, 0)
    assert not empty.enough
    assert empty.text == "no reference sample yet: recall cannot be estimated"
    assert empty.note == "recall not settled: no reference sample yet"


@pytest.mark.parametrize(
    ("items", "documents", "text", "note"),
    [
        (
            6,
            12,
            "recall rests on 6 reference items in 12 documents (30 needed)",
            "recall not settled: 6 of 30 reference items",
        ),
        (
            1,
            1,
            "recall rests on 1 reference item in 1 document (30 items in 10 documents needed)",
            "recall not settled: 1 of 30 reference items, 1 of 10 documents",
        ),
        (
            40,
            3,
            "recall rests on 40 reference items in 3 documents (10 documents needed)",
            "recall not settled: 3 of 10 documents",
        ),
        (  # documents not counted
            6,
            None,
            "recall rests on 6 reference items (30 needed)",
            "recall not settled: 6 of 30 reference items",
        ),
    ],
)
def test_a_small_reference_sample_says_what_recall_rests_on_and_what_is_needed(
    items, documents, text, note
):
    support = ReferenceSupport(items, documents)
    assert not support.enough and (support.text, support.note) == (text, note)


def test_the_minimum_is_the_selectors_and_meeting_it_is_enough():
    assert (REFERENCE_MIN_ITEMS, REFERENCE_MIN_DOCUMENTS) == (30, 10)
    at_minimum = ReferenceSupport(REFERENCE_MIN_ITEMS, REFERENCE_MIN_DOCUMENTS)
    assert at_minimum.enough
    assert at_minimum.text == "recall rests on 30 reference items in 10 documents"
    assert at_minimum.note == ""
    assert not ReferenceSupport(REFERENCE_MIN_ITEMS - 1, 50).enough
    assert not ReferenceSupport(500, REFERENCE_MIN_DOCUMENTS - 1).enough
    # A snapshot from before documents were counted is judged on its items.
    assert ReferenceSupport(1200, None).enough
    assert ReferenceSupport(1200, None).as_dict() == {
        "items": 1200,
        "documents": None,
        "min_items": 30,
        "min_documents": 10,
        "enough": True,
        "text": "recall rests on 1,200 reference items",
    }


def test_only_recall_and_f1_of_an_open_task_rest_on_the_reference_sample():
    tiny = SnapshotTerms(target=0.05, reference=ReferenceSupport(6, 3))
    assert [m for m in OPEN_MEASURES if tiny.reference_short(m)] == ["recall", "f1"]
    assert (
        tiny.reference_note("recall")
        == "recall not settled: 6 of 30 reference items, 3 of 10 documents"
    )
    assert tiny.reference_note("precision") == ""
    enough = SnapshotTerms(target=0.05, reference=ReferenceSupport(60, 20))
    assert not any(enough.reference_short(m) for m in OPEN_MEASURES)
    pool = SnapshotTerms(target=0.05, measures=("recall", "mcc"), closed_pool=True)
    assert not pool.reference_short("recall")  # a closed pool's recall needs no reference


# -- run states that say what was met ----------------------------------------------------------
ENOUGH = ReferenceSupport(60, 20)
TERMS = SnapshotTerms(target=0.05, reference=ENOUGH)


def row(precision=(0.80, 0.76, 0.842)):
    value, low, high = precision
    return {"precision": {"value": value, "low": low, "high": high}}


@pytest.mark.parametrize(
    ("state", "outcome", "text"),
    [
        ("scored", "met", "precision ±0.041, target ±0.05: met"),
        ("partial", "budget_exhausted", "budget spent: precision ±0.041, target ±0.05"),
        (
            "partial",
            "annotator_limited",
            "annotators' error rates still uncertain: precision ±0.041, target ±0.05",
        ),
        (
            "partial",
            "gave_up",
            "planning stopped after its last round: precision ±0.041, target ±0.05",
        ),
        # The outcome is held from participants while the board is held: the numbers still say it.
        ("partial", None, "target not met: precision ±0.041, target ±0.05"),
    ],
)
def test_a_finished_runs_state_says_what_was_met(state, outcome, text):
    assert TERMS.state_text(state, outcome=outcome, row=row()) == text


def test_a_scored_run_wider_than_the_target_says_why_it_was_scored():
    wide = row((0.8, 0.7, 0.824))  # +-0.062
    assert (
        TERMS.state_text("scored", outcome="exhausted", row=wide)
        == "every predicted item verified: precision ±0.062, target ±0.05"
    )
    assert TERMS.state_text("scored", outcome="met", row=wide) == (
        "scored at precision ±0.062, target ±0.05"
    )


def test_without_a_row_the_state_still_says_the_target():
    assert TERMS.state_text("scored", row=None) == "precision within the target ±0.05: met"
    assert TERMS.state_text("partial", outcome="budget_exhausted") == (
        "budget spent: target ±0.05 not reached"
    )


def test_a_closed_pool_is_held_to_its_widest_measure():
    pool = SnapshotTerms(target=0.05, measures=("f1", "mcc"), closed_pool=True)
    pool_row = {
        "f1": {"value": 0.7, "low": 0.68, "high": 0.72},
        "mcc": {"value": 0.5, "low": 0.43, "high": 0.55},
    }
    assert pool.state_text("partial", outcome="budget_exhausted", row=pool_row) == (
        "budget spent: widest interval ±0.060, target ±0.05"
    )


def test_a_finished_run_never_reads_as_met_on_a_tiny_reference_sample():
    tiny = SnapshotTerms(target=0.05, reference=ReferenceSupport(6, 3))
    assert tiny.state_text("scored", outcome="met", row=row()) == (
        "precision ±0.041, target ±0.05: met; "
        "recall not settled: 6 of 30 reference items, 3 of 10 documents"
    )
    empty = SnapshotTerms(target=0.05, reference=ReferenceSupport(0, 0))
    assert empty.state_text("partial", outcome="budget_exhausted", row=row()).endswith(
        "; recall not settled: no reference sample yet"
    )


@pytest.mark.parametrize(
    ("state", "text"),
    [
        ("received", "received: the file waits to be checked"),
        ("validating", "checking the file"),
        ("rejected", "rejected: the file has problems, by line on the run's page"),
        ("queued", "accepted: waiting for its items to be chosen"),
        ("planning", "choosing items for the annotators to verify"),
        ("awaiting_labels", "waiting for the annotators"),
        ("estimating", "computing its final scores"),
        ("failed", "failed on the platform's side; the submission is refunded"),
        ("some_new_state", "some new state"),  # a state added later still reads as words
    ],
)
def test_every_other_state_has_words(state, text):
    tiny = SnapshotTerms(target=0.05, reference=ReferenceSupport(6, 3))
    assert tiny.state_text(state, row=row()) == text  # no reference rider: nothing is claimed


def test_every_run_state_has_its_own_words():
    texts = {TERMS.state_text(state, outcome="met", row=row()) for state in Run.State.values}
    assert len(texts) == len(Run.State.values)


def test_awaiting_labels_says_how_far_verification_has_got():
    assert TERMS.state_text("awaiting_labels", n_verified=312, n_requested=1480) == (
        "waiting for the annotators: 312 of 1,480 items verified"
    )


# -- terms read from a stored snapshot ---------------------------------------------------------
@pytest.mark.django_db
def test_terms_come_from_the_snapshot_and_fall_back_to_the_task(task):
    snapshot = LeaderboardSnapshot(
        task=task,
        n_reference=6,
        n_reference_documents=2,
        details={"target_half_width": 0.03},
    )
    terms = SnapshotTerms.of(task, snapshot)
    assert (terms.target, terms.reference, terms.closed_pool) == (
        0.03,
        ReferenceSupport(6, 2),
        False,
    )
    old = LeaderboardSnapshot(task=task, n_reference=50, details={})  # before the target was kept
    assert SnapshotTerms.of(task, old).target == task.target_half_width
    pool = LeaderboardSnapshot(
        task=task, n_reference=0, details={"closed_pool": {"measures": ["mcc"]}}
    )
    pool_terms = SnapshotTerms.of(task, pool)
    assert pool_terms.closed_pool and pool_terms.reference is None
    assert pool_terms.measures == ("mcc",)
    none_yet = SnapshotTerms.of(task, None)
    assert none_yet.reference is None and none_yet.target == task.target_half_width
    task.kind, task.measures = Task.Kind.CLOSED_POOL, ["precision", "recall", "f1"]
    assert SnapshotTerms.of(task, None).closed_pool


@pytest.mark.django_db
def test_run_words_read_a_runs_state_against_its_snapshot_row(task, team):
    run = Run.objects.create(task=task, team=team, name="r", state="partial", outcome="gave_up")
    snapshot = LeaderboardSnapshot(
        task=task,
        n_reference=40,
        n_reference_documents=12,
        details={"target_half_width": 0.05},
        rows=[{"run": run.pk, **row((0.5, 0.4, 0.6))}, "not a row"],
    )
    words = RunWords.of(task, snapshot)
    assert words.state_text(run) == (
        "planning stopped after its last round: precision ±0.100, target ±0.05"
    )
    assert RunWords.of(task, None).state_text(run) == (
        "planning stopped after its last round: target ±0.05 not reached"
    )
