"""``python -m evaluation.simulate --ranking``: the ``rank`` key (issue 31, item 4).

The febrl4 slice for open-world campaigns, the tiny synthetic closed pool of
``tests/support/closed_pools.py`` for closed pools.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from closed_pools import synthetic_pool, write_closed_pool

from evaluation.core.measures import OPEN_MEASURES
from evaluation.simulate import main
from evaluation.simulation.datasets import load_dataset
from evaluation.simulation.open_world.rank_campaigns import (
    campaign_ranks,
    campaign_truth,
    rank_campaign,
    score_ranks,
)

SLICE = Path(__file__).resolve().parents[1] / "data" / "febrl4_slice"
SMALL = ["--systems", "6", "--repeats", "2", "--seed", "11"]
RANK_KEYS = {"family_coverage", "excess_width_mean", "width_mean", "pairs_resolved"}
PAIRED = "paired-differences-max-t"
BONFERRONI = "bonferroni-simultaneous-intervals"


def run_json(capsys, *args) -> dict:
    code = main([*map(str, args), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    (line,) = out.splitlines()
    return json.loads(line)


def run_error(capsys, *args) -> str:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and "Traceback" not in err
    return err


def _check_rank(rank: dict, method: str, measures, repeats: int, runs: int) -> None:
    assert rank["method"] == method and rank["family_level"] == 0.95
    assert set(rank) == {"method", "family_level", *measures}
    for m in measures:
        row = rank[m]
        assert set(row) == RANK_KEYS, m
        # one repeat either covers or not: shares of repeats
        share = row["family_coverage"] * repeats
        assert share == pytest.approx(round(share))
        assert row["excess_width_mean"] <= row["width_mean"] <= runs - 1
        # an interval holding its true range is at least as wide (a missed one may be narrower)
        assert row["family_coverage"] < 1 or row["excess_width_mean"] >= 0
        assert row["pairs_resolved"] is None or 0 <= row["pairs_resolved"] <= 1


def test_open_world_ranks_by_paired_differences_by_default(capsys):
    out = run_json(capsys, SLICE, *SMALL)
    _check_rank(out["rank"], PAIRED, OPEN_MEASURES, repeats=2, runs=6)


def test_the_rank_key_scores_each_repeats_finished_campaign(capsys):
    """The figures are those of :mod:`rank_campaigns` on the same campaigns (same streams)."""
    out = run_json(capsys, SLICE, *SMALL)
    dataset = load_dataset(SLICE)
    scores = {m: [] for m in OPEN_MEASURES}
    for r in range(2):
        campaign = rank_campaign(dataset, n_systems=6, reference_size=300, seed=[11, r])
        _, paired, _ = campaign_ranks(campaign)
        truth = campaign_truth(dataset, campaign)
        for k, m in enumerate(OPEN_MEASURES):
            scores[m].append(score_ranks(paired[m], truth[:, k]))
    for m in OPEN_MEASURES:
        got = out["rank"][m]
        assert got["family_coverage"] == np.mean([s.covered for s in scores[m]])
        excess = np.mean([s.excess_width for s in scores[m]])
        assert got["excess_width_mean"] == pytest.approx(excess)
        assert got["width_mean"] == pytest.approx(np.mean([s.width for s in scores[m]]))
        assert got["pairs_resolved"] == pytest.approx(
            np.nanmean([s.pairs_resolved for s in scores[m]])
        )


def test_ranking_bonferroni_changes_the_rank_key_only(capsys):
    paired = run_json(capsys, SLICE, *SMALL)
    bonferroni = run_json(capsys, SLICE, *SMALL, "--ranking", "bonferroni")
    _check_rank(bonferroni["rank"], BONFERRONI, OPEN_MEASURES, repeats=2, runs=6)
    for out in (paired, bonferroni):
        out.pop("rank")
        out.pop("seconds")
    assert paired == bonferroni
    # Bonferroni's intervals are never narrower on these campaigns (issue 31's premise)
    again = run_json(capsys, SLICE, *SMALL, "--ranking", "bonferroni")["rank"]
    first = run_json(capsys, SLICE, *SMALL)["rank"]
    assert sum(again[m]["width_mean"] for m in OPEN_MEASURES) >= sum(
        first[m]["width_mean"] for m in OPEN_MEASURES
    )


def test_published_design_ranks_by_bonferroni_and_refuses_paired(capsys):
    out = run_json(capsys, SLICE, *SMALL, "--design", "published")
    _check_rank(out["rank"], BONFERRONI, OPEN_MEASURES, repeats=2, runs=6)
    err = run_error(capsys, SLICE, *SMALL, "--design", "published", "--ranking", "paired")
    assert "--ranking paired needs the default design's paired differences" in err


def test_unknown_ranking_is_refused(capsys):
    with pytest.raises(SystemExit) as exit_:
        main([str(SLICE), *SMALL, "--ranking", "holm"])
    assert exit_.value.code == 2
    assert "--ranking: invalid choice: 'holm'" in capsys.readouterr().err


def test_text_output_has_a_rank_line(capsys):
    assert main([str(SLICE), *SMALL]) == 0
    out = capsys.readouterr().out
    assert f"ranks by {PAIRED} at 95% for the whole board:" in out
    assert "family cov." in out and "pairs resolved" in out


@pytest.fixture
def pool(tmp_path) -> Path:
    truth, systems = synthetic_pool()
    return write_closed_pool(tmp_path / "tiny", truth, systems)


@pytest.mark.parametrize("ranking", [[], ["--ranking", "paired"]])
def test_closed_pool_ranks_by_paired_differences_by_default(capsys, pool, ranking):
    out = run_json(capsys, pool, "--repeats", "3", "--budget", "200", *ranking)
    _check_rank(out["rank"], PAIRED, OPEN_MEASURES, repeats=3, runs=4)


def test_closed_pool_ranking_bonferroni_changes_the_rank_key_only(capsys, pool):
    """The same campaigns (same streams) ranked the other way: everything else is the same."""
    args = (pool, "--repeats", "3", "--budget", "200")
    paired = run_json(capsys, *args)
    bonferroni = run_json(capsys, *args, "--ranking", "bonferroni")
    _check_rank(bonferroni["rank"], BONFERRONI, OPEN_MEASURES, repeats=3, runs=4)
    assert paired.pop("rank")["method"] == PAIRED
    bonferroni.pop("rank")
    for out in (paired, bonferroni):
        out.pop("seconds")
    assert paired == bonferroni


def test_closed_pool_passive_design_ranks_by_bonferroni_and_refuses_paired(capsys, pool):
    args = (pool, "--repeats", "2", "--budget", "200", "--design", "passive")
    _check_rank(run_json(capsys, *args)["rank"], BONFERRONI, OPEN_MEASURES, repeats=2, runs=4)
    err = run_error(capsys, *args, "--ranking", "paired")
    assert "--ranking paired needs the adaptive design's paired differences" in err
    assert "the passive design ranks by --ranking bonferroni" in err


def test_closed_pool_ais_published_has_no_rank(capsys, pool):
    out = run_json(capsys, pool, "--repeats", "2", "--budget", "50", "--design", "ais-published")
    assert "rank" not in out
