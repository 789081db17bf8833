"""``ais-published``: paper 000's AIS for one closed-pool run (support, exactness, unbiasedness).

The long checks (Monte-Carlo unbiasedness, the abt-buy anchor) are marked ``slow``.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest

from evaluation.core.closed_pool import CLOSED_POOL_MEASURES, measure_value
from evaluation.core.closed_pool.ais_published import _proposal, ais_published

CLOSED_POOL = Path(os.environ.get("CLOSED_POOL_DATA", "/work/shared/data/closed-pool"))
SMALL_TREE = {"tree_depth": 2, "n_bins": 4, "bin_transform": "identity"}


def _pool(n=300, positives=12, seed=3):
    """A small imbalanced pool whose scores rank positives high, and a run thresholding them."""
    rng = np.random.default_rng(seed)
    truth = np.zeros(n, dtype=bool)
    truth[rng.choice(n, positives, replace=False)] = True
    scores = np.clip(np.where(truth, rng.beta(4, 2, n), rng.beta(1, 6, n)), 0.0, 1.0)
    return truth, scores, scores > 0.5


def _true_totals(truth, f):
    return np.array([np.sum(truth & f), np.sum(truth & ~f), np.sum(f)], dtype=float)


def test_the_proposal_gives_every_item_with_a_nonzero_loss_positive_mass():
    rng = np.random.default_rng(1)
    n = 500
    f = rng.random(n) < 0.1
    pi1 = rng.uniform(0.001, 0.3, n)
    labelled = rng.random(n) < 0.4
    y = rng.random(n) < 0.2
    pi1 = np.where(labelled, y.astype(float), pi1)
    for beta in (1.0, 0.5, 2.0):
        q = _proposal(pi1, f, 1.0 / (1.0 + beta * beta), 1e-9)
        assert q.sum() == pytest.approx(1.0)
        may_lose = f | (pi1 > 0)  # the F-beta loss is zero only for a known negative with f = 0
        assert np.all(q[may_lose] > 0)
        assert np.all(q[~may_lose] == 0)


def test_the_threshold_keeps_support_where_the_gradient_vanishes():
    # Every predicted positive is a known negative, so R1 = 0 and Dg(R) = [1 / R2, 0]: the loss
    # of a predicted positive negative ([0, a]) and of a missed positive ([0, 1 - a]) both map
    # to 0. Only eps_t keeps them in the proposal (Prop. 2): v = eps * P(l != 0), i.e.
    # [1, 1, 0.2, 0.5, 0] * eps, and the known negative predicted negative keeps no mass.
    f = np.array([True, True, False, False, False])
    pi1 = np.array([0.0, 0.0, 0.2, 0.5, 0.0])
    q = _proposal(pi1, f, 0.5, 1e-9)
    np.testing.assert_allclose(q, np.array([1.0, 1.0, 0.2, 0.5, 0.0]) / 2.7)


def test_a_campaign_keeps_support_on_every_positive_and_predicted_positive():
    truth, scores, f = _pool()
    result = ais_published(
        scores,
        f,
        oracle=lambda i: truth[i],
        budget=60,
        stage_size=20,
        rng=np.random.default_rng(0),
        **SMALL_TREE,
    )
    q = result.proposal
    assert np.all(q[truth | f] > 0)
    unverified = np.ones(truth.size, dtype=bool)
    unverified[result.items] = False
    assert np.all(q[unverified] > 0)


def test_a_budget_of_the_whole_pool_gives_the_exact_values():
    truth, scores, f = _pool(n=40, positives=4, seed=8)
    asked = []

    def oracle(items):
        asked.extend(items.tolist())
        return truth[items]

    result = ais_published(
        scores,
        f,
        oracle=oracle,
        budget=40,
        measures=CLOSED_POOL_MEASURES,
        stage_size=8,
        rng=np.random.default_rng(2),
        **SMALL_TREE,
    )
    assert sorted(asked) == list(range(40))  # every item asked once: a deterministic oracle
    assert result.labels_used == 40 and result.draws >= 40
    tp, fn, pp = _true_totals(truth, f)
    for name in CLOSED_POOL_MEASURES:
        est = result[name]
        expected = float(measure_value(name, tp, fn, pp=pp, n=40))
        assert est.value == pytest.approx(expected, abs=1e-12)
        assert est.low == est.high == est.value and est.method == "census"
    assert result.undefined == ()


def test_a_campaign_spends_exactly_its_budget_and_reports_every_measure():
    truth, scores, f = _pool()
    result = ais_published(
        scores,
        f,
        oracle=lambda i: truth[i],
        budget=45,
        measures=CLOSED_POOL_MEASURES,
        stage_size=20,
        rng=np.random.default_rng(4),
        **SMALL_TREE,
    )
    assert result.labels_used == 45 and result.stages == 3  # 20 + 20 + 5
    assert np.unique(result.items).size == 45 and result.draws == result.counts.sum()
    np.testing.assert_array_equal(result.labels, truth[result.items])
    assert set(result.estimates) == set(CLOSED_POOL_MEASURES)
    for name, est in result.estimates.items():
        assert est.labels_used == 45 and est.level == 0.95
        assert est.low <= est.value <= est.high
        lo, hi = (-1.0, 1.0) if name == "mcc" else (0.0, 1.0)
        assert lo <= est.low and est.high <= hi


def test_an_undefined_value_is_nan_with_the_whole_range():
    # A run that predicts nothing and a pool whose positives the draws never find: recall,
    # precision and F1 are 0/0.
    n = 400
    truth = np.zeros(n, dtype=bool)
    truth[0] = True
    scores = np.linspace(0.0, 0.2, n)[::-1]  # the only positive scores lowest
    f = np.zeros(n, dtype=bool)
    result = ais_published(
        scores,
        f,
        oracle=lambda i: truth[i],
        budget=5,
        stage_size=5,
        measures=("precision", "f1", "mcc", "accuracy"),
        rng=np.random.default_rng(0),
        **SMALL_TREE,
    )
    assert not truth[result.items].any()
    for name in ("precision", "f1", "mcc"):
        est = result[name]
        assert math.isnan(est.value)
        assert (est.low, est.high) == ((-1.0, 1.0) if name == "mcc" else (0.0, 1.0))
    assert set(result.undefined) == {"precision", "f1", "mcc"}
    assert result["accuracy"].value == pytest.approx(1.0)  # no error found, fn estimated 0


def test_known_pp_plugs_in_the_runs_predicted_positives():
    truth, scores, f = _pool()
    kw = dict(budget=40, stage_size=20, **SMALL_TREE)
    est = ais_published(scores, f, oracle=lambda i: truth[i], rng=np.random.default_rng(9), **kw)
    known = ais_published(
        scores, f, oracle=lambda i: truth[i], known_pp=True, rng=np.random.default_rng(9), **kw
    )
    np.testing.assert_array_equal(est.items, known.items)  # the same campaign
    assert known.pp == f.sum() and est.pp != f.sum()
    assert known.tp == est.tp and known["recall"].value == est["recall"].value
    assert known["precision"].value == pytest.approx(known.tp / f.sum())


def test_options_are_checked():
    truth, scores, f = _pool()
    with pytest.raises(ValueError, match="unknown measures"):
        ais_published(
            scores,
            f,
            oracle=truth.__getitem__,
            budget=5,
            measures=("auc",),
            rng=np.random.default_rng(0),
            **SMALL_TREE,
        )
    with pytest.raises(ValueError, match="bin_transform"):
        ais_published(
            scores,
            f,
            oracle=truth.__getitem__,
            budget=5,
            tree_depth=2,
            n_bins=4,
            bin_transform="rank",
            rng=np.random.default_rng(0),
        )
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        ais_published(
            scores * 2,
            f,
            oracle=truth.__getitem__,
            budget=5,
            rng=np.random.default_rng(0),
            **SMALL_TREE,
        )


@pytest.mark.slow
def test_the_importance_weighted_totals_are_unbiased():
    """E[sum_j w_j L_j - N T] = 0 for the totals T = (tp, fn, pp) (Wald's identity).

    Every draw's weighted loss has conditional mean T given the past (the proposal is fixed
    within a stage and covers every item with a nonzero loss), and a stage stops at a stopping
    time, so the sum over the N draws has mean ``E[N] T``. 400 campaigns: the mean of
    ``N (T_hat - T)`` must lie within 4 Monte-Carlo standard errors of 0 (measured z-scores
    -1.1, -0.8, 1.1; at 3,000 campaigns -0.8, -0.8, 0.0). ``T_hat`` itself is a ratio with a
    random ``N`` and carries a small bias (tp -1.4% at 3,000 campaigns, z = -4): it is only
    asymptotically unbiased, which is why the identity, not ``T_hat``, is tested.
    """
    truth, scores, f = _pool()
    totals = _true_totals(truth, f)
    scaled = []
    for seed in range(400):
        result = ais_published(
            scores,
            f,
            oracle=lambda i: truth[i],
            budget=30,
            stage_size=15,
            em_tol=1e-3,
            em_max_iter=2,
            rng=np.random.default_rng(seed),
            **SMALL_TREE,
        )
        scaled.append(result.draws * (np.array([result.tp, result.fn, result.pp]) - totals))
    scaled = np.array(scaled)
    z = scaled.mean(axis=0) / (scaled.std(axis=0, ddof=1) / math.sqrt(len(scaled)))
    assert np.all(np.abs(z) < 4.0), z


@pytest.mark.slow
@pytest.mark.skipif(
    not (CLOSED_POOL / "abt-buy").is_dir(), reason=f"closed-pool data not found at {CLOSED_POOL}"
)
def test_abt_buy_svm_paper_reproduces_the_published_error():
    """2,000 labels on abt-buy's ``svm-paper``: MSE of F1 near the issue's 8.6e-4.

    40 campaigns (seeds 0-39) measure 1.9e-3 (standard error 4e-4); 200 campaigns of
    ``bench/closed_pool_ais_published.py`` measure 1.6e-3 (seed 0) and 1.4e-3 (another seed
    range, standard error 1.4e-4). The issue's anchor rests on a handful of runs, so the bounds
    only ask for its order of magnitude: 2.5e-4 to 3.5e-3, about a factor 4 either side of it
    (binning on the score scale, ``bin_transform="identity"``, measures 4e-4 to 6e-4).
    """
    from evaluation.simulation.closed_pool_data import load_closed_pool

    data = load_closed_pool(str(CLOSED_POOL / "abt-buy"))
    run = next(s for s in data.systems if s.name == "svm-paper")
    truth = data.truth
    tp, fn, pp = _true_totals(truth, run.predictions)
    f1 = float(measure_value("f1", tp, fn, pp=pp, n=truth.size))
    errors = []
    for seed in range(40):
        result = ais_published(
            run.scores,
            run.predictions,
            oracle=lambda i: truth[i],
            budget=2000,
            measures=("f1",),
            rng=np.random.default_rng(seed),
        )
        assert result.labels_used == 2000
        errors.append(result["f1"].value - f1)
    mse = float(np.mean(np.square(errors)))
    assert 2.5e-4 < mse < 3.5e-3, mse
