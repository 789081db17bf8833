"""One planning round of the ``default`` design, once the run's precision is known.

:meth:`.coordinated.CoordinatedPoissonDesign.plan` decides whether a run needs anything; what a
round then asks for is built here: the further looks at verified items (:mod:`.second_looks`),
the label noise and judgment cost a new item brings per stratum, and the draw of new items,
whose levels per stratum are ``min(1, t * sqrt(r_h (1 - r_h)))`` with ``t`` found by bisection
on the predicted half-width and capped by the round's size and the budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..labels import ItemLabels
from ..results import Bands, Patterns, Plan
from ..sorted_sets import positions
from .common import bisect_largest, bisect_smallest
from .precision import PrecisionParts, predicted_half_width
from .record import SamplingRecord, level_groups
from .second_looks import (
    bands_to_give,
    due_looks,
    noise_profile,
    patterns_to_switch_on,
    plausible_best,
)

__all__ = [
    "Looks",
    "RoundOptions",
    "ask_looks",
    "draw_round",
    "new_item_noise",
    "scaled_half_width",
]

# Sampled items of a stratum after which its own answers tell its label noise.
_OWN_INFLATION_AFTER = 20


@dataclass(frozen=True)
class Looks:
    """A round's looks: bands given, answer patterns switched on, looks asked."""

    bands: Bands
    patterns: Patterns
    asked: np.ndarray
    removed: float

    @classmethod
    def none(cls) -> Looks:
        return cls((np.empty(0, np.int64), np.empty(0, np.int8)), (), np.empty(0, np.int64), 0.0)

    def plan(self, run: int, rnd: int, status: str, predicted: float, current: float) -> Plan:
        """A round that asks only for these looks (or for nothing)."""
        return Plan(
            run,
            rnd,
            np.empty(0, np.int64),
            status,
            predicted,
            current,
            float(self.asked.size),
            details={"levels": None, "fraction": 1.0},
            again=self.asked,
            bands=self.bands,
            patterns=self.patterns,
        )


def scaled_half_width(half_width: float, variance: float, new_variance: float) -> float:
    """A half-width scaled by the square root of a variance ratio (the normal approximation)."""
    if not (math.isfinite(half_width) and math.isfinite(variance)) or variance <= 0:
        return half_width
    return half_width * math.sqrt(max(new_variance, 0.0) / variance)


def new_item_noise(
    labels: ItemLabels,
    rates: np.ndarray,
    patterns: tuple[frozenset[tuple[int, ...]], ...],
    parts: PrecisionParts,
    strata: np.ndarray,
    run_items: np.ndarray,
    *,
    judgments: int,
    max_judgments: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Per stratum: how much label noise inflates a new item's variance, and what a new
    item costs in judgments. A stratum with enough sampled items shows its inflation in its
    own answers (near 1 when they are all consistent); others get the inflation expected at
    the annotators' typical error rates."""
    # Planned at the best error rates the judgments still allow: the answers then show the
    # stratum's real noise, and a round that falls short is followed by another, while a
    # pessimistic plan over-asks for good (measured: 8-20% more judgments).
    se, sp = plausible_best(labels.model) if labels.noisy else (1.0, 1.0)
    inflation, cost = noise_profile(
        rates,
        sensitivity=se,
        specificity=sp,
        judgments=judgments,
        max_judgments=max_judgments,
        patterns=patterns,
    )
    if labels.noisy and parts.items.size:
        sampled = parts.inclusion < 1.0
        h = strata[positions(run_items, parts.items)][sampled]
        n = np.bincount(h, minlength=rates.size)
        seen = np.bincount(h, weights=np.sqrt(parts.inflation[sampled]), minlength=rates.size)
        enough = n >= _OWN_INFLATION_AFTER
        inflation = np.where(enough, seen / np.maximum(n, 1), inflation)
    return inflation, cost


def ask_looks(
    rec: SamplingRecord,
    labels: ItemLabels,
    *,
    judgments: int,
    max_judgments: int,
    remaining: float,
) -> Looks:
    """Give bands to the cells whose rate is now known and switch on the answer patterns
    doubtful in each band, then ask the look of every item of the task whose answers are a
    pattern switched on in its band (:mod:`.second_looks`)."""
    if max_judgments <= judgments:
        return Looks.none()
    cells, bands = bands_to_give(labels, rec)
    rec.give_bands(cells, bands)
    switched = patterns_to_switch_on(
        labels,
        rec,
        judgments=judgments,
        max_judgments=max_judgments,
    )
    for band, patterns in switched:
        rec.switch_on(band, patterns)
    asked = due_looks(labels, rec, max_judgments=max_judgments)
    # The budget bounds even looks the rules owe (the items left without one are few).
    asked = asked[: int(min(asked.size, remaining))]
    rec.ask(asked)
    return Looks((cells, bands), tuple(switched), asked, 0.0)


@dataclass(frozen=True)
class _LevelSearch:
    """A run's levels as a function of one scale ``t``, with the half-width and judgments they
    predict. The bisections only need, per (level, stratum, requested) group, how many items it
    holds: a run's million items take a few hundred such groups."""

    stratum_shape: np.ndarray  # per stratum: sqrt(r_h (1 - r_h)), a level per unit of t
    pi: np.ndarray
    stratum: np.ndarray
    count: np.ndarray
    shape: np.ndarray
    gain_count: np.ndarray
    headroom: np.ndarray
    rates: np.ndarray
    inflation: np.ndarray
    noisy: bool
    take_all: float
    confidence: float
    interval: str

    @classmethod
    def of(
        cls,
        pi: np.ndarray,
        strata: np.ndarray,
        unrequested: np.ndarray,
        rates: np.ndarray,
        cost: np.ndarray,
        inflation: np.ndarray,
        *,
        take_all: float,
        confidence: float,
        interval: str,
    ) -> _LevelSearch:
        """Group the run's items; ``rates``, ``cost`` and ``inflation`` are per stratum."""
        shape_h = np.sqrt(rates * (1 - rates))
        g_pi, g_stratum, g_unreq, g_count = level_groups(pi, strata, unrequested, rates.size)
        return cls(
            stratum_shape=shape_h,
            pi=g_pi,
            stratum=g_stratum,
            count=g_count,
            shape=shape_h[g_stratum],
            gain_count=np.where(g_unreq, g_count * cost[g_stratum], 0.0),
            headroom=np.where(g_pi < 1.0, 1.0 - g_pi, 1.0),
            rates=rates,
            inflation=inflation,
            noisy=bool((inflation != 1.0).any()),
            take_all=take_all,
            confidence=confidence,
            interval=interval,
        )

    def levels(self, t: float, base: np.ndarray, shape: np.ndarray) -> np.ndarray:
        """The levels ``t * shape`` (above ``take_all``: 1), never below ``base``."""
        level = t * shape
        levels: np.ndarray = np.maximum(base, np.where(level > self.take_all, 1.0, level))
        return levels

    def half_width(self, t: float) -> float:
        """Precision half-width predicted at scale ``t``."""
        # The annotators' shared uncertainty is not this run's to reduce: judgments anywhere in
        # the task shrink it. The levels are planned for the run's own variance; a run whose own
        # part meets the target ends "annotator_limited" if the shared part keeps it wider
        # (planning for the shared part here cost 6-25% more judgments, measured on febrl4).
        return predicted_half_width(
            self.levels(t, self.pi, self.shape),
            self.stratum,
            self.count,
            self.rates,
            inflation=self.inflation if self.noisy else None,
            level=self.confidence,
            interval=self.interval,
        )

    def expected_judgments(self, t: float) -> float:
        """Judgments the new items drawn at scale ``t`` are expected to need."""
        gain = (self.levels(t, self.pi, self.shape) - self.pi) / self.headroom
        return float(gain @ self.gain_count)


def _scale(
    search: _LevelSearch, *, current: float, target: float, floor: float, cap: float
) -> tuple[float, float]:
    """The round's scale ``t`` and the scale the target alone needs: the smallest ``t`` that
    meets the target (asking at least ``floor`` judgments), cut back to the ``cap``."""
    t_max = 1.0 / search.stratum_shape.min()
    # The prediction uses expected sample sums; the realised sample can be less favourable.
    # Aim lower by the ratio of realised to predicted half-width at the current levels.
    goal = target
    predicted_now = search.half_width(0.0)
    if math.isfinite(current) and math.isfinite(predicted_now) and current > predicted_now:
        goal *= predicted_now / current
    t_need = bisect_smallest(lambda t: search.half_width(t) <= goal, 0.0, t_max)
    # Never a round that cannot move: ask for at least a small batch while unmet.
    if search.expected_judgments(t_need) < floor:
        t_need = bisect_smallest(lambda s: search.expected_judgments(s) >= floor, t_need, t_max)
    t = t_need
    if search.expected_judgments(t_need) > cap:
        t = bisect_largest(lambda s: search.expected_judgments(s) <= cap, 0.0, t_need)
        # A round must move: the first positive level reaches every unreached item.
        t = max(t, t_need * 1e-6)
        if search.expected_judgments(t) < floor:
            # The cap fell just below a take-all jump: take the jump rather than stall (the
            # smallest step that moves, with fallible annotators, whose target may lie
            # beyond every item of the run).
            t = (
                t_need
                if not search.noisy
                else bisect_smallest(lambda s: search.expected_judgments(s) >= floor, t, t_need)
            )
    return t, t_need


@dataclass(frozen=True)
class _Draw:
    """The new items a round drew, the share of its levels applied, its status and seed."""

    chosen: np.ndarray
    fraction: float
    status: str
    seed: int


def _draw_items(
    items: np.ndarray,
    pi: np.ndarray,
    new_pi: np.ndarray,
    unrequested: np.ndarray,
    *,
    affordable: float,
    rng: np.random.Generator,
) -> _Draw:
    """Draw each unrequested item with probability ``(new_pi - pi) / (1 - pi)`` (coordinated
    Poisson sampling), keeping a uniform subset of ``affordable`` items if the draw overshoots."""
    seed = int(rng.integers(2**63 - 1))
    draw_rng = np.random.default_rng(seed)
    u = draw_rng.random(items.size)
    with np.errstate(invalid="ignore", divide="ignore"):
        top_up = np.where(pi < 1.0, (new_pi - pi) / (1.0 - pi), 0.0)
    chosen = items[unrequested & (u < top_up)]
    if not chosen.size > affordable:
        return _Draw(chosen, 1.0, "sample", seed)
    affordable = int(affordable)
    # The draw overshot the budget: keep a uniform subset of it, and raise the levels by
    # the same share (each drawn item stays with probability ``affordable / drawn``).
    fraction = float(affordable) / chosen.size
    keep = draw_rng.choice(chosen.size, size=affordable, replace=False)
    return _Draw(np.sort(chosen[keep]), fraction, "budget_exhausted", seed)


class RoundOptions(Protocol):
    """The design's options a drawing round reads (those of ``CoordinatedPoissonDesign``)."""

    target_half_width: float
    confidence: float
    interval: str
    min_batch: int
    growth: float
    take_all: float
    judgments_per_item: int


def draw_round(
    rec: SamplingRecord,
    items: np.ndarray,
    run: int,
    rnd: int,
    parts: PrecisionParts,
    looks: Looks,
    options: RoundOptions,
    *,
    rates: np.ndarray,
    inflation: np.ndarray,
    cost: np.ndarray,
    remaining: float,
    rng: np.random.Generator,
) -> Plan:
    """Raise the run's levels so that its predicted half-width meets the target, within the
    round's cap, draw the new items the raised levels select and record the round in ``rec``.

    ``rates``, ``inflation`` and ``cost`` are per score stratum of the run; ``remaining`` is
    what the budget allows after the looks. The round's cap is
    ``max(min_batch, (growth - 1) * labelled)`` expected judgments, within ``remaining``.
    """
    strata = rec.strata[run]
    current = parts.estimate.half_width
    pi = rec.inclusion[items]
    unrequested = ~rec.requested[items]
    search = _LevelSearch.of(
        pi,
        strata,
        unrequested,
        rates,
        cost,
        inflation,
        take_all=options.take_all,
        confidence=options.confidence,
        interval=options.interval,
    )
    growth_cap = max(options.min_batch, (options.growth - 1.0) * parts.estimate.labels_used)
    cap = min(growth_cap, remaining)
    floor = min(options.min_batch / 4.0, cap, float(np.count_nonzero(unrequested)))
    t, t_need = _scale(
        search, current=current, target=options.target_half_width, floor=floor, cap=cap
    )
    drawn = _draw_items(
        items,
        pi,
        search.levels(t, pi, search.stratum_shape[strata]),
        unrequested,
        affordable=remaining // options.judgments_per_item,
        rng=rng,
    )
    return _record_draw(
        rec,
        items,
        run,
        rnd,
        search,
        drawn,
        looks,
        t=t,
        t_need=t_need,
        cap=cap,
        current=current,
        judgments=options.judgments_per_item,
    )


def _record_draw(
    rec: SamplingRecord,
    items: np.ndarray,
    run: int,
    rnd: int,
    search: _LevelSearch,
    drawn: _Draw,
    looks: Looks,
    *,
    t: float,
    t_need: float,
    cap: float,
    current: float,
    judgments: int,
) -> Plan:
    """Apply a drawing round's levels and items to ``rec``, log it, and return its plan."""
    shape_h = search.stratum_shape
    # The level each stratum asked for this round, take-all rule included (for replay).
    level_by_stratum = search.levels(t, np.zeros_like(shape_h), shape_h)
    rec.apply_levels(items, level_by_stratum[rec.strata[run]], drawn.fraction)
    rec.request(drawn.chosen, judgments)
    details = {
        "levels": level_by_stratum.tolist(),
        "fraction": drawn.fraction,
        "predicted_rates": search.rates.tolist(),
        "t": t,
        "t_needed": t_need,
        "cap": cap,
    }
    if search.noisy:
        details["inflation"] = search.inflation.tolist()
    rec.log.append(
        {
            "run": run,
            "round": rnd,
            "seed": drawn.seed,
            "n": int(drawn.chosen.size),
            "again": int(looks.asked.size),
            **details,
        }
    )
    expected = (search.expected_judgments(t) if t else 0.0) + looks.asked.size
    return Plan(
        run,
        rnd,
        drawn.chosen,
        drawn.status,
        search.half_width(t),
        current,
        expected,
        drawn.seed,
        details,
        again=looks.asked,
        bands=looks.bands,
        patterns=looks.patterns,
    )
