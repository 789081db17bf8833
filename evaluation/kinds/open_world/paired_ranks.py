"""An open-world board's ranks from paired differences, and the pairs a board's pages show.

The estimation job (:mod:`.estimation`) ranks the listed runs of a task whose design gives each
run's precision pieces (the ``default`` design) from every pairwise difference at once
(:func:`evaluation.core.ranking.paired_rank_intervals`, max-t over the joint normal of
:func:`evaluation.core.paired.paired_differences`): docs/STATISTICS.md, "Rank intervals from
paired differences". With each rank interval the snapshot stores, per measure, the difference of
every pair of runs at most two apart in the board's order (:func:`board_pairs`), with its
interval at the level the ranks tested each pair at: the interval excludes 0 exactly when the
ranks order the two runs. The pages read these pairs (``leaderboard/presenters/pairs.py``);
two apart covers a neighbour whose run between was withdrawn since.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from evaluation.core.measures import OPEN_MEASURES
from evaluation.core.paired import PairedDifferences, paired_differences
from evaluation.core.ranking import RankIntervals, paired_rank_intervals
from evaluation.core.results import RunEstimate
from leaderboard.selectors import board_order

__all__ = ["PAIR_REACH", "board_pairs", "paired_available", "paired_ranks"]

# Pairs stored per run: with its next and its second next run in the board's order.
PAIR_REACH = 2


def paired_available(design: object) -> bool:
    """Whether ``design`` gives the per-item precision pieces paired differences rest on."""
    return callable(getattr(design, "precision_parts", None))


def paired_ranks(
    design: Any,
    state: Any,
    indices: Sequence[int],
    results: Sequence[RunEstimate],
    *,
    family_level: float,
) -> tuple[dict[str, RankIntervals], dict[str, PairedDifferences]]:
    """Per measure: the rank intervals of the runs at ``indices`` (positions in the engine's
    state) from their paired differences, and those differences. ``results`` are every run's
    estimates (any level: the differences take each run's variance from its interval)."""
    paired = paired_differences(
        design, state, list(indices), estimates=[results[i] for i in indices]
    )
    ranks = {
        m: paired_rank_intervals(paired[m], family_level=family_level, rng=np.random.default_rng(0))
        for m in OPEN_MEASURES
    }
    return ranks, paired


def board_pairs(
    rows: Sequence[dict[str, Any]],
    positions: Mapping[int, int],
    ranks: Mapping[str, RankIntervals],
    paired: Mapping[str, PairedDifferences],
) -> dict[str, list[list[float | int]]]:
    """Per measure: ``[above, below, difference, low, high]`` for every pair of ranked runs at
    most :data:`PAIR_REACH` apart in the board's order by that measure (``above`` first, run
    pks), the difference ``above - below`` with its interval at ``ranks[measure].level``.

    ``rows`` are the snapshot's rows; ``positions`` maps the pk of each ranked run to its
    position in the engine's state (the runs of ``paired``)."""
    out: dict[str, list[list[float | int]]] = {}
    for m in OPEN_MEASURES:
        ordered = [
            r for r in board_order(rows, m) if r["run"] in positions and r[m]["value"] is not None
        ]
        pairs: list[list[float | int]] = []
        for k, upper in enumerate(ordered):
            for lower in ordered[k + 1 : k + 1 + PAIR_REACH]:
                d = paired[m].difference(
                    positions[upper["run"]], positions[lower["run"]], level=ranks[m].level
                )
                if math.isfinite(d.value):
                    pairs.append([upper["run"], lower["run"], d.value, d.low, d.high])
        out[m] = pairs
    return out
