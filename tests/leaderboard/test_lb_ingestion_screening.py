"""Screening a run's keys against the task's (pure): what looks malformed, when a run is junk, and
that every real febrl4 system run is not junk as a task's first run."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaderboard.ingestion.screening import (
    SCREEN_SAMPLE,
    KnownKeys,
    screen_keys,
    screened_indices,
)

SLICE = Path(__file__).resolve().parents[1] / "data" / "febrl4_slice"
TRUTH = SLICE.joinpath("truth.tsv").read_text().split()
SYSTEMS = sorted(SLICE.joinpath("systems").glob("*.tsv"))
FEBRL = KnownKeys.of(TRUTH[:30])  # a small reference sample: 30 true pairs


def keys_of(path: Path) -> list[str]:
    return [line.split("\t")[0] for line in path.read_text().splitlines()]


def none_exist(keys: list[str]) -> set[str]:
    return set()


@pytest.mark.parametrize("system", SYSTEMS, ids=lambda p: p.stem)
def test_no_real_first_run_is_junk(system):
    keys = keys_of(system)
    screen = screen_keys(keys, known=FEBRL, existing=none_exist)  # as if all its keys were new
    assert not screen.junk and screen.malformed == []
    assert not screen_keys(keys, known=KnownKeys.of([]), existing=none_exist).junk  # no items yet


def test_the_issues_keys_are_junk():
    keys = ["key,score", *(f"{k},0.9000" for k in keys_of(SYSTEMS[0]))]
    screen = screen_keys(keys, known=FEBRL, existing=none_exist)
    n = len(keys)
    assert screen.junk and len(screen.malformed) == n
    assert screen.summary() == (
        f"{n} of its {n} keys match no item of the task and look malformed: {n - 1} end in a "
        f"separator and a number (',0.9000'), {n} contain a comma (no item key does)"
    )
    first, second = screen.examples(keys)[:2]
    assert first == {
        "line": 1,
        "message": "key 'key,score' matches no item and looks malformed: contains a comma",
    }
    assert second == {
        "line": 2,
        "message": f"key {keys[1]!r} matches no item and looks malformed: ends in ',0.9000' "
        "and contains a comma",
    }
    assert len(screen.examples(keys)) == 10


@pytest.mark.parametrize(
    ("key", "marks"),
    [
        ("rec-1-org|rec-1-dup-0,0.9000", [("suffix", ",0.9000"), ("char", ",")]),
        ("rec-1-org|rec-1-dup-0;0.25", [("suffix", ";0.25"), ("char", ";")]),
        ("rec-1-org|rec-1-dup-0 0.5", [("suffix", " 0.5"), ("char", " ")]),
        ("rec-1-org|rec-1-dup-0|1.0", [("suffix", "|1.0")]),  # '|' is in the task's keys
        ('"rec-1-org|rec-1-dup-0"', [("char", '"')]),
        ("rec-1-org|rec-1-dup-0 ", [("char", " ")]),
        ("rec-1-org|rec-1-dup-0", []),
        ("rec-7-org|rec-12-dup-3", []),
        ("v1.2", []),  # a dot without a separator before it
    ],
)
def test_what_looks_malformed(key, marks):
    assert FEBRL.marks(key) == marks


def test_what_the_task_keys_have_is_not_malformed():
    spaced = KnownKeys.of(["Ada Lovelace, 1815", "Alan Turing, 1912"])
    assert spaced.marks("Grace Hopper, 1906") == []  # comma, space: the task's keys have them
    scored = KnownKeys.of(["model|0.5", "model|0.25"])
    assert scored.marks("model|0.75") == []  # the task's keys end like this too
    empty = KnownKeys.of([])
    assert empty.marks("a,b") == [] and empty.marks("a,0.5") == [("suffix", ",0.5")]


def test_most_keys_must_be_unmatched_and_malformed():
    good = [f"rec-{i}-org|rec-{i}-dup-0" for i in range(100)]
    bad = [f"{k},0.9" for k in good]
    assert not screen_keys(good[:51] + bad[:49], known=FEBRL, existing=none_exist).junk
    assert screen_keys(good[:49] + bad[:51], known=FEBRL, existing=none_exist).junk
    # Malformed keys that are items of the task (it has such keys) do not count.
    items = set(bad[:10])
    screen = screen_keys(good[:45] + bad[:55], known=FEBRL, existing=lambda keys: items)
    assert not screen.junk and len(screen.malformed) == 45


def test_the_task_is_asked_only_about_malformed_keys_and_only_when_it_matters():
    asked = []

    def existing(keys):
        asked.append(list(keys))
        return set()

    good = [f"rec-{i}-org|rec-{i}-dup-0" for i in range(100)]
    screen_keys(good, known=FEBRL, existing=existing)
    assert asked == []
    screen_keys([f"{k},0.9" for k in good[:60]] + good[60:], known=FEBRL, existing=existing)
    assert asked == [[f"{k},0.9" for k in good[:60]]]


def test_a_long_run_is_screened_on_a_sample():
    assert screened_indices(5) == [0, 1, 2, 3, 4]
    sample = screened_indices(1_000_000)
    assert len(sample) == SCREEN_SAMPLE and sample[0] == 0 and sample[-1] == 999_999
    keys = [f"rec-{i}-org|rec-{i}-dup-0,0.5" for i in range(10_000)]
    screen = screen_keys(keys, known=FEBRL, existing=none_exist)
    assert screen.junk and screen.n_screened == SCREEN_SAMPLE and screen.n_keys == 10_000
    assert screen.summary().startswith("2,000 of 2,000 keys sampled from its 10,000 match no item")
