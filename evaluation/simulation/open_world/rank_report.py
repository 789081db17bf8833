"""The ``rank`` part of ``python -m evaluation.simulate`` (``--ranking``): how each repeat's rank
intervals fared against the truth, from the repeat's finished campaign state, and their summary.

Per measure, over the repeats (definitions in :mod:`.rank_campaigns`):

* ``family_coverage``: share of repeats in which every run's true rank range
  ``[1 + #truly better, K - #truly worse]`` lies inside its rank interval;
* ``excess_width_mean``: mean over runs and repeats of the rank interval's width minus the true
  range's width; ``width_mean``: of the rank interval's width;
* ``pairs_resolved``: share of the pairs whose true difference is at least 0.02 that the rank
  intervals order (the mean over repeats of each repeat's share; every repeat ranks the same
  number of runs).

``paired`` ranks from every pairwise difference at once (max-t over the joint normal of
:mod:`evaluation.core.paired`), ``bonferroni`` from each run's interval at the level
``1 - alpha / K``. Paired differences need a design that gives each run's precision pieces
(the open-world ``default`` design); the other designs rank by Bonferroni. A closed pool's
campaigns rank theirs in :mod:`..closed_pool.campaigns` (paired differences with the adaptive
design, :mod:`evaluation.core.closed_pool.paired`) and are summarised here too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...core.ranking import RankIntervals, bonferroni_level, rank_estimates
from ...core.state import TaskState
from ..command import number_text
from .rank_campaigns import RankCampaign, RankScores, campaign_ranks, score_ranks

__all__ = [
    "RANKINGS",
    "OpenWorldRanks",
    "format_rank_lines",
    "open_world_rank_scores",
    "paired_available",
    "summarise_ranks",
]

RANKINGS = ("paired", "bonferroni")


def paired_available(design: object) -> bool:
    """Whether ``design`` gives the per-item precision pieces paired differences rest on."""
    return callable(getattr(design, "precision_parts", None))


def open_world_rank_scores(
    state: TaskState,
    design: Any,
    order: np.ndarray,
    truth: np.ndarray,
    *,
    ranking: str,
    family_level: float,
) -> tuple[str, dict[str, RankScores]]:
    """The method and, per measure, the scores of one finished open-world campaign's ranks.

    ``truth`` is ``(runs, measures)`` in run order, ``measures`` the design's (precision, recall,
    F1).
    """
    measures = ("precision", "recall", "f1")
    ranks: dict[str, RankIntervals]
    if ranking == "paired":
        campaign = RankCampaign(state, design, order, 0)
        _, ranks, _ = campaign_ranks(campaign, family_level=family_level)
    else:
        level = bonferroni_level(family_level, state.n_runs)
        estimates = design.estimate(state, level=level)
        ranks = {m: rank_estimates(estimates, m, family_level=family_level) for m in measures}
    method = ranks["precision"].method
    return method, {m: score_ranks(ranks[m], truth[:, k]) for k, m in enumerate(measures)}


class OpenWorldRanks:
    """What :func:`.open_world.campaigns.simulate` calls to score each repeat's ranks
    (:meth:`score`, on the finished state) and to summarise them (:meth:`summary`)."""

    def __init__(self, ranking: str, family_level: float) -> None:
        self.ranking = ranking
        self.family_level = family_level

    def score(
        self, state: TaskState, design: Any, order: np.ndarray, truth: np.ndarray
    ) -> tuple[str, dict[str, RankScores]]:
        return open_world_rank_scores(
            state, design, order, truth, ranking=self.ranking, family_level=self.family_level
        )

    def summary(self, repeats: Sequence[tuple[str, dict[str, RankScores]]]) -> dict[str, Any]:
        return summarise_ranks(repeats[0][0], self.family_level, [r[1] for r in repeats])


def summarise_ranks(
    method: str, family_level: float, repeats: Sequence[dict[str, RankScores]]
) -> dict[str, Any]:
    """The ``rank`` object of ``--json``: the method, the family level and, per measure, the
    means over ``repeats`` (each repeat's scores per measure)."""
    out: dict[str, Any] = {"method": method, "family_level": family_level}
    for m in repeats[0]:
        scores = [r[m] for r in repeats]
        resolved = np.array([s.pairs_resolved for s in scores], dtype=float)
        out[m] = {
            "family_coverage": float(np.mean([s.covered for s in scores])),
            "excess_width_mean": float(np.mean([s.excess_width for s in scores])),
            "width_mean": float(np.mean([s.width for s in scores])),
            "pairs_resolved": (
                float(np.nanmean(resolved)) if np.isfinite(resolved).any() else math.nan
            ),
        }
    return out


def format_rank_lines(rank: dict[str, Any]) -> list[str]:
    """The rank rows of the readable report."""
    if not rank:
        return []
    lines = [
        "",
        f"ranks by {rank['method']} at {rank['family_level']:.0%} for the whole board:",
        f"{'rank of':<15} {'family cov.':>11} {'width':>8} {'excess width':>13} "
        f"{'pairs resolved':>15}",
    ]
    for m, row in rank.items():
        if not isinstance(row, dict):
            continue
        lines.append(
            f"{'rank ' + m:<15} {number_text(row['family_coverage'], '.3f'):>11} "
            f"{number_text(row['width_mean'], '.2f'):>8} "
            f"{number_text(row['excess_width_mean'], '.2f'):>13} "
            f"{number_text(row['pairs_resolved'], '.3f'):>15}"
        )
    return lines
