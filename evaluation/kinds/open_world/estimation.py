"""Estimating an open-world task: every run's precision, recall and F1 at once, ranks, a snapshot.

Called by :func:`evaluation.services.estimate_task` with the engine lease held. The design
estimates every run from the task's judgment set and reference sample (docs/STATISTICS.md); rank
intervals per metric come from every pairwise difference at once (:mod:`.paired_ranks`), or, for
a design without paired differences (``published``), from intervals at the Bonferroni level for
the runs ranked. Runs whose
answers are all in are planned again; runs in final estimation end ``scored`` or ``partial``
(:mod:`..progress`); a run partial for the annotators' error rates becomes ``scored`` once its
precision meets the target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from evaluation.core.measures import OPEN_MEASURES
from evaluation.core.paired import PairedDifferences
from evaluation.core.ranking import RankIntervals, bonferroni_level, rank_estimates
from evaluation.core.results import RunEstimate
from leaderboard.models import LeaderboardSnapshot, Run, Task

from ...locks import assert_lock_held
from ..progress import final_state, move_runs_on
from ..snapshots import label_details, listed_rows, ranked_indices, store_snapshot, unchanged
from .paired_ranks import board_pairs, paired_available, paired_ranks
from .reference_sample import update_reference_sample
from .state import LoadedTask, load_task_state
from .withdrawals import cancel_withdrawn_requests

# How a run's final state is worded (:func:`..progress.final_state`): by its precision.
FINAL_REASONS = {
    "met": "precision ±{width:.3f} meets the target ±{target:g}",
    "budget_exhausted": (
        "the task's budget ({budget} judgments) is spent; precision ±{width:.3f} "
        "is wider than the target ±{target:g}"
    ),
    "annotator_limited": (
        "precision ±{width:.3f} is wider than the target ±{target:g} because the "
        "annotators' error rates are not known well enough yet; more answers anywhere in "
        "the task (gold answers most) narrow it, and the board updates as they come"
    ),
    "gave_up": (
        "stopped after {rounds} planning rounds; precision ±{width:.3f} is wider than "
        "the target ±{target:g}"
    ),
}


def estimate_locked(task: Task, token: str) -> LeaderboardSnapshot | None:
    """Estimate every run of open-world ``task``, move runs on and store a snapshot if anything
    changed (the caller holds the engine lease); returns the snapshot or ``None``.

    A reference sample being verified is checked last (:mod:`.reference_sample`), and the
    requests only withdrawn runs needed leave the queue (:mod:`.withdrawals`).
    """
    loaded = load_task_state(task)
    results = loaded.design.estimate(loaded.state) if loaded.runs else []
    ranking = _rank_runs(loaded, results, tuple(ranked_indices(loaded.runs)))
    with transaction.atomic():
        task = assert_lock_held(task.pk, token)
        _move_runs_on(loaded, results)
        snapshot = _store_snapshot(loaded, results, ranking)
    # A reference sample being verified: its progress, looks at its doubtful candidates,
    # and the sample once it is complete.
    update_reference_sample(loaded, token)
    # Requests of withdrawn runs that nothing needs any more leave the queue.
    cancel_withdrawn_requests(loaded, token)
    return snapshot


@dataclass(frozen=True)
class _Ranking:
    """Rank intervals of the listed runs per metric, and what they rest on: the paired
    differences (``paired``), or the adjusted estimates (Bonferroni, ``paired`` empty)."""

    indices: tuple[int, ...]  # positions in ``loaded.runs`` of the ranked (listed) runs
    family_level: float
    interval_level: float
    ranks: dict[str, RankIntervals]  # metric -> rank intervals over ``indices``
    adjusted: dict[int, RunEstimate]  # position -> estimate at ``interval_level``
    paired: dict[str, PairedDifferences] | None = None  # metric -> over ``indices``


def _rank_runs(
    loaded: LoadedTask, results: list[RunEstimate], indices: tuple[int, ...]
) -> _Ranking:
    """Rank intervals of the runs at ``indices`` on every metric (docs/STATISTICS.md, ranks).

    From paired differences when the design gives them (:mod:`.paired_ranks`). Otherwise every
    run is re-estimated at the Bonferroni level for the largest number ``K`` of runs with a
    finite value on any metric, in one engine call; a metric with fewer ranked runs is then ranked
    conservatively (its intervals are at a higher level than it needs).
    """
    family = float(loaded.design.confidence)
    if indices and paired_available(loaded.design):
        ranks, paired = paired_ranks(
            loaded.design, loaded.state, indices, results, family_level=family
        )
        return _Ranking(indices, family, ranks["precision"].level, ranks, {}, paired)
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
    task = loaded.task
    target = task.target_half_width

    def rescored(index: int, run: Run) -> str | None:
        # A run partial for the annotators' error rates is scored once its interval meets the
        # target.
        if run.state != Run.State.PARTIAL or run.outcome != "annotator_limited":
            return None
        width = results[index].precision.half_width
        if not width <= target:
            return None
        return (
            f"precision ±{width:.3f} meets the target ±{target:g} now that the annotators' "
            "error rates are known better"
        )

    move_runs_on(
        loaded.runs,
        counts=lambda run: loaded.drawn_for_run(run.pk),
        answers_in=lambda index: loaded.pending_in_run(index) == 0,
        final_state=lambda index, run: final_state(
            run, results[index].precision.half_width, task, FINAL_REASONS
        ),
        rescored=rescored,
    )


def _store_snapshot(
    loaded: LoadedTask, results: list[RunEstimate], ranking: _Ranking
) -> LeaderboardSnapshot | None:
    ranked = tuple(ranked_indices(loaded.runs))
    if ranked != ranking.indices:
        # A run failed or was withdrawn (or marked a baseline) while the engine ran: rank the
        # runs the snapshot ranks.
        ranking = _rank_runs(loaded, results, ranked)
    estimates, rows = listed_rows(
        loaded.runs, ranking.ranks, lambda i: {m: getattr(results[i], m) for m in OPEN_MEASURES}
    )
    if unchanged(loaded, rows, reference_version=loaded.reference_version):
        return None
    labels = loaded.design.labels(loaded.state)
    return store_snapshot(
        loaded,
        rows=rows,
        estimates=estimates,
        reference_version=loaded.reference_version,
        n_reference=loaded.state.reference.size,
        n_reference_documents=loaded.state.reference.n_groups,
        details={
            "ranking": _ranking_details(ranking, loaded, rows),
            **label_details(labels, loaded.state.n_judgments),
        },
        labels=labels,
        fit_level=float(loaded.design.confidence),
    )


def _ranking_details(
    ranking: _Ranking, loaded: LoadedTask, rows: list[dict[str, Any]]
) -> dict[str, Any]:
    """How the ranks were obtained, and what they rest on: the differences of the pairs of runs
    near each other on the board (:func:`.paired_ranks.board_pairs`) at each metric's level, or
    the adjusted intervals (per run pk)."""
    if ranking.paired is not None:
        positions = {loaded.runs[i].pk: i for i in ranking.indices}
        return {
            "method": ranking.ranks["precision"].method,
            "family_level": ranking.family_level,
            "pair_levels": {m: ranking.ranks[m].level for m in OPEN_MEASURES},
            "runs_ranked": {m: ranking.ranks[m].ranked for m in OPEN_MEASURES},
            "pairs": board_pairs(rows, positions, ranking.ranks, ranking.paired),
        }
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
