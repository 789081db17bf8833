"""A closed pool's board ranks from paired differences (issue 31): the snapshot's rank intervals
are the max-t ones of the runs' joint normal, and it stores the pairs the pair view shows, as
an open task's does (driven in-process, as test_ev_pool_pipeline)."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.core.closed_pool.paired import pool_paired_differences
from evaluation.core.ranking import paired_rank_intervals
from evaluation.kinds.closed_pool.state import load_pool_state
from leaderboard.board_pairs import snapshot_neighbours
from leaderboard.models import LeaderboardSnapshot, Run

from pipeline_support import PipelineDriver
from pool_pipeline import pool_world, settle

pytestmark = pytest.mark.django_db(transaction=True)

MEASURES = ("precision", "recall", "f1", "mcc")


@pytest.fixture
def driver(monkeypatch):
    return PipelineDriver(monkeypatch)


@pytest.mark.slow
def test_the_board_ranks_from_paired_differences_and_stores_its_pairs(driver):
    world = pool_world(target_half_width=0.2, measures=MEASURES)
    settle(driver, world)
    snapshot = LeaderboardSnapshot.objects.filter(task=world.task).order_by("-version").first()
    ranking = snapshot.details["ranking"]
    assert ranking["method"] == "paired-differences-max-t"
    assert ranking["family_level"] == world.task.confidence
    assert set(ranking["pair_levels"]) == set(MEASURES) == set(ranking["pairs"])
    assert "intervals" not in ranking
    # The same ranks again from the task as it stands (nothing changed since the snapshot).
    loaded = load_pool_state(world.task)
    results = loaded.design.estimate(
        loaded.state, level=world.task.confidence, measures=list(MEASURES)
    )
    listed = list(range(len(loaded.runs)))
    paired = pool_paired_differences(
        loaded.design, loaded.state, results, measures=MEASURES, runs=listed
    )
    pk_of = {i: run.pk for i, run in enumerate(loaded.runs)}
    by_run = {row["run"]: row for row in snapshot.rows}
    for m in MEASURES:
        ranks = paired_rank_intervals(
            paired[m], family_level=world.task.confidence, rng=np.random.default_rng(0)
        )
        assert ranking["pair_levels"][m] == pytest.approx(ranks.level)
        for i in listed:
            best, worst = ranks.of(i)
            stored = by_run[pk_of[i]]["rank"][m]
            assert stored == (None if best is None else {"best": best, "worst": worst})
        # Every stored pair is the difference with its interval at the pairs' level, and its
        # interval excludes 0 exactly when the ranks order the two runs.
        for above, below, d, low, high in ranking["pairs"][m]:
            a, b = (next(i for i, pk in pk_of.items() if pk == run) for run in (above, below))
            again = paired[m].difference(a, b, level=ranks.level)
            assert (d, low, high) == pytest.approx((again.value, again.low, again.high))
            ordered = ranks.worst[a] < ranks.best[b] or ranks.worst[b] < ranks.best[a]
            assert (low > 0 or high < 0) == ordered, (m, above, below)
    # The pair view reads them: every two neighbours of a measure's board.
    neighbours = snapshot_neighbours(snapshot, MEASURES)
    assert set(neighbours) == set(MEASURES)
    ranked_f1 = [r for r in snapshot.rows if r["rank"]["f1"] is not None]
    assert len(neighbours["f1"]) == len(ranked_f1) - 1
    assert all(" confidence; difference " in pair.text for pair in neighbours["f1"])
    assert {r.state for r in Run.objects.filter(task=world.task)} == {Run.State.SCORED}
