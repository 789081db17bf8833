"""A run's precision post-strata: score stratum by agreement, thin levels merged by a map."""

import numpy as np

from evaluation.core.designs.record import (
    AGREEMENT_LEVELS,
    SamplingRecord,
    agreement_level,
    level_groups,
)


def _record() -> SamplingRecord:
    """Run 0 predicts items 0-10 (stratum 0: items 0-5, stratum 1: items 6-10); runs 1 and 2
    predict items 0-3 and 10, which are therefore at agreement level 1 (three runs) in run 0."""
    rec = SamplingRecord(np.zeros(11), np.zeros(11, bool))
    rec.grow(11)
    rec.add_run(np.arange(11), np.array([0] * 6 + [1] * 5, dtype=np.int8))
    shared = np.array([0, 1, 2, 3, 10])
    rec.add_run(shared, np.zeros(5, np.int8))
    rec.add_run(shared, np.zeros(5, np.int8))
    # Stratum 0: level 1 expects 1.2 sampled items; level 0 has a certain item (never counted)
    # and one of pi 0.2, so it expects 0.2. Stratum 1: level 0 expects 1.2, level 1 (item 10) 0.3.
    rec.inclusion[:] = [0.3, 0.3, 0.3, 0.3, 1.0, 0.2, 0.3, 0.3, 0.3, 0.3, 0.3]
    return rec


def test_pieces_are_score_stratum_then_agreement_level():
    rec = _record()
    pieces, _, _ = rec.post_strata(0, np.arange(11), banded=False)
    stratum = np.array([0] * 6 + [1] * 5)
    level = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1])
    assert (pieces == stratum * 4 * AGREEMENT_LEVELS + level).all()
    assert pieces.tolist() == [1, 1, 1, 1, 0, 0, 20, 20, 20, 20, 21]


def test_a_level_expected_to_yield_less_than_one_sampled_item_joins_its_nearest_neighbour():
    rec = _record()
    _, merge, sizes = rec.post_strata(0, np.arange(11), banded=False)
    # Level 0 of stratum 0 expects 0.2 items (its certain item does not count): it joins level 1.
    assert merge[0] == 1 and merge[1] == 1
    # Level 1 of stratum 1 expects 0.3: it joins level 0.
    assert merge[21] == 20 and merge[20] == 20
    assert (sizes[0], sizes[1], sizes[20], sizes[21]) == (0.0, 6.0, 5.0, 0.0)
    assert sizes.sum() == 11
    # Blocks (score stratum, band) with no thin level keep their pieces (no band given here:
    # the band groups 1-3 of each stratum are empty).
    untouched = np.r_[5:20, 25:40]
    assert (merge[untouched] == untouched).all()


def test_the_merge_follows_the_inclusion_probabilities_while_the_pieces_stay():
    rec = _record()
    items = np.arange(11)
    before, _, _ = rec.post_strata(0, items, banded=False)
    rec.inclusion[10] = 1.0  # item 10 is now sampled with certainty: nothing of its level is thin
    rec.inclusion[5] = 0.9  # still < 1 expected at level 0 of stratum 0
    pieces, merge, sizes = rec.post_strata(0, items, banded=False)
    assert pieces is before  # computed once per run (and bands given)
    assert merge[21] == 21 and sizes[21] == 1.0
    assert merge[0] == 1
    rec.inclusion[[0, 1, 2, 3]] = 0.1  # level 1 of stratum 0 now expects 0.4: no level has one
    _, merge, sizes = rec.post_strata(0, items, banded=False)
    assert merge[0] == 0 and merge[1] == 0 and sizes[0] == 6.0


def test_agreement_level_is_the_capped_logarithm_of_the_votes():
    votes = np.arange(0, 200, dtype=np.int32)
    expected = np.minimum(np.floor(np.log2(np.maximum(votes, 1))), AGREEMENT_LEVELS - 1)
    assert agreement_level(votes).tolist() == expected.astype(int).tolist()
    assert agreement_level(votes).dtype == np.int64


def test_level_groups_match_the_sorted_distinct_levels():
    rng = np.random.default_rng(5)
    levels = np.sort(rng.random(12))
    pi = np.where(rng.random(5000) < 0.3, 0.0, levels[rng.integers(0, 12, 5000)])
    strata = rng.integers(0, 4, 5000)
    unrequested = rng.random(5000) < 0.5
    distinct, index = np.unique(pi, return_inverse=True)
    key = (index * 4 + strata) * 2 + unrequested
    counts = np.bincount(key)
    present = np.flatnonzero(counts)
    g_pi, g_stratum, g_unreq, g_count = level_groups(pi, strata, unrequested, 4)
    assert np.array_equal(g_pi, distinct[present // 8])
    assert np.array_equal(g_stratum, (present // 2) % 4)
    assert np.array_equal(g_unreq, present % 2 == 1)
    assert np.array_equal(g_count, counts[present].astype(float))
