"""Closed-pool estimation stores each run's precision-recall curve with every snapshot, and
estimates F-beta at the task's beta beside F1 (driven in-process, as test_ev_pool_pipeline)."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.core.closed_pool import measure_value
from evaluation.kinds.closed_pool.estimation import CURVE_POINTS
from leaderboard.models import Estimate, LeaderboardSnapshot, Run, RunCurve

from pipeline_support import PipelineDriver
from pool_pipeline import pool_world, settle

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def driver(monkeypatch):
    return PipelineDriver(monkeypatch)


@pytest.mark.slow
def test_every_snapshot_stores_each_runs_curve_through_its_own_estimates(driver):
    world = pool_world(
        target_half_width=0.2, measures=("precision", "recall", "f1", "fbeta"), f_beta=2.0
    )
    settle(driver, world)
    runs = list(Run.objects.filter(task=world.task).order_by("id"))
    snapshots = list(LeaderboardSnapshot.objects.filter(task=world.task).order_by("version"))
    assert snapshots
    for snapshot in snapshots:
        assert RunCurve.objects.filter(snapshot=snapshot).count() == len(snapshot.rows)
    latest = snapshots[-1]
    assert latest.details["closed_pool"]["f_beta"] == 2.0
    for run in runs:
        curve = RunCurve.objects.get(snapshot=latest, run=run).data
        n = len(curve["thresholds"])
        assert CURVE_POINTS - 5 <= n <= CURVE_POINTS + 1
        assert curve["thresholds"] == sorted(curve["thresholds"])
        assert curve["level"] == world.task.confidence and curve["labels_used"] == latest.n_labels
        k = curve["operating_point"]
        assert k is not None, run.name  # every synthetic run predicts score >= t
        stored = {
            e.metric: e
            for e in Estimate.objects.filter(
                snapshot=latest, run=run, metric__in=["precision", "recall"]
            )
        }
        # The same sums, added in another order (the curve takes every threshold in one pass;
        # the labels' variance, corrected for annotator error, adds more of them: 1e-10).
        same = {"rel": 1e-9, "abs": 1e-9}
        assert (curve["recall"][k], curve["recall_low"][k], curve["recall_high"][k]) == (
            pytest.approx(
                (stored["recall"].value, stored["recall"].low, stored["recall"].high), **same
            )
        )
        if stored["precision"].value is not None:
            assert (curve["precision"][k], curve["precision_low"][k]) == pytest.approx(
                (stored["precision"].value, stored["precision"].low), **same
            )
        # Recall falls as the threshold rises (a closed pool: every item scored); each
        # threshold's predictions get rates of their own (a fitted shift), so the estimates may
        # rise by a hair (measured: 5e-5), far inside their intervals.
        recall = np.array(curve["recall"], dtype=float)
        assert recall[0] == pytest.approx(1.0, abs=0.05) and np.all(np.diff(recall) <= 1e-3)


@pytest.mark.slow
def test_f_beta_is_estimated_at_the_tasks_beta_beside_f1(driver):
    world = pool_world(target_half_width=0.2, measures=("f1", "fbeta"), f_beta=0.5)
    settle(driver, world)
    latest = LeaderboardSnapshot.objects.filter(task=world.task).order_by("-version").first()
    for row in latest.rows:
        run = Run.objects.get(pk=row["run"])
        _, predictions = world.systems[run.name]
        tp = np.count_nonzero(world.truth & predictions)
        fn = np.count_nonzero(world.truth & ~predictions)
        pp, n = np.count_nonzero(predictions), world.truth.size
        true_fb = float(measure_value("fbeta", tp, fn, pp=pp, n=n, beta=0.5))
        true_f1 = float(measure_value("f1", tp, fn, pp=pp, n=n))
        assert true_fb != pytest.approx(true_f1)  # the two measures differ on these runs
        # One fixed seed: each 95% interval checked against its own truth.
        assert row["fbeta"]["low"] <= true_fb <= row["fbeta"]["high"], (run.name, row["fbeta"])
        assert row["f1"]["low"] <= true_f1 <= row["f1"]["high"], (run.name, row["f1"])
    assert set(Estimate.objects.filter(snapshot=latest).values_list("metric", flat=True)) == {
        "f1",
        "fbeta",
    }
