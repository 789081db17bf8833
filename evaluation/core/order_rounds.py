"""The planner's order option (issue 31, item 3): judgments where neighbours disagree.

Besides each run's precision target, :func:`order_round` spends a given number of judgments on
the board's order: it ranks the runs by their current estimates, takes the adjacent pairs whose
order the paired rank intervals (:func:`.ranking.paired_rank_intervals`) do not yet claim on
some measure, and raises the inclusion probability of the items only one run of such a pair
predicts. Those items are all that a pair's difference rests on (the items both runs predict
cancel out of it, the reference sample is the same for both), so they are the labels that
narrow the unresolved pairs' intervals most.

Why it stays valid
------------------
It is one more round of the coordinated Poisson design: each chosen item's level rises from
``pi`` to ``L`` and the item is drawn with probability ``(L - pi) / (1 - pi)`` (its permanent
uniform number, :mod:`.designs.coordinated`), so every verified item keeps a known inclusion
probability and every estimate of the design, weighted ``1 / pi``, stays as it was
(post-stratified Hajek within each run's strata). Which items get a higher level depends on
earlier labels, as every round of the design does; the simulations measure the effect
(``bench/rank_intervals_study.py --order``).

The level is one ``L`` for every chosen item, the smallest whose expected new judgments reach
the round's budget (bisection). Pairs whose estimated difference is below ``min_gap`` are
left alone: their order would cost far more labels than it is worth, and pairs that are truly
tied can never be ordered.

Not yet in the service: a round here raises item levels, not a run's stratum levels, so it is
not a :class:`.results.RoundRecord` that
:meth:`.designs.coordinated.CoordinatedPoissonDesign.replay` can rebuild (it would need the
round's pairs and ``L``, which rebuild the levels exactly).
It sits beside :mod:`.designs`, not in it, because it ranks with :mod:`.paired`, which reads
the designs' precision parts.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from .designs.coordinated import CoordinatedPoissonDesign
from .designs.rounds import _draw_items
from .intervals import normal_quantile
from .measures import OPEN_MEASURES
from .paired import PairedDifferences, paired_differences
from .ranking import paired_rank_intervals
from .results import Plan
from .state import TaskState

__all__ = ["ORDER_RUN", "order_round", "unresolved_neighbours"]

# ``Plan.run`` of an order round: it serves pairs of runs, not one run.
ORDER_RUN = -1


def unresolved_neighbours(
    paired: PairedDifferences, *, family_level: float, min_gap: float
) -> list[tuple[int, int]]:
    """Adjacent runs (by estimate) whose order the paired rank intervals do not claim, with an
    estimated difference of at least ``min_gap``: pairs of positions in ``paired.runs``."""
    ranks = paired_rank_intervals(paired, family_level=family_level)
    crit = normal_quantile(ranks.level)
    finite = np.flatnonzero(np.isfinite(paired.values))
    order = finite[np.argsort(-paired.values[finite], kind="stable")]
    d, se = paired.differences, paired.standard_errors
    out = []
    for a, b in itertools.pairwise(order):
        if paired.identical[a, b] or abs(d[a, b]) < min_gap:
            continue
        if not abs(d[a, b]) > crit * se[a, b]:
            out.append((int(a), int(b)))
    return out


def order_round(
    design: CoordinatedPoissonDesign,
    state: TaskState,
    *,
    judgments: float,
    rng: np.random.Generator,
    family_level: float = 0.95,
    min_gap: float = 0.01,
    measures: Sequence[str] = OPEN_MEASURES,
    items: str = "disagreements",
) -> Plan:
    """One round of the order option: draw new items where unresolved neighbours disagree.

    Parameters
    ----------
    design : CoordinatedPoissonDesign
        The design that sampled ``state`` (its record is updated like a planning round's).
    state : TaskState
    judgments : float
        Judgments the round may ask for (at most; within the design's remaining budget).
    rng : numpy.random.Generator
    family_level : float
        Family level of the rank intervals that decide which pairs are resolved.
    min_gap : float
        Pairs estimated closer than this on a measure are not pursued on it.
    measures : sequence of str
        Measures whose unresolved neighbours count (default: precision, recall and F1).
    items : str
        ``"disagreements"`` (default): the items exactly one run of an open pair predicts;
        ``"runs"``: every item of the runs of an open pair (their own variances, which the
        items both predict carry too, shrink as well).

    Returns
    -------
    Plan
        ``run`` is :data:`ORDER_RUN`; ``items`` the new items to verify; ``status`` ``"met"``
        when no pair needs labels or no item is left to draw, ``"budget_exhausted"`` when
        nothing can be afforded; ``details`` the level and the pairs pursued (run indices).

    References
    ----------
    Ohlsson, E. (1995). Coordination of samples using permanent random numbers. In Business
    Survey Methods, Wiley, 153-169. Hothorn, T., Bretz, F. and Westfall, P. (2008).
    Simultaneous inference in general parametric models. Biometrical Journal 50, 346-363.
    """
    rec = design.record(state)
    empty = np.empty(0, np.int64)
    affordable = min(float(judgments), design.remaining_budget(state, rec))
    per_item = design.judgments_per_item
    if affordable < per_item:
        return Plan(ORDER_RUN, 0, empty, "budget_exhausted")
    paired = paired_differences(design, state)
    pairs = sorted(
        {
            pair
            for m in measures
            for pair in unresolved_neighbours(paired[m], family_level=family_level, min_gap=min_gap)
        }
    )
    if items not in ("disagreements", "runs"):
        raise ValueError(f"unknown items {items!r}; choose 'disagreements' or 'runs'")
    chosen = _disagreements(state, pairs) if items == "disagreements" else _items_of(state, pairs)
    pi = rec.inclusion[chosen]
    unrequested = ~rec.requested[chosen] & (pi < 1.0)
    if not unrequested.any():
        return Plan(ORDER_RUN, 0, empty, "met", details={"pairs": pairs})
    level = _level_for(pi[unrequested], affordable / per_item)
    new_pi = np.where(unrequested, np.maximum(pi, level), pi)
    drawn = _draw_items(chosen, pi, new_pi, unrequested, affordable=affordable // per_item, rng=rng)
    rec.apply_levels(chosen[unrequested], np.full(int(unrequested.sum()), level), drawn.fraction)
    rec.request(drawn.chosen, per_item)
    details = {"level": level, "fraction": drawn.fraction, "pairs": pairs}
    rec.log.append({"run": ORDER_RUN, "seed": drawn.seed, "n": int(drawn.chosen.size), **details})
    return Plan(
        ORDER_RUN,
        0,
        drawn.chosen,
        "sample",
        expected_labels=float(drawn.chosen.size * per_item),
        seed=drawn.seed,
        details=details,
    )


def _disagreements(state: TaskState, pairs: Sequence[tuple[int, int]]) -> np.ndarray:
    """Every item that exactly one run of some pair predicts (sorted, unique)."""
    if not pairs:
        return np.empty(0, np.int64)
    return np.unique(
        np.concatenate([np.setxor1d(state.runs[a].items, state.runs[b].items) for a, b in pairs])
    )


def _items_of(state: TaskState, pairs: Sequence[tuple[int, int]]) -> np.ndarray:
    """Every item of a run of some pair (sorted, unique)."""
    runs = sorted({r for pair in pairs for r in pair})
    if not runs:
        return np.empty(0, np.int64)
    return np.unique(np.concatenate([state.runs[r].items for r in runs]))


def _level_for(pi: np.ndarray, draws: float) -> float:
    """The smallest common level ``L`` whose expected new draws, ``sum (L - pi)+ / (1 - pi)``,
    reach ``draws`` (1 when even every item would not)."""

    def expected(level: float) -> float:
        return float(np.sum(np.maximum(level - pi, 0.0) / (1.0 - pi)))

    if expected(1.0) <= draws:
        return 1.0
    low, high = 0.0, 1.0
    for _ in range(60):
        mid = 0.5 * (low + high)
        if expected(mid) < draws:
            low = mid
        else:
            high = mid
    return high if math.isfinite(high) else 1.0
