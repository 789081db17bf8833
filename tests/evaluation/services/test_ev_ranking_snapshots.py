"""Every snapshot stores rank intervals per run and metric from the runs' paired differences, and
the differences of the pairs near each other on the board.

Also checks the history shape the pages read: one ``Estimate`` row per (snapshot, listed run,
metric), ordered by snapshot version.
"""

import numpy as np
import pytest
from scipy import stats

from annotation.models import VerificationRequest
from evaluation.core import ENGINE_VERSION
from evaluation.core.measures import OPEN_MEASURES
from evaluation.kinds.open_world.paired_ranks import board_pairs, paired_ranks
from evaluation.services import estimate_task, plan_run
from leaderboard.models import Estimate, LeaderboardSnapshot, Run
from leaderboard.services.lifecycle import fail_run

from engine_audit import replay_task
from pipeline_support import (
    PipelineDriver,
    add_run,
    annotator,
    answer_all,
    make_team,
)
from worlds import truth_world

pytestmark = pytest.mark.django_db(transaction=True)

N = 1500


@pytest.fixture
def world(monkeypatch):
    rng = np.random.default_rng(11)
    base = truth_world(rng, n_items=N, p_true=0.6, reference=150, groups=40, target_half_width=0.06)
    task, truth = base.task, base.truth
    team = make_team("A")
    # A strong run, a weak run and a copy of the strong one (tied in truth on every metric).
    good = np.array(
        [i for i in range(N) if truth[i]][:500] + [i for i in range(N) if not truth[i]][:30]
    )
    weak = np.array(
        [i for i in range(N) if truth[i]][300:500] + [i for i in range(N) if not truth[i]][100:500]
    )
    scores = rng.random(good.size)
    runs = [
        add_run(task, team, good, scores, "good"),
        add_run(task, team, weak, rng.random(weak.size), "weak"),
        add_run(task, team, good, scores, "good-copy"),
    ]
    return {
        "task": task,
        "truth": truth,
        "runs": runs,
        "driver": PipelineDriver(monkeypatch),
        "user": annotator(task),
    }


def settle(world, max_cycles=40):
    driver, task = world["driver"], world["task"]
    for run in world["runs"]:
        driver.sent.append(("evaluation.plan_run", [run.pk]))
    for _ in range(max_cycles):
        driver.drain()
        if not answer_all(task, world["truth"], world["user"]):
            driver.drain()
            if not VerificationRequest.objects.filter(task=task, state="pending").exists():
                return
    raise AssertionError("pipeline did not finish")


def latest(task):
    return LeaderboardSnapshot.objects.filter(task=task).order_by("-version").first()


def check_ranks_match_the_replayed_state(task, snapshot):
    """The stored ranks and pairs are what the paired differences of the snapshot's judgment
    set give (replayed in the core), and each stored pair's interval excludes 0 exactly when
    the difference passes the ranks' test."""
    ranking = snapshot.details["ranking"]
    assert ranking["method"] == "paired-differences-max-t"
    assert set(ranking) == {"method", "family_level", "pair_levels", "runs_ranked", "pairs"}
    runs, design, state = replay_task(task, snapshot.labels_version, until=snapshot.created_at)
    listed = {r["run"] for r in snapshot.rows}
    indices = [i for i, run in enumerate(runs) if run.pk in listed and not run.baseline]
    positions = {runs[i].pk: i for i in indices}
    ranks, paired = paired_ranks(
        design, state, indices, design.estimate(state), family_level=ranking["family_level"]
    )
    for r in snapshot.rows:
        for metric in OPEN_MEASURES:
            best, worst = ranks[metric].of(positions[r["run"]])
            expected = None if best is None else {"best": best, "worst": worst}
            assert r["rank"][metric] == expected
            assert (r[metric]["value"] is None) == (expected is None)
    assert ranking["runs_ranked"] == {m: ranks[m].ranked for m in OPEN_MEASURES}
    assert ranking["pair_levels"] == {m: ranks[m].level for m in OPEN_MEASURES}
    again = board_pairs(snapshot.rows, positions, ranks, paired)
    for metric in OPEN_MEASURES:
        stored = ranking["pairs"][metric]
        finite = sum(r[metric]["value"] is not None for r in snapshot.rows)
        assert len(stored) == max(2 * finite - 3, 0)  # each run with its next two
        assert np.allclose(
            np.reshape(stored, (-1, 5)), np.reshape(again[metric], (-1, 5)), atol=1e-12
        )
        se = paired[metric].standard_errors
        crit = stats.norm.ppf(0.5 + ranking["pair_levels"][metric] / 2)
        for above, below, d, low, high in stored:
            assert low <= d <= high
            where = paired[metric].runs.index
            s = se[where(positions[above]), where(positions[below])]
            claimed = d != 0 and (s == 0 or abs(d) / s > crit)
            assert (low > 0 or high < 0) == claimed


@pytest.mark.slow
def test_snapshots_carry_rank_intervals_from_the_paired_differences(world):
    task = world["task"]
    settle(world)
    snapshot = latest(task)
    assert snapshot.engine_version == ENGINE_VERSION == "1.6"
    ranking = snapshot.details["ranking"]
    assert ranking["family_level"] == task.confidence
    assert ranking["runs_ranked"] == dict.fromkeys(OPEN_MEASURES, 3)
    check_ranks_match_the_replayed_state(task, snapshot)
    by_name = {r["name"]: r for r in snapshot.rows}
    # The two copies are tied; the strong runs are separated from the weak one on precision.
    assert by_name["good"]["rank"] == by_name["good-copy"]["rank"]
    assert by_name["good"]["rank"]["precision"] == {"best": 1, "worst": 2}
    assert by_name["weak"]["rank"]["precision"] == {"best": 3, "worst": 3}
    pk = {name: row["run"] for name, row in by_name.items()}
    pairs = {(a, b): (d, low, high) for a, b, d, low, high in ranking["pairs"]["precision"]}
    # The copies' difference is exactly 0; each is above the weak run.
    copies = pairs.get((pk["good"], pk["good-copy"])) or pairs[(pk["good-copy"], pk["good"])]
    assert copies == (0.0, 0.0, 0.0)
    lower = [v for (a, b), v in pairs.items() if b == pk["weak"]]
    assert len(lower) == 2 and all(low > 0 for _, low, _ in lower)
    # Nothing changed: no new snapshot, even though the rows now hold ranks.
    count = LeaderboardSnapshot.objects.filter(task=task).count()
    assert estimate_task(task.pk) is None
    assert LeaderboardSnapshot.objects.filter(task=task).count() == count


@pytest.mark.slow
def test_every_snapshot_has_estimates_for_every_listed_run_in_version_order(world):
    task = world["task"]
    settle(world)
    snapshots = list(LeaderboardSnapshot.objects.filter(task=task).order_by("version"))
    assert len(snapshots) >= 2
    for snapshot in snapshots:
        listed = {r["run"] for r in snapshot.rows}
        stored = Estimate.objects.filter(snapshot=snapshot)
        assert stored.count() == 3 * len(listed)
        assert set(stored.values_list("run_id", flat=True)) == listed
        assert "rank" in snapshot.rows[0] and "ranking" in snapshot.details
        check_ranks_match_the_replayed_state(task, snapshot)
    run = world["runs"][0]
    # The history query a page uses: one metric of one run, oldest snapshot first.
    history = list(
        Estimate.objects.filter(run=run, metric="precision", snapshot__published=True)
        .order_by("snapshot__version")
        .values_list("snapshot__version", "low", "high")
    )
    assert [v for v, _, _ in history] == [
        s.version for s in snapshots if any(r["run"] == run.pk for r in s.rows)
    ]
    assert history[-1][2] - history[-1][1] <= history[0][2] - history[0][1]


@pytest.mark.slow
def test_failed_runs_are_not_ranked_and_not_counted(world):
    task = world["task"]
    failed = world["runs"][1]
    for run in world["runs"]:
        assert plan_run(run.pk) == "sample"
    fail_run(Run.objects.get(pk=failed.pk), "platform error")  # its draws stay in the sample
    settle(world)
    snapshot = latest(task)
    assert failed.pk not in {r["run"] for r in snapshot.rows}
    ranking = snapshot.details["ranking"]
    assert failed.pk not in {pk for m in OPEN_MEASURES for p in ranking["pairs"][m] for pk in p[:2]}
    assert ranking["runs_ranked"] == dict.fromkeys(OPEN_MEASURES, 2)
    check_ranks_match_the_replayed_state(task, snapshot)


def test_runs_without_an_estimate_are_unranked(world):
    task = world["task"]
    for run in world["runs"][:2]:
        assert plan_run(run.pk) == "sample"  # requests out, no answer yet
    snapshot = estimate_task(task.pk)
    rows = snapshot.rows
    assert all(r["provisional"] for r in rows)
    assert any(r["precision"]["value"] is None for r in rows)
    for metric in OPEN_MEASURES:
        finite = [r for r in rows if r[metric]["value"] is not None]
        assert snapshot.details["ranking"]["runs_ranked"][metric] == len(finite)
        for r in rows:
            assert (r["rank"][metric] is None) == (r[metric]["value"] is None)
    check_ranks_match_the_replayed_state(task, snapshot)


def test_a_run_failing_while_the_engine_runs_is_left_out_of_the_ranks(world, monkeypatch):
    from evaluation.kinds.open_world import estimation

    task = world["task"]
    for run in world["runs"]:
        assert plan_run(run.pk) == "sample"
    answer_all(task, world["truth"], world["user"])
    victim = world["runs"][2]
    move_runs_on = estimation._move_runs_on

    def failing_meanwhile(loaded, results):
        # Another worker fails a run after the estimate, before the snapshot is written.
        fail_run(Run.objects.get(pk=victim.pk), "platform error")
        move_runs_on(loaded, results)

    monkeypatch.setattr(estimation, "_move_runs_on", failing_meanwhile)
    snapshot = estimate_task(task.pk)
    assert victim.pk not in {r["run"] for r in snapshot.rows}
    paired_runs = {pk for p in snapshot.details["ranking"]["pairs"]["precision"] for pk in p[:2]}
    assert paired_runs == {r["run"] for r in snapshot.rows}
    assert snapshot.details["ranking"]["runs_ranked"]["precision"] == 2
    check_ranks_match_the_replayed_state(task, snapshot)
