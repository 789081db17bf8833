"""``estimate_task``: estimate every run of a task at once, store a snapshot, move runs on."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from evaluation.core.measures import OPEN_MEASURES
from evaluation.core.ranking import RankIntervals, bonferroni_level, rank_estimates
from evaluation.core.results import RunEstimate
from leaderboard.jobs import enqueue_plan
from leaderboard.models import LeaderboardSnapshot, Run, Task
from leaderboard.services.lifecycle import transition_run

from ..engine_state import LoadedTask, load_task_state
from ..locks import assert_lock_held, engine_lock
from .pool_estimation import estimate_pool_locked
from .reference_sample import update_reference_sample
from .snapshots import (
    label_details,
    listed_indices,
    ranked_indices,
    snapshot_row,
    store_label_fit,
    store_snapshot,
)
from .withdrawals import cancel_withdrawn_requests


def estimate_task(task_id: int) -> LeaderboardSnapshot | None:
    """Re-estimate ``task_id`` and publish a snapshot; idempotent.

    One job per task at a time (the engine lock). The task's ``estimate_pending`` flag is cleared
    first, so answers that arrive while this runs schedule one more estimation. A snapshot is
    written only when something it rests on changed (labels, reference sample, runs or their
    states); either way, runs whose answers are all in move on: those short of the target are
    planned again, those in final estimation end ``scored`` or ``partial`` with the reason. A
    reference sample being verified is checked last (:mod:`.reference_sample`).
    Returns the snapshot written, or ``None``.
    """
    if not Task.objects.filter(pk=task_id).exists():
        return None
    with engine_lock(task_id) as token:
        Task.objects.filter(pk=task_id).update(estimate_pending=False)
        task = Task.objects.get(pk=task_id)
        if task.kind == Task.Kind.CLOSED_POOL:
            return estimate_pool_locked(task, token)
        loaded = load_task_state(task)
        results = loaded.design.estimate(loaded.state) if loaded.runs else []
        ranking = _rank_runs(loaded, results, tuple(ranked_indices(loaded.runs)))
        with transaction.atomic():
            task = assert_lock_held(task_id, token)
            _move_runs_on(loaded, results)
            snapshot = _store_snapshot(task, loaded, results, ranking)
        # A reference sample being verified: its progress, looks at its doubtful candidates,
        # and the sample once it is complete.
        update_reference_sample(loaded, token)
        # Requests of withdrawn runs that nothing needs any more leave the queue.
        cancel_withdrawn_requests(loaded, token)
        return snapshot


@dataclass(frozen=True)
class _Ranking:
    """Rank intervals of the listed runs per metric, and the adjusted estimates behind them."""

    indices: tuple[int, ...]  # positions in ``loaded.runs`` of the ranked (listed) runs
    family_level: float
    interval_level: float
    ranks: dict[str, RankIntervals]  # metric -> rank intervals over ``indices``
    adjusted: dict[int, RunEstimate]  # position -> estimate at ``interval_level``


def _rank_runs(
    loaded: LoadedTask, results: list[RunEstimate], indices: tuple[int, ...]
) -> _Ranking:
    """Rank intervals of the runs at ``indices`` on every metric (docs/STATISTICS.md, ranks).

    Every run is re-estimated at the Bonferroni level for the largest number ``K`` of runs with a
    finite value on any metric, in one engine call; a metric with fewer ranked runs is then ranked
    conservatively (its intervals are at a higher level than it needs).
    """
    family = float(loaded.design.confidence)
    k = max(
        (sum(math.isfinite(getattr(results[i], m).value) for i in indices) for m in OPEN_MEASURES),
        default=0,
    )
    level = bonferroni_level(family, k)
    adjusted: dict[int, RunEstimate]
    if not indices:
        adjusted = {}
    elif level == family:
        adjusted = {i: results[i] for i in indices}
    else:
        adjusted = dict(
            zip(
                indices,
                loaded.design.estimate(loaded.state, runs=indices, level=level),
                strict=True,
            )
        )
    estimates = [adjusted[i] for i in indices]
    ranks = {
        m: rank_estimates(estimates, m, family_level=family, runs=indices)
        if indices
        else RankIntervals((), (), (), 0, level, family)
        for m in OPEN_MEASURES
    }
    return _Ranking(indices, family, level, ranks, adjusted)


def _move_runs_on(loaded: LoadedTask, results: list[RunEstimate]) -> None:
    target = loaded.task.target_half_width
    for index, run in enumerate(loaded.runs):
        run.refresh_from_db()
        drawn, verified = loaded.drawn_for_run(run.pk)
        counts = {"n_requested": drawn, "n_verified": verified}
        if run.state == Run.State.AWAITING_LABELS and loaded.pending_in_run(index) == 0:
            transition_run(
                run, Run.State.PLANNING, "answers are in: planning the next round", **counts
            )
            enqueue_plan(run.pk)
        elif run.state == Run.State.ESTIMATING:
            precision = results[index].precision
            state, reason = _final_state(
                run.outcome, precision.half_width, target, loaded.task.label_budget, run.rounds
            )
            transition_run(run, state, reason, **counts)
        elif (
            run.state == Run.State.PARTIAL
            and run.outcome == "annotator_limited"
            and results[index].precision.half_width <= target
        ):
            transition_run(
                run,
                Run.State.SCORED,
                (
                    f"precision ±{results[index].precision.half_width:.3f} meets the target "
                    f"±{target:g} now that the annotators' error rates are known better"
                ),
                **counts,
            )
        elif (run.n_requested, run.n_verified) != (drawn, verified):
            Run.objects.filter(pk=run.pk).update(**counts)
            run.n_requested, run.n_verified = drawn, verified


def _final_state(
    outcome: str, half_width: float, target: float, budget: int | None, rounds: int
) -> tuple[str, str]:
    if outcome in ("met", "exhausted") or half_width <= target:
        return Run.State.SCORED, f"precision ±{half_width:.3f} meets the target ±{target:g}"
    if outcome == "budget_exhausted":
        return Run.State.PARTIAL, (
            f"the task's budget ({budget} judgments) is spent; precision ±{half_width:.3f} "
            f"is wider than the target ±{target:g}"
        )
    if outcome == "annotator_limited":
        return Run.State.PARTIAL, (
            f"precision ±{half_width:.3f} is wider than the target ±{target:g} because the "
            "annotators' error rates are not known well enough yet; more answers anywhere in "
            "the task (gold answers most) narrow it, and the board updates as they come"
        )
    return Run.State.PARTIAL, (
        f"stopped after {rounds} planning rounds; precision ±{half_width:.3f} is wider than "
        f"the target ±{target:g}"
    )


def _store_snapshot(
    task: Task, loaded: LoadedTask, results: list[RunEstimate], ranking: _Ranking
) -> LeaderboardSnapshot | None:
    listed = [(i, loaded.runs[i]) for i in listed_indices(loaded.runs)]
    ranked = tuple(ranked_indices(loaded.runs))
    if ranked != ranking.indices:
        # A run failed or was withdrawn (or marked a baseline) while the engine ran: rank the
        # runs the snapshot ranks.
        ranking = _rank_runs(loaded, results, ranked)
    estimates = [(run, {m: getattr(results[i], m) for m in OPEN_MEASURES}) for i, run in listed]
    rows = [
        snapshot_row(run, by_metric, _rank_entry(ranking, i))
        for (i, _), (run, by_metric) in zip(listed, estimates, strict=True)
    ]
    latest = task.snapshots.order_by("-version").first()
    if latest is not None and _same(latest, loaded, rows):
        return None
    labels = loaded.design.labels(loaded.state)
    snapshot = store_snapshot(
        task,
        rows=rows,
        estimates=estimates,
        design=loaded.design.name,
        labels_version=loaded.labels_version,
        reference_version=loaded.reference_version,
        n_labels=loaded.state.n_labelled,
        n_reference=loaded.state.reference.size,
        n_reference_documents=loaded.state.reference.n_groups,
        details={
            "ranking": _ranking_details(ranking, loaded),
            **label_details(labels, loaded.state.n_judgments),
        },
    )
    store_label_fit(task, snapshot, labels, level=float(loaded.design.confidence))
    return snapshot


def _same(latest: LeaderboardSnapshot, loaded: LoadedTask, rows: list[dict[str, Any]]) -> bool:
    return (
        latest.labels_version == loaded.labels_version
        and latest.reference_version == loaded.reference_version
        and latest.rows == rows
    )


def _rank_entry(ranking: _Ranking, index: int) -> dict[str, dict[str, int | None] | None]:
    entry: dict[str, dict[str, int | None] | None] = {}
    if index not in ranking.indices:
        return dict.fromkeys(OPEN_MEASURES)  # a baseline: listed, not ranked
    for m in OPEN_MEASURES:
        best, worst = ranking.ranks[m].of(index)
        entry[m] = None if best is None else {"best": best, "worst": worst}
    return entry


def _ranking_details(ranking: _Ranking, loaded: LoadedTask) -> dict[str, Any]:
    """How the ranks were obtained, and the adjusted intervals they rest on (per run pk)."""
    intervals = {}
    for i in ranking.indices:
        result = ranking.adjusted[i]
        intervals[str(loaded.runs[i].pk)] = {
            m: [getattr(result, m).low, getattr(result, m).high] for m in OPEN_MEASURES
        }
    return {
        "method": ranking.ranks["precision"].method,
        "family_level": ranking.family_level,
        "interval_level": ranking.interval_level,
        "runs_ranked": {m: ranking.ranks[m].ranked for m in OPEN_MEASURES},
        "intervals": intervals,
    }
