"""Writing a leaderboard snapshot: its rows and its ``Estimate`` rows, for every kind of task.

Open-world and closed-pool estimation differ in what they estimate, not in what they store: a
row per listed run (its counts, each metric's value and interval, its rank interval per metric)
and an ``Estimate`` per run and metric, under the task's next snapshot version.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from django.db.models import Max
from django.utils import timezone

from evaluation.core import ENGINE_VERSION
from evaluation.core.results import IntervalEstimate
from leaderboard.models import Estimate, LeaderboardSnapshot, Run, Task
from leaderboard.services.board import snapshot_publication

# Per listed run: the run and its estimates by metric name.
RunEstimates = Sequence[tuple[Run, Mapping[str, IntervalEstimate]]]


def stored_value(x: float) -> float | None:
    """A value as stored in JSON and in ``Estimate.value``: ``None`` for nan."""
    return float(x) if math.isfinite(x) else None


def snapshot_row(
    run: Run,
    estimates: Mapping[str, IntervalEstimate],
    rank: Mapping[str, dict[str, int | None] | None],
) -> dict[str, Any]:
    """A run's row of a snapshot: its counts, every metric of ``estimates``, its ranks."""
    row: dict[str, Any] = {
        "run": run.pk,
        "name": run.name,
        "team": run.team.name,
        "state": run.state,
        "provisional": run.state not in (Run.State.SCORED, Run.State.PARTIAL),
        "n_predictions": run.n_predictions,
        "n_requested": run.n_requested,
        "n_verified": run.n_verified,
    }
    for metric, est in estimates.items():
        row[metric] = {
            "value": stored_value(est.value),
            "low": est.low,
            "high": est.high,
            "labels_used": est.labels_used,
            "method": est.method,
        }
    row["rank"] = dict(rank)
    return row


def store_snapshot(
    task: Task,
    *,
    rows: list[dict[str, Any]],
    estimates: RunEstimates,
    design: str,
    labels_version: int,
    reference_version: int,
    n_labels: int,
    n_reference: int,
    details: dict[str, Any],
) -> LeaderboardSnapshot:
    """Store the task's next snapshot with ``rows`` and an ``Estimate`` per run and metric.

    Call with the engine lock held (versions are numbered under it).
    """
    version = (task.snapshots.aggregate(v=Max("version"))["v"] or 0) + 1
    now = timezone.now()
    snapshot = LeaderboardSnapshot.objects.create(
        task=task,
        version=version,
        created_at=now,
        engine_version=ENGINE_VERSION,
        design=design,
        labels_version=labels_version,
        reference_version=reference_version,
        n_labels=n_labels,
        n_reference=n_reference,
        confidence=task.confidence,
        rows=rows,
        details=details,
        **snapshot_publication(task),
    )
    Estimate.objects.bulk_create(
        [
            Estimate(
                snapshot=snapshot,
                run=run,
                metric=metric,
                value=stored_value(est.value),
                low=est.low,
                high=est.high,
                level=est.level,
                labels_used=est.labels_used,
                method=est.method,
                computed_at=now,
            )
            for run, by_metric in estimates
            for metric, est in by_metric.items()
        ],
        batch_size=2000,
    )
    return snapshot
