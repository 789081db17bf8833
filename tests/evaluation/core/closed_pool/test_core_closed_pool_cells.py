"""Cells of a closed pool and their Beta posteriors (:mod:`evaluation.core.closed_pool.cells`)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from evaluation.core.closed_pool.cells import cell_rates, rank_cells


def _pool(n_voted: int, n_unvoted: int):
    """One run scoring items by index (item 0 highest) and predicting the first ``n_voted``."""
    n = n_voted + n_unvoted
    scores = 1.0 - np.arange(n) / n
    predictions = np.arange(n) < n_voted
    return scores[None, :], predictions[None, :]


def test_cells_split_votes_first_then_grow_geometrically_down_the_ranks():
    cells = rank_cells(*_pool(40, 300), first=8)
    # voted group, 40 items: cells of 8, 16, then the remaining 16 of a cell of 32
    assert cells.size[:3].tolist() == [8, 16, 16]
    assert cells.voted[:3].all() and not cells.voted[3:].any()
    # unvoted group, 300 items: 8, 16, 32, 64, 128, then 52
    assert cells.size[3:].tolist() == [8, 16, 32, 64, 128, 52]
    assert cells.of_item[:8].tolist() == [0] * 8 and cells.of_item[40:48].tolist() == [3] * 8
    assert cells.group_first.tolist() == [0, 0, 0] + [3] * 6
    assert cells.group_last.tolist() == [2, 2, 2] + [8] * 6
    # the rank prior is the mean of 1 / rank over the cell (one run: geometric mean = itself)
    assert cells.prior_mean[0] == pytest.approx(np.mean(1.0 / np.arange(1, 9)))
    assert cells.prior_mean[3] == pytest.approx(np.mean(1.0 / np.arange(41, 49)))


def test_evidence_is_the_geometric_mean_of_the_runs_inverse_ranks():
    # Two runs ranking four items in opposite orders: the items' evidence ties pairwise.
    scores = np.array([[0.9, 0.8, 0.7, 0.6], [0.6, 0.7, 0.8, 0.9]])
    cells = rank_cells(scores, np.zeros((2, 4), dtype=bool), first=4)
    assert cells.n_cells == 1 and not cells.voted[0]
    inverse = np.sqrt(1.0 / (np.arange(1, 5) * np.arange(4, 0, -1)))
    assert cells.prior_mean[0] == pytest.approx(inverse.mean())


def test_a_pool_nobody_votes_for_has_one_group():
    cells = rank_cells(*_pool(0, 20), first=4)
    assert not cells.voted.any() and cells.size.sum() == 20
    with pytest.raises(ValueError):
        rank_cells(*_pool(0, 20), first=0)


def test_posterior_of_an_unvoted_cell_counts_its_labels_over_the_rank_prior():
    cells = rank_cells(*_pool(0, 24), first=8)  # cells of 8 and 16
    labels = np.full(24, -1)
    labels[:4] = [1, 0, 0, 0]  # cell 0: 4 verified with equal weights, one positive
    rates = cell_rates(cells, labels, np.full(24, 0.5), prior_strength=2.0)
    m = cells.prior_mean
    assert rates.alpha[0] == pytest.approx(1 + 2 * m[0])
    assert rates.beta[0] == pytest.approx(3 + 2 * (1 - m[0]))
    # nothing verified in cell 1: the prior alone
    assert rates.alpha[1] == pytest.approx(2 * m[1])
    assert rates.beta[1] == pytest.approx(2 - 2 * m[1])
    assert np.all((rates.mean > 0) & (rates.mean < 1) & (rates.variance > 0))
    assert cells.count(np.arange(24) >= 4).tolist() == [4, 16]


def test_unequal_inclusion_gives_the_hajek_rate_on_kish_effective_items():
    cells = rank_cells(*_pool(0, 8), first=8)
    labels = np.array([1, 0, 0, -1, -1, -1, -1, -1])
    inclusion = np.array([1.0, 0.5, 0.25, 1, 1, 1, 1, 1])  # weights 1, 2, 4
    rates = cell_rates(cells, labels, inclusion, prior_strength=1.0)
    hajek, effective = 1 / 7, 7**2 / (1 + 4 + 16)
    m = cells.prior_mean[0]
    assert rates.alpha[0] == pytest.approx(hajek * effective + m)
    assert rates.beta[0] == pytest.approx((1 - hajek) * effective + 1 - m)


def test_a_voted_cell_borrows_its_prior_mean_from_its_rank_neighbours():
    # Voted cells of 4, 8, 16 (28 items): cell 1 has 8 negatives verified, its neighbours hold
    # 2 positives in 4 and 1 in 8. Its prior mean pools the three cells with one pseudo-item of
    # the rank prior; the unvoted group keeps the rank prior.
    cells = rank_cells(*_pool(28, 12), first=4)
    labels = np.full(40, -1)
    labels[0:4] = [1, 1, 0, 0]
    labels[4:12] = 0
    labels[12:20] = [1, 0, 0, 0, 0, 0, 0, 0]
    labels[28:32] = 0
    rates = cell_rates(cells, labels, np.ones(40), prior_strength=2.0)
    pooled = (3 + cells.prior_mean[1]) / (20 + 1)
    assert rates.alpha[1] == pytest.approx(0 + 2 * pooled)
    assert rates.beta[1] == pytest.approx(8 + 2 * (1 - pooled))
    top = (2 + 0 + cells.prior_mean[0]) / (12 + 1)  # cell 0: itself and cell 1
    assert rates.alpha[0] == pytest.approx(2 + 2 * top)
    unvoted = cells.of_item[28]
    assert rates.alpha[unvoted] == pytest.approx(2 * cells.prior_mean[unvoted])


def test_the_rank_prior_is_scaled_up_where_the_verified_items_hold_more_positives():
    # Unvoted cells of 8, 16, 32, 8 (64 items, ranks 1-64): 16 items of cell 2 verified, half
    # of them positive, far above the 1 / rank the prior expects (about 0.03 there). The group's
    # prior means are scaled by the 1% lower bound of a Poisson mean with 8 events (2.906) over
    # the prior's expected positives among the verified items; with no positive found the rank
    # prior stays as it was.
    cells = rank_cells(*_pool(0, 64), first=8)
    labels = np.full(64, -1)
    labels[24:40] = [1, 0] * 8
    rates = cell_rates(cells, labels, np.ones(64), prior_strength=2.0)
    expected = cells.prior_mean[2]
    surely = stats.chi2.ppf(0.01, 2 * 8) / 2  # Garwood's bound, written another way
    assert surely == pytest.approx(2.906, abs=0.001)
    scaled = np.minimum(cells.prior_mean * surely / (16 * expected), 0.999)
    assert scaled[0] == 0.999 and scaled[3] < 0.5  # a rate stays below 1
    assert rates.alpha[3] == pytest.approx(2 * scaled[3])  # nothing verified in cell 3
    assert rates.alpha[2] == pytest.approx(8 + 2 * scaled[2])
    labels[24:40] = 0
    rates = cell_rates(cells, labels, np.ones(64), prior_strength=2.0)
    assert rates.alpha[3] == pytest.approx(2 * cells.prior_mean[3])
