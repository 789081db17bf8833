"""Closed-pool campaigns: budget shares per arrival, budgets per run, the figures' arithmetic."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
from closed_pools import synthetic_pool, write_closed_pool

from evaluation.core.closed_pool import (
    CLOSED_POOL_MEASURES,
    POOL_DESIGNS,
    PassiveDesign,
    measure_range,
)
from evaluation.simulation.closed_pool.campaigns import (
    CLOSED_POOL_DESIGNS,
    arrival_caps,
    rank_summary,
    run_pool_campaign,
    simulate_closed_pool,
    true_measures,
)
from evaluation.simulation.closed_pool_data import load_closed_pool
from evaluation.simulation.open_world.rank_report import RANKINGS

CLOSED_POOL = Path(os.environ.get("CLOSED_POOL_DATA", "/work/shared/data/closed-pool"))


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    truth, systems = synthetic_pool()
    return load_closed_pool(
        str(write_closed_pool(tmp_path_factory.mktemp("pools") / "tiny", truth, systems))
    )


class _Rounds(PassiveDesign):
    """Passive in rounds of at most 3 items, recording each request's run and budget."""

    name = "rounds"

    def __init__(self, calls):
        self.calls = calls

    def plan(self, state, run, *, budget, rng):
        self.calls.append((run, budget, state.n_labelled))
        return super().plan(state, run, budget=min(budget, 3), rng=rng)


class _Lazy(PassiveDesign):
    """Asks for nothing until the last of four runs has arrived."""

    name = "lazy"

    def plan(self, state, run, *, budget, rng):
        return super().plan(state, run, budget=budget if run == 3 else 0, rng=rng)


class _Greedy(PassiveDesign):
    name = "greedy"

    def plan(self, state, run, *, budget, rng):
        return super().plan(state, run, budget=budget + 1, rng=rng)


def _campaign(pool, design, budget=20, **kw):
    return run_pool_campaign(
        pool,
        [0, 1, 2, 3],
        design,
        budget=budget,
        measures=CLOSED_POOL_MEASURES,
        level=0.95,
        seed=0,
        repeat=0,
        **kw,
    )


def test_the_registry_of_multi_system_designs_feeds_the_closed_pool_designs():
    assert set(POOL_DESIGNS) <= set(CLOSED_POOL_DESIGNS)
    assert CLOSED_POOL_DESIGNS[-1] == "ais-published" and "passive" in CLOSED_POOL_DESIGNS


@pytest.mark.parametrize(("budget", "runs"), [(2000, 13), (10, 4), (3, 7), (0, 2)])
def test_arrival_caps_give_equal_shares_that_add_up_to_the_budget(budget, runs):
    caps = arrival_caps(budget, runs)
    shares = np.diff(caps, prepend=0)
    assert caps[-1] == budget and caps.size == runs
    assert shares.min() >= 0 and shares.max() - shares.min() <= 1


def test_each_arrival_brings_the_task_up_to_its_share(pool, monkeypatch):
    calls = []
    monkeypatch.setitem(POOL_DESIGNS, "rounds", lambda **_: _Rounds(calls))
    campaign = _campaign(pool, "rounds", budget=20)
    assert campaign.labels == 20
    # caps 5, 10, 15, 20: rounds of 3 and 2 items at each arrival
    assert calls == [
        (0, 5, 0),
        (0, 2, 3),
        (1, 5, 5),
        (1, 2, 8),
        (2, 5, 10),
        (2, 2, 13),
        (3, 5, 15),
        (3, 2, 18),
    ]


def test_what_a_design_leaves_unspent_carries_over(pool, monkeypatch):
    monkeypatch.setitem(POOL_DESIGNS, "lazy", _Lazy)
    assert _campaign(pool, "lazy", budget=20).labels == 20


def test_a_design_asking_beyond_its_budget_is_stopped(pool, monkeypatch):
    monkeypatch.setitem(POOL_DESIGNS, "greedy", _Greedy)
    with pytest.raises(RuntimeError, match="labels left"):
        _campaign(pool, "greedy")


def test_a_census_gives_exact_figures(pool):
    s = simulate_closed_pool(
        pool, design="passive", budget=pool.n_items, repeats=2, measures=CLOSED_POOL_MEASURES
    )
    assert s.labels_mean == pool.n_items and s.budget_scope == "task"
    for row in s.per_system:
        for m in CLOSED_POOL_MEASURES:
            if math.isnan(row["true"][m]):  # precision and MCC of the run predicting nothing
                assert row["undefined_share"][m] == 1.0 and row["coverage"][m] == 0.0
                assert math.isnan(row["mse"][m])
                continue
            assert row["coverage"][m] == 1.0 and row["undefined_share"][m] == 0.0
            assert row["mse"][m] == pytest.approx(0.0, abs=1e-24)
            assert row["half_width_median"][m] == 0.0
    assert s.coverage_lowest["precision"] == 0.0 and s.coverage_lowest["recall"] == 1.0


def test_no_label_leaves_every_value_undefined_and_uncovered(pool):
    s = simulate_closed_pool(
        pool, design="passive", budget=0, repeats=2, measures=CLOSED_POOL_MEASURES
    )
    assert s.labels_mean == 0
    for m in CLOSED_POOL_MEASURES:
        assert s.undefined_share[m] == 1.0 and s.coverage[m] == 0.0
        assert math.isnan(s.mse[m]) and math.isnan(s.bias[m])
        low, high = measure_range(m)
        assert s.half_width_median[m] == (high - low) / 2


def test_the_figures_are_those_of_the_campaigns(pool):
    # 20 labels: many values undefined. Recompute every pooled figure from the campaigns.
    kw = {"budget": 20, "measures": CLOSED_POOL_MEASURES, "level": 0.9}
    s = simulate_closed_pool(
        pool,
        design="passive",
        repeats=5,
        seed=3,
        confidence=0.9,
        **{k: v for k, v in kw.items() if k != "level"},
    )
    campaigns = [
        run_pool_campaign(pool, [0, 1, 2, 3], "passive", seed=3, repeat=r, **kw) for r in range(5)
    ]
    truth = true_measures(pool, [0, 1, 2, 3], CLOSED_POOL_MEASURES)
    value = np.stack([c.values for c in campaigns])
    low, high = np.stack([c.low for c in campaigns]), np.stack([c.high for c in campaigns])
    defined = np.isfinite(value)
    assert 0 < defined.mean() < 1
    for j, m in enumerate(CLOSED_POOL_MEASURES):
        ok = defined[..., j]
        err = (value[..., j] - truth[:, j])[ok]
        cov = ok & (low[..., j] - 1e-12 <= truth[:, j]) & (truth[:, j] <= high[..., j] + 1e-12)
        assert s.coverage[m] == pytest.approx(cov.mean())
        assert s.coverage_lowest[m] == pytest.approx(cov.mean(axis=0).min())
        assert s.undefined_share[m] == pytest.approx(1 - ok.mean())
        if err.size:
            assert s.bias[m] == pytest.approx(err.mean())
            assert s.mse[m] == pytest.approx(np.mean(err**2))
        assert s.half_width_median[m] == pytest.approx(np.median((high - low)[..., j]) / 2)
        assert [row["coverage"][m] for row in s.per_system] == pytest.approx(cov.mean(axis=0))


def test_ais_published_spends_its_budget_per_run_and_each_systems_draws_are_its_own(pool):
    options = {
        "budget": 40,
        "measures": ("f1",),
        "repeats": 2,
        "design_options": {"tree_depth": 2, "n_bins": 16},
    }
    both = simulate_closed_pool(pool, design="ais-published", systems=[0, 1], **options)
    alone = simulate_closed_pool(pool, design="ais-published", systems=[1], **options)
    assert both.budget_scope == "run" and both.labels_mean == 80 and alone.labels_mean == 40
    assert both.per_system[1] == {**alone.per_system[0], "arrival": 2}


def test_same_seed_same_summary(pool):
    a, b, c = (
        simulate_closed_pool(pool, design="passive", budget=30, repeats=3, seed=s).as_dict()
        for s in (1, 1, 2)
    )
    for d in (a, b, c):
        d.pop("seconds")
    assert json.dumps(a) == json.dumps(b)  # NaN included
    assert a["mse"] != c["mse"]


@pytest.mark.slow
@pytest.mark.skipif(not (CLOSED_POOL / "dblp-acm").is_dir(), reason="closed-pool data not present")
def test_passive_f1_is_undefined_as_often_as_the_readme_computes():
    # The data README's P(undef) of svm-paper on dblp-acm after 2,000 labels is 0.47; over 400
    # campaigns the share's standard error is sqrt(0.47 * 0.53 / 400) = 0.025 (tolerance 4).
    data = load_closed_pool(str(CLOSED_POOL / "dblp-acm"))
    names = [s.name for s in data.systems]
    s = simulate_closed_pool(
        data, design="passive", systems=[names.index("svm-paper")], repeats=400, measures=("f1",)
    )
    assert abs(s.undefined_share["f1"] - 0.47) < 4 * 0.025


def test_a_campaign_ranked_both_ways_ranks_as_each_alone(pool):
    """Ranking is read off the finished state: both rankings from one campaign are those of a
    campaign ranked one way (the same streams), and the paired ranks are the max-t ones."""
    kw = {"budget": 150, "measures": ("precision", "recall", "f1"), "level": 0.95, "seed": 5}
    both = run_pool_campaign(pool, [0, 1, 2, 3], "adaptive", repeat=0, rankings=RANKINGS, **kw)
    for ranking in RANKINGS:
        alone = run_pool_campaign(
            pool, [0, 1, 2, 3], "adaptive", repeat=0, rankings=(ranking,), **kw
        )
        assert alone.ranks == {ranking: both.ranks[ranking]}
    assert {r.method for r in both.ranks["paired"].values()} == {"paired-differences-max-t"}
    assert run_pool_campaign(pool, [0, 1], "adaptive", repeat=0, **kw).ranks == {}


def test_paired_ranks_need_the_adaptive_design_and_a_known_ranking(pool):
    kw = {"budget": 50, "measures": ("f1",), "level": 0.95, "seed": 5, "repeat": 0}
    with pytest.raises(ValueError, match="needs the adaptive design, not 'passive'"):
        run_pool_campaign(pool, [0, 1], "passive", rankings=("paired",), **kw)
    with pytest.raises(ValueError, match="unknown ranking 'holm'"):
        run_pool_campaign(pool, [0, 1], "adaptive", rankings=("holm",), **kw)


def test_the_rank_key_scores_the_campaigns_ranks_against_the_truth(pool):
    summary = simulate_closed_pool(
        pool, design="adaptive", budget=150, repeats=2, seed=3, ranking="paired"
    )
    truth = true_measures(pool, range(4), ("precision", "recall", "f1"))
    campaigns = [
        run_pool_campaign(
            pool,
            range(4),
            "adaptive",
            budget=150,
            measures=("precision", "recall", "f1"),
            level=0.95,
            seed=3,
            repeat=r,
            rankings=("paired",),
        )
        for r in range(2)
    ]
    assert summary.rank == rank_summary(
        campaigns, truth, ("precision", "recall", "f1"), 0.95, "paired"
    )
    assert summary.rank["method"] == "paired-differences-max-t"
