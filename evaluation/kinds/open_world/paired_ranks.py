"""An open-world board's ranks from paired differences.

The estimation job (:mod:`.estimation`) ranks the listed runs of a task whose design gives each
run's precision pieces (the ``default`` design) from every pairwise difference at once
(:func:`evaluation.core.ranking.paired_rank_intervals`, max-t over the joint normal of
:func:`evaluation.core.paired.paired_differences`): docs/STATISTICS.md, "Rank intervals from
paired differences". With each rank interval the snapshot stores the pairs a board's pages show
(:func:`..board_pairs.board_pairs`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from evaluation.core.measures import OPEN_MEASURES
from evaluation.core.paired import PairedDifferences, paired_differences
from evaluation.core.ranking import RankIntervals, paired_rank_intervals
from evaluation.core.results import RunEstimate

from ..board_pairs import PAIR_REACH, board_pairs

__all__ = ["PAIR_REACH", "board_pairs", "paired_available", "paired_ranks"]


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
