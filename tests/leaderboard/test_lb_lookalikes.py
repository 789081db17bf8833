"""Lookalike names (issue 29, N10): what may be in a name, and the key lookalikes share."""

from __future__ import annotations

import pytest
from lookalike_names import LOOKALIKES_OF_TEAM_ALICE

from leaderboard.lookalikes import lookalike_keys, name_problem, skeleton, tidy_name


@pytest.mark.parametrize("name", LOOKALIKES_OF_TEAM_ALICE)
def test_lookalikes_share_a_key(name):
    assert set(lookalike_keys(name)) & set(lookalike_keys("Team Alice"))


@pytest.mark.parametrize(
    "name", ["team alicia", "team alice 2", "team josé", "Team Bob", "数据队", "team-alice"]
)
def test_different_names_keep_different_keys(name):
    assert not set(lookalike_keys(name)) & set(lookalike_keys("Team Alice"))
    assert not set(lookalike_keys("team josé")) & set(lookalike_keys("team jose"))


def test_case_and_shape_each_make_a_lookalike():
    assert lookalike_keys("Iris")[0] == lookalike_keys("iris")[0]  # case
    assert lookalike_keys("Iris")[1] == lookalike_keys("lris")[1]  # a capital I, a small L
    assert not set(lookalike_keys("iris")) & set(lookalike_keys("lris"))


def test_the_skeleton_maps_confusables_to_one_prototype_from_unicode_data():
    # confusables.txt: Cyrillic a, Greek omicron and a digit zero's classes, "rn" for "m".
    assert skeleton("\u0430") == skeleton("a")
    assert skeleton("\u03bf") == skeleton("o")
    assert skeleton("0") == skeleton("O")
    assert skeleton("m") == "rn"


@pytest.mark.parametrize(
    "name",
    ["team\nalice", "team\talice", "team\x00", "team \u202ealice", "a\u2066b", "a\u2028b"],
)
def test_control_and_bidirectional_characters_are_refused(name):
    assert name_problem(name) is not None


def test_white_space_is_tidied_and_visible_names_are_accepted():
    assert tidy_name("  Team\u00a0 Alice ") == "Team Alice"
    assert name_problem("Équipe 数据 👩‍🔬") is None
