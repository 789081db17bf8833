"""Estimating a closed-pool task: every run's measures with intervals, ranks, a snapshot.

Called by :func:`evaluation.services.estimate_task` with the engine lease held. The adaptive design
estimates each of the task's measures for every run from the shared labels (docs/STATISTICS.md,
"Closed pools"); rank intervals per measure come from every pairwise difference at once
(:mod:`evaluation.core.closed_pool.paired`, max-t), as an open task's do, with the differences
of the pairs near each other on the board stored for the pair view (a design whose estimates
give none, which the product offers no closed pool today, would rank on intervals at the
Bonferroni level for the runs ranked). Runs whose answers are all in are
planned again; runs in final estimation end ``scored`` (every measure within the target, or the
pool exhausted) or ``partial`` (the budget or the round limit stopped them first).

With every new snapshot each listed run's estimated precision-recall curve
(:meth:`evaluation.core.closed_pool.PoolDesign.curve`, pointwise intervals at the task's
confidence) is stored beside it as a ``RunCurve``: it costs a pass over the pool per threshold,
so it is made here, in the worker, and the run page only reads it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import transaction

from evaluation.core.closed_pool import MeasureEstimates
from evaluation.core.closed_pool.label_noise import LOOK_ANNOTATORS
from evaluation.core.closed_pool.paired import PoolModelDesign, pool_paired_differences
from evaluation.core.labels import ItemLabels
from evaluation.core.paired import PairedDifferences
from evaluation.core.ranking import (
    METHOD,
    RankIntervals,
    bonferroni_level,
    paired_rank_intervals,
    rank_intervals,
)
from leaderboard.models import LeaderboardSnapshot, RunCurve, Task

from ...locks import assert_lock_held
from ...models import Draw
from ..board_pairs import board_pairs
from ..progress import final_state, move_runs_on
from ..snapshots import (
    label_details,
    listed_indices,
    listed_rows,
    ranked_indices,
    store_snapshot,
    unchanged,
)
from .state import LoadedPool, load_pool_state

# Thresholds of a run's precision-recall curve (quantiles of its scores, plus its own).
CURVE_POINTS = 30
# How a run's final state is worded (:func:`..progress.final_state`): by its widest interval.
FINAL_REASONS = {
    "met": "every measure within ±{width:.3f} (target ±{target:g})",
    "budget_exhausted": (
        "the task's budget ({budget} judgments) is spent; the widest interval "
        "is ±{width:.3f}, the target ±{target:g}"
    ),
    "gave_up": (
        "stopped after {rounds} planning rounds; the widest interval is ±{width:.3f}, "
        "the target ±{target:g}"
    ),
}


def estimate_locked(task: Task, token: str) -> LeaderboardSnapshot | None:
    """Estimate every run of closed-pool ``task``, move runs on and store a snapshot if anything
    changed (the caller holds the engine lease); returns the snapshot or ``None``."""
    if not task.n_items:
        return None  # no pool yet: no run can have been accepted
    loaded = load_pool_state(task)
    measures = list(task.measures)
    results = (
        loaded.design.estimate(loaded.state, level=task.confidence, measures=measures)
        if loaded.runs
        else []
    )
    with transaction.atomic():
        task = assert_lock_held(task.pk, token)
        counts = _counts(loaded)
        _move_runs_on(loaded, results, counts)
        return _store_snapshot(task, loaded, results)


def _counts(loaded: LoadedPool) -> dict[int, tuple[int, int]]:
    """Per run pk: items drawn by its rounds, and how many of them have a label."""
    drawn: defaultdict[int, list[int]] = defaultdict(list)
    for run_id, index in Draw.objects.filter(plan_round__task=loaded.task).values_list(
        "plan_round__run_id", "item__index"
    ):
        drawn[run_id].append(index)
    labelled = loaded.state.labelled
    return {
        pk: (len(items), int(np.count_nonzero(labelled[np.asarray(items, dtype=np.int64)])))
        for pk, items in drawn.items()
    }


def _widest(result: MeasureEstimates) -> float:
    return max(float(e.half_width) for e in result.values())


def _move_runs_on(
    loaded: LoadedPool, results: list[MeasureEstimates], counts: dict[int, tuple[int, int]]
) -> None:
    # One round serves the whole pool: a run's answers are in when nothing anyone can answer
    # is still out.
    waiting = loaded.pending().size
    move_runs_on(
        loaded.runs,
        counts=lambda run: counts.get(run.pk, (0, 0)),
        answers_in=lambda _index: not waiting,
        final_state=lambda index, run: final_state(
            run, _widest(results[index]), loaded.task, FINAL_REASONS
        ),
    )


@dataclass(frozen=True)
class _Ranking:
    """Rank intervals of the listed runs per measure, and what they rest on: the paired
    differences (``paired``), or the estimates at the Bonferroni level (``adjusted``)."""

    listed: tuple[int, ...]  # positions in ``loaded.runs`` of the ranked (listed) runs
    family_level: float
    ranks: dict[str, RankIntervals]  # measure -> rank intervals over ``listed``
    paired: dict[str, PairedDifferences] | None = None  # measure -> over ``listed``
    interval_level: float = math.nan
    adjusted: Sequence[MeasureEstimates] = ()  # per run of the state, at ``interval_level``


def _ranks(
    loaded: LoadedPool, results: list[MeasureEstimates], listed: Sequence[int], measures: list[str]
) -> _Ranking:
    """Rank intervals of the listed runs per measure: from every pairwise difference at once
    when the design's estimates give them (:mod:`evaluation.core.closed_pool.paired`, the
    ``adaptive`` design), otherwise from every run's intervals at the Bonferroni level."""
    family = float(loaded.task.confidence)
    design = loaded.design
    if listed and isinstance(design, PoolModelDesign):
        paired = pool_paired_differences(
            design, loaded.state, results, measures=measures, runs=listed
        )
        ranks = {
            m: paired_rank_intervals(paired[m], family_level=family, rng=np.random.default_rng(0))
            for m in measures
        }
        return _Ranking(tuple(listed), family, ranks, paired)
    k = max((sum(math.isfinite(results[i][m].value) for i in listed) for m in measures), default=0)
    level = bonferroni_level(family, k)
    adjusted = (
        results
        if level == family or not listed
        else design.estimate(loaded.state, level=level, measures=measures)
    )
    ranks = {
        m: rank_intervals(
            [adjusted[i][m].value for i in listed],
            [adjusted[i][m].low for i in listed],
            [adjusted[i][m].high for i in listed],
            family_level=family,
            level=level,
            runs=listed,
        )
        for m in measures
    }
    return _Ranking(tuple(listed), family, ranks, None, level, adjusted)


def _ranking_details(
    ranking: _Ranking, loaded: LoadedPool, rows: list[dict[str, Any]], measures: list[str]
) -> dict[str, Any]:
    """How the ranks were obtained, and what they rest on: the differences of the pairs of runs
    near each other on the board (:func:`..board_pairs.board_pairs`) at each measure's level, or
    the adjusted intervals (per run pk), as an open task's snapshot stores them."""
    runs_ranked = {m: ranking.ranks[m].ranked for m in measures}
    method = ranking.ranks[measures[0]].method if measures else METHOD
    if ranking.paired is not None:
        positions = {loaded.runs[i].pk: i for i in ranking.listed}
        return {
            "method": method,
            "family_level": ranking.family_level,
            "pair_levels": {m: ranking.ranks[m].level for m in measures},
            "runs_ranked": runs_ranked,
            "pairs": board_pairs(rows, positions, ranking.ranks, ranking.paired, measures),
        }
    adjusted = ranking.adjusted
    return {
        "method": method,
        "family_level": ranking.family_level,
        "interval_level": ranking.interval_level,
        "runs_ranked": runs_ranked,
        "intervals": {
            str(loaded.runs[i].pk): {m: [adjusted[i][m].low, adjusted[i][m].high] for m in measures}
            for i in ranking.listed
        },
    }


def _store_snapshot(
    task: Task, loaded: LoadedPool, results: list[MeasureEstimates]
) -> LeaderboardSnapshot | None:
    measures = list(task.measures)
    ranking = _ranks(loaded, results, ranked_indices(loaded.runs), measures)
    estimates, rows = listed_rows(
        loaded.runs, ranking.ranks, lambda i: {m: results[i][m] for m in measures}
    )
    if unchanged(loaded, rows):
        return None
    labels = loaded.design.labels(loaded.state)
    snapshot = store_snapshot(
        loaded,
        rows=rows,
        estimates=estimates,
        reference_version=task.reference_version,
        n_reference=0,
        n_reference_documents=0,
        details={
            "ranking": _ranking_details(ranking, loaded, rows, measures),
            "closed_pool": {"measures": measures, "f_beta": task.f_beta},
            **_label_details(labels.view if labels else None, _judgments(loaded)),
        },
        labels=labels.view if labels else None,
        fit_level=float(task.confidence),
    )
    _store_curves(snapshot, loaded, listed_indices(loaded.runs), level=float(task.confidence))
    return snapshot


def _label_details(labels: ItemLabels | None, judgments: int) -> dict[str, Any]:
    """:func:`.snapshots.label_details`, and whether fewer annotators have answered than a
    closed pool's looks need (:data:`~evaluation.core.closed_pool.label_noise.LOOK_ANNOTATORS`):
    the board and the queue page say so, as recall is then biased down."""
    details = label_details(labels, judgments)
    model = details.get("label_model")
    if model is not None:
        model["too_few_annotators"] = model["annotators"] < LOOK_ANNOTATORS
        model["look_annotators"] = LOOK_ANNOTATORS
    return details


def _judgments(loaded: LoadedPool) -> int:
    answers = loaded.state.answers
    return int(answers.judgments.size) if answers is not None else 0


def _store_curves(
    snapshot: LeaderboardSnapshot, loaded: LoadedPool, listed: Sequence[int], *, level: float
) -> None:
    """Every listed run's precision-recall curve, with ``snapshot`` (see the module)."""
    RunCurve.objects.bulk_create(
        [
            RunCurve(
                snapshot=snapshot,
                run=loaded.runs[i],
                data=loaded.design.curve(
                    loaded.state, i, level=level, points=CURVE_POINTS
                ).as_dict(),
            )
            for i in listed
        ]
    )
