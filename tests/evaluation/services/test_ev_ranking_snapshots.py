"""Every snapshot stores rank intervals per run and metric, and the adjusted intervals behind them.

Also checks the history shape the pages read: one ``Estimate`` row per (snapshot, listed run,
metric), ordered by snapshot version.
"""

import numpy as np
import pytest

from annotation.models import VerificationRequest
from evaluation.core import ENGINE_VERSION
from evaluation.core.measures import OPEN_MEASURES
from evaluation.core.ranking import bonferroni_level, rank_intervals
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


def check_ranks_match_stored_intervals(snapshot):
    """Ranks recomputed from the stored adjusted intervals equal the stored ranks."""
    ranking = snapshot.details["ranking"]
    rows = snapshot.rows
    for metric in OPEN_MEASURES:
        values = [np.nan if r[metric]["value"] is None else r[metric]["value"] for r in rows]
        ranked = [r for r in rows if str(r["run"]) in ranking["intervals"]]
        assert len(ranked) == len(rows)
        low = [ranking["intervals"][str(r["run"])][metric][0] for r in rows]
        high = [ranking["intervals"][str(r["run"])][metric][1] for r in rows]
        again = rank_intervals(
            values,
            low,
            high,
            family_level=ranking["family_level"],
            level=ranking["interval_level"],
            runs=[r["run"] for r in rows],
        )
        assert again.ranked == ranking["runs_ranked"][metric]
        for r, best, worst in zip(rows, again.best, again.worst, strict=True):
            expected = None if best is None else {"best": best, "worst": worst}
            assert r["rank"][metric] == expected
            assert (r[metric]["value"] is None) == (expected is None)
            # The adjusted interval contains the published one (it is at a higher level).
            k = ranking["intervals"][str(r["run"])][metric]
            assert k[0] <= r[metric]["low"] + 1e-12 and k[1] >= r[metric]["high"] - 1e-12


@pytest.mark.slow
def test_snapshots_carry_rank_intervals_consistent_with_the_adjusted_intervals(world):
    task = world["task"]
    settle(world)
    snapshot = latest(task)
    assert snapshot.engine_version == ENGINE_VERSION == "1.6"
    ranking = snapshot.details["ranking"]
    assert ranking["method"] == "bonferroni-simultaneous-intervals"
    assert ranking["family_level"] == task.confidence
    assert ranking["interval_level"] == pytest.approx(bonferroni_level(task.confidence, 3))
    assert ranking["runs_ranked"] == dict.fromkeys(OPEN_MEASURES, 3)
    check_ranks_match_stored_intervals(snapshot)
    by_name = {r["name"]: r for r in snapshot.rows}
    # The two copies are tied; the strong runs are separated from the weak one on precision.
    assert by_name["good"]["rank"] == by_name["good-copy"]["rank"]
    assert by_name["good"]["rank"]["precision"] == {"best": 1, "worst": 2}
    assert by_name["weak"]["rank"]["precision"] == {"best": 3, "worst": 3}
    # The stored adjusted intervals are what the core gives at that level on the replayed state.
    runs, design, state = replay_task(task)
    replayed = design.estimate(state, level=ranking["interval_level"])
    for run, result in zip(runs, replayed, strict=True):
        for metric in OPEN_MEASURES:
            est = getattr(result, metric)
            assert ranking["intervals"][str(run.pk)][metric] == [est.low, est.high]
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
        check_ranks_match_stored_intervals(snapshot)
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
    assert str(failed.pk) not in ranking["intervals"]
    assert ranking["runs_ranked"] == dict.fromkeys(OPEN_MEASURES, 2)
    assert ranking["interval_level"] == pytest.approx(bonferroni_level(task.confidence, 2))
    check_ranks_match_stored_intervals(snapshot)


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
    check_ranks_match_stored_intervals(snapshot)


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
    assert set(snapshot.details["ranking"]["intervals"]) == {str(r["run"]) for r in snapshot.rows}
    assert snapshot.details["ranking"]["runs_ranked"]["precision"] == 2
    check_ranks_match_stored_intervals(snapshot)
