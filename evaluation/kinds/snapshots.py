"""Writing a leaderboard snapshot: its rows and its ``Estimate`` rows, for every kind of task.

Open-world and closed-pool estimation differ in what they estimate, not in what they store: a
row per listed run (its counts, each metric's value and interval, its rank interval per metric)
and an ``Estimate`` per run and metric, under the task's next snapshot version; with fallible
annotators, what the annotator model was fitted to (the snapshot's details) and its fit (the
organizers' view).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from django.db.models import Max
from django.utils import timezone

from evaluation.core import ENGINE_VERSION
from evaluation.core.labels import ItemLabels
from evaluation.core.ranking import RankIntervals
from evaluation.core.results import IntervalEstimate
from leaderboard.models import Estimate, LabelModelFit, LeaderboardSnapshot, Run, Task
from leaderboard.services.board import snapshot_publication

from .engine_rows import LoadedEngine
from .values import stored_value

# Per listed run: the run and its estimates by metric name.
RunEstimates = Sequence[tuple[Run, Mapping[str, IntervalEstimate]]]
# Runs the engine holds that no board lists (their rounds still weigh every verified item).
OFF_BOARD_STATES = (Run.State.FAILED, Run.State.WITHDRAWN)


def listed_indices(runs: Sequence[Run]) -> list[int]:
    """Positions in ``runs`` (the engine's) of the runs a snapshot lists: all but failed and
    withdrawn ones."""
    return [i for i, run in enumerate(runs) if run.state not in OFF_BOARD_STATES]


def ranked_indices(runs: Sequence[Run]) -> list[int]:
    """Positions of the listed runs that are ranked: baselines are listed without a rank (a
    reference point, not a competitor)."""
    return [i for i in listed_indices(runs) if not runs[i].baseline]


def rank_entry(
    ranks: Mapping[str, RankIntervals], index: int
) -> dict[str, dict[str, int | None] | None]:
    """Run ``index``'s rank interval per metric of ``ranks``, as its row stores it: ``None`` for
    a run that is listed without a rank (a baseline) or has no value to rank."""
    entry: dict[str, dict[str, int | None] | None] = {}
    for metric, intervals in ranks.items():
        if index not in intervals.runs:
            entry[metric] = None  # a baseline: listed, not ranked
            continue
        best, worst = intervals.of(index)
        entry[metric] = None if best is None else {"best": best, "worst": worst}
    return entry


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
    if run.baseline:
        row["baseline"] = True
    for metric, est in estimates.items():
        row[metric] = {
            "value": stored_value(est.value),
            "low": est.low,
            "high": est.high,
            "labels_used": est.labels_used,
            "method": est.method,
        }
    row["rank"] = dict(rank)
    if run.state in (Run.State.SCORED, Run.State.PARTIAL):
        # The planner's verdict that ended the run: the board says what stopped a partial one.
        row["outcome"] = run.outcome
    return row


def listed_rows(
    runs: Sequence[Run],
    ranks: Mapping[str, RankIntervals],
    estimates_of: Callable[[int], Mapping[str, IntervalEstimate]],
) -> tuple[RunEstimates, list[dict[str, Any]]]:
    """The listed runs of ``runs`` (:func:`listed_indices`) with their estimates
    (``estimates_of`` their position), and their rows (:func:`snapshot_row`, ranked by
    ``ranks``)."""
    listed = listed_indices(runs)
    estimates = [(runs[i], estimates_of(i)) for i in listed]
    rows = [
        snapshot_row(run, by_metric, rank_entry(ranks, i))
        for i, (run, by_metric) in zip(listed, estimates, strict=True)
    ]
    return estimates, rows


def unchanged(
    loaded: LoadedEngine[Any, Any],
    rows: list[dict[str, Any]],
    *,
    reference_version: int | None = None,
) -> bool:
    """Whether the task's latest snapshot already holds ``rows`` on the judgment set ``loaded``
    rests on (and reference sample, when ``reference_version`` is given): then no new one is
    written."""
    latest = loaded.task.snapshots.order_by("-version").first()
    return (
        latest is not None
        and latest.labels_version == loaded.labels_version
        and (reference_version is None or latest.reference_version == reference_version)
        and latest.rows == rows
    )


def store_snapshot(
    loaded: LoadedEngine[Any, Any],
    *,
    rows: list[dict[str, Any]],
    estimates: RunEstimates,
    reference_version: int,
    n_reference: int,
    n_reference_documents: int,
    details: dict[str, Any],
    labels: ItemLabels | None,
    fit_level: float,
) -> LeaderboardSnapshot:
    """Store the task's next snapshot with ``rows`` and an ``Estimate`` per run and metric, by
    ``loaded``'s design on its judgment set, and with ``labels`` (the design's, ``None`` when it
    takes verified labels as they are) the organizers' view of their fit
    (:func:`store_label_fit`, at ``fit_level``).

    The details also keep the task's target half-width, so that what a run's state says was
    met is read against the target it was decided on. Call with the engine lock held
    (versions are numbered under it).
    """
    task = loaded.task
    version = (task.snapshots.aggregate(v=Max("version"))["v"] or 0) + 1
    now = timezone.now()
    snapshot = LeaderboardSnapshot.objects.create(
        task=task,
        version=version,
        created_at=now,
        engine_version=ENGINE_VERSION,
        design=loaded.design.name,
        labels_version=loaded.labels_version,
        reference_version=reference_version,
        n_labels=loaded.state.n_labelled,
        n_reference=n_reference,
        n_reference_documents=n_reference_documents,
        confidence=task.confidence,
        rows=rows,
        details={**details, "target_half_width": float(task.target_half_width)},
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
    if labels is not None:
        store_label_fit(task, snapshot, labels, level=fit_level)
    return snapshot


def label_details(labels: ItemLabels | None, n_judgments: int) -> dict[str, Any]:
    """How labels entered the estimates, for everyone who reads the snapshot: the annotator
    model's method and what it was fitted to (never anything per annotator or per item); empty
    with exact labels."""
    model = labels.model if labels is not None else None
    if model is None:
        return {}
    return {
        "label_model": {
            "method": model.method,
            "judgments": int(n_judgments),
            "items": int(model.items.size),
            "annotators": int(model.annotators.size),
            "converged": bool(model.converged),
        }
    }


def store_label_fit(
    task: Task, snapshot: LeaderboardSnapshot, labels: ItemLabels, *, level: float
) -> None:
    """The organizers' view of the fit behind ``snapshot``: every verified item's probability
    of being correct (the items export) and each annotator's error rates with intervals at
    ``level`` (the queue page)."""
    summaries = [] if labels.model is None else labels.model.summaries(level=level)
    indices = np.flatnonzero(labels.verified)
    LabelModelFit.objects.update_or_create(
        task=task,
        defaults={
            "snapshot": snapshot,
            "indices": indices.astype("<i8").tobytes(),
            "values": labels.value[indices].astype("<f8").tobytes(),
            "judgments": labels.judgments[indices].astype("<i4").tobytes(),
            "says_correct": labels.says_correct[indices].astype("<i4").tobytes(),
            "level": level,
            "annotators": [
                {
                    "annotator": a.annotator,
                    "sensitivity": [
                        stored_value(a.sensitivity),
                        stored_value(a.sensitivity_low),
                        stored_value(a.sensitivity_high),
                    ],
                    "specificity": [
                        stored_value(a.specificity),
                        stored_value(a.specificity_low),
                        stored_value(a.specificity_high),
                    ],
                    "judgments": a.judgments,
                    "gold_judgments": a.gold_judgments,
                    "weight": stored_value(a.weight),
                }
                for a in summaries
            ],
        },
    )
