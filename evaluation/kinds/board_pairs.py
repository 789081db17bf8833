"""The pairs a board's pages show: the difference of every two ranked runs near each other.

With rank intervals from paired differences (an open task's, :mod:`.open_world.paired_ranks`;
a closed pool's, :mod:`.closed_pool.estimation`) the snapshot stores, per measure, the
difference of every pair of runs at most two apart in the board's order (:func:`board_pairs`),
with its interval at the level the ranks tested each pair at: the interval excludes 0 exactly
when the ranks order the two runs. The pages read these pairs (``leaderboard/board_pairs.py``);
two apart covers a neighbour whose run between was withdrawn since.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from evaluation.core.measures import OPEN_MEASURES
from evaluation.core.paired import PairedDifferences
from evaluation.core.ranking import RankIntervals
from leaderboard.selectors import board_order

__all__ = ["PAIR_REACH", "board_pairs"]

# Pairs stored per run: with its next and its second next run in the board's order.
PAIR_REACH = 2


def board_pairs(
    rows: Sequence[dict[str, Any]],
    positions: Mapping[int, int],
    ranks: Mapping[str, RankIntervals],
    paired: Mapping[str, PairedDifferences],
    measures: Sequence[str] = OPEN_MEASURES,
) -> dict[str, list[list[float | int]]]:
    """Per measure: ``[above, below, difference, low, high]`` for every pair of ranked runs at
    most :data:`PAIR_REACH` apart in the board's order by that measure (``above`` first, run
    pks), the difference ``above - below`` with its interval at ``ranks[measure].level``.

    ``rows`` are the snapshot's rows; ``positions`` maps the pk of each ranked run to its
    position in the engine's state (the runs of ``paired``); ``measures`` are those ranked
    (an open task's three, or a closed pool's)."""
    out: dict[str, list[list[float | int]]] = {}
    for m in measures:
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
