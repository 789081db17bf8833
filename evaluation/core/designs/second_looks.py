"""Where to spend a further judgment: a second look at an item, by rules that keep estimates right.

With fallible annotators an item's label carries variance ``v_x = z_x (1 - z_x)`` after its
judgments. A surprising answer (an "incorrect" among items that are nearly all correct) is the
typical item worth a second look: its posterior sits near 1/2, and one more answer settles it for
a fraction of what a new item would cost. But a look asked *because of an item's context* (the
run being planned) makes the items of other runs' strata collected differently according to
which runs they belong to, which is correlated with their truth, and every estimate that mixes
them is biased (measured on febrl4: +0.04 on runs of precision 0.8; :mod:`..labels`).

So looks follow rules that every estimator can respect. Each union cell (the items one run brought
to the union in one score stratum) gets a **band** once a few of its items are answered and its
rate is known: ``LOW`` (mostly incorrect), ``MIXED`` or ``HIGH`` (mostly correct). Within a band,
an item gets one more judgment exactly when its answers so far are a pattern ``(says correct,
says incorrect)`` that is doubtful at the band's typical rate: a single "incorrect" in a ``HIGH``
cell, a single "correct" in a ``LOW`` cell, a tie. Bands and patterns, once given, stay, and apply
to every item of the band, earlier ones included. Every estimator then post-stratifies by band
(:meth:`.record.SamplingRecord.pieces`): inside each (stratum, band) piece all items are judged
by one rule, and the piece's rate corrected for misclassification is consistent.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

import numpy as np
from scipy import stats

from ..annotators import LabelModel
from ..labels import ItemLabels
from .record import SamplingRecord

__all__ = [
    "BANDS",
    "bands_to_give",
    "due_looks",
    "noise_profile",
    "patterns_to_switch_on",
    "plausible_best",
]

LOW, MIXED, HIGH = 0, 1, 2
BANDS = (LOW, MIXED, HIGH)
# A cell's band by its rate; the rate each band's look rule is drawn for.
BAND_EDGES = (0.2, 0.8)
BAND_RATES = (0.05, 0.5, 0.95)
# A pattern is doubtful when the posterior variance it leaves is at least this share of the
# band's binomial variance (a tie in a HIGH cell: yes; one "correct" in a MIXED cell: no).
DOUBT = 0.5
# Answered items of a cell before it gets its band.
BAND_AFTER = 5
_KEY = 1024


def band_of_rates(rates: np.ndarray) -> np.ndarray:
    """``LOW``, ``MIXED`` or ``HIGH`` for each rate."""
    bands: np.ndarray = np.searchsorted(np.asarray(BAND_EDGES), rates, side="right").astype(np.int8)
    return bands


def bands_to_give(labels: ItemLabels, rec: SamplingRecord) -> tuple[np.ndarray, np.ndarray]:
    """Cells without a band whose rate the annotator model now knows (``BAND_AFTER`` answered
    items), with the band their estimated rate puts them in."""
    model = labels.model
    if model is None or model.classes.size == 0:
        return np.empty(0, np.int64), np.empty(0, np.int8)
    cells = model.classes
    counts = np.bincount(np.searchsorted(cells, rec.cell[model.items]), minlength=cells.size)
    ok = (cells >= 0) & (counts >= BAND_AFTER)
    ok[ok] = rec.cell_band[cells[ok]] < 0
    return cells[ok], band_of_rates(model.rate[ok])


def _doubtful(
    patterns: Iterable[tuple[int, int]], rate: float, se: float, sp: float
) -> list[tuple[int, int]]:
    out = []
    for yes, no in patterns:
        like1 = se**yes * (1 - se) ** no
        like0 = (1 - sp) ** yes * sp**no
        mu = rate * like1 / (rate * like1 + (1 - rate) * like0)
        if mu * (1 - mu) >= DOUBT * rate * (1 - rate):
            out.append((yes, no))
    return out


def patterns_to_switch_on(
    labels: ItemLabels, rec: SamplingRecord, *, judgments: int, max_judgments: int
) -> list[tuple[int, list[tuple[int, int]]]]:
    """``(band, patterns)`` newly doubtful at the annotators' current typical error rates."""
    if not labels.noisy or max_judgments <= judgments:
        return []
    # Judged against the best accuracy still plausible: a rule switched on stays on, so early,
    # prior-dominated estimates must not switch on looks that good annotators never need.
    se, sp = plausible_best(labels.model)
    candidates = [(a, n - a) for n in range(judgments, max_judgments) for a in range(n + 1)]
    out = []
    for band in BANDS:
        new = [
            p
            for p in _doubtful(candidates, BAND_RATES[band], se, sp)
            if p not in rec.look_patterns[band]
        ]
        if new:
            out.append((band, new))
    return out


def plausible_best(model: LabelModel | None) -> tuple[float, float]:
    """Judgment-weighted upper 95% bounds of the annotators' sensitivity and specificity."""
    assert model is not None  # asked only with fallible annotators (``labels.noisy``)
    n = model.judgments_per_annotator.astype(float)
    summaries = model.summaries(level=0.95)
    se = float(n @ np.array([a.sensitivity_high for a in summaries]) / n.sum())
    sp = float(n @ np.array([a.specificity_high for a in summaries]) / n.sum())
    return min(se, 1 - 1e-6), min(sp, 1 - 1e-6)


def due_looks(labels: ItemLabels, rec: SamplingRecord, *, max_judgments: int) -> np.ndarray:
    """Every item of the task whose answers are a pattern switched on in its band: one more
    judgment each (drawn, label uncertain, every judgment asked in, fewer than the most)."""
    if not labels.noisy or not any(rec.look_patterns):
        return np.empty(0, np.int64)
    assert labels.model is not None  # ``noisy``
    items = labels.model.items
    n = labels.judgments[items]
    items = items[rec.requested[items] & (n >= rec.asked[items]) & (n < max_judgments)]
    band = rec.item_band(items)
    yes = labels.says_correct[items]
    key = yes * _KEY + (labels.judgments[items] - yes)
    due = np.zeros(items.size, bool)
    for b in BANDS:
        if rec.look_patterns[b]:
            keys = np.array([a * _KEY + n for a, n in rec.look_patterns[b]])
            due |= (band == b) & np.isin(key, keys)
    looks: np.ndarray = items[due]
    return looks


def noise_profile(
    rates: np.ndarray,
    *,
    sensitivity: float,
    specificity: float,
    judgments: int,
    max_judgments: int,
    patterns: tuple[frozenset[tuple[int, ...]], ...] = (frozenset(), frozenset(), frozenset()),
) -> tuple[np.ndarray, np.ndarray]:
    """Per stratum rate: ``(variance inflation, expected judgments)`` of one new item.

    A new item gets ``judgments`` answers from typical annotators, then one more while its
    answers are a pattern switched on in the band its stratum's rate falls in. The inflation is
    ``1 / (1 - gamma)``, ``gamma`` the expected share of the stratum's binomial variance left in
    the labels (the fraction of missing information): a rate estimated from fallible answers
    has that much more variance.
    """
    rates = np.clip(np.asarray(rates, dtype=float), 1e-6, 1 - 1e-6)
    inflation = np.ones_like(rates)
    cost = np.full_like(rates, float(judgments))
    if sensitivity >= 1.0 and specificity >= 1.0:
        return inflation, cost
    se = min(max(sensitivity, 1e-9), 1 - 1e-9)
    sp = min(max(specificity, 1e-9), 1 - 1e-9)
    bands = band_of_rates(rates)
    for s, r in enumerate(rates):
        final, extra1, extra0 = _answer_patterns(
            se, sp, max(int(judgments), 1), max_judgments, patterns[bands[s]]
        )
        left = 0.0
        for (a, n), (p1, p0) in final.items():
            like1 = se**a * (1 - se) ** n
            like0 = (1 - sp) ** a * sp**n
            mu = r * like1 / (r * like1 + (1 - r) * like0)
            left += (r * p1 + (1 - r) * p0) * mu * (1 - mu)
        gamma = min(left / (r * (1 - r)), 0.98)
        inflation[s] = 1.0 / (1.0 - gamma)
        cost[s] += r * extra1 + (1 - r) * extra0
    return inflation, cost


def _answer_patterns(
    se: float, sp: float, k: int, max_judgments: int, patterns: Collection[tuple[int, ...]]
) -> tuple[dict[tuple[int, int], tuple[float, float]], float, float]:
    """Final answer patterns under a look rule: ``{pattern: (P | correct, P | incorrect)}`` and
    the expected looks for a correct and an incorrect item."""
    yes = np.arange(k + 1)
    states = {
        (int(a), k - int(a)): (stats.binom.pmf(a, k, se), stats.binom.pmf(a, k, 1 - sp))
        for a in yes
    }
    final: dict[tuple[int, int], tuple[float, float]] = {}
    extra1, extra0 = 0.0, 0.0
    while states:
        nxt: dict[tuple[int, int], tuple[float, float]] = {}
        for (a, n), (p1, p0) in states.items():
            if (a, n) in patterns and a + n < max_judgments:
                extra1, extra0 = extra1 + p1, extra0 + p0
                for key, q1, q0 in (((a + 1, n), se, 1 - sp), ((a, n + 1), 1 - se, sp)):
                    o1, o0 = nxt.get(key, (0.0, 0.0))
                    nxt[key] = (o1 + p1 * q1, o0 + p0 * q0)
            else:
                o1, o0 = final.get((a, n), (0.0, 0.0))
                final[(a, n)] = (o1 + p1, o0 + p0)
        states = nxt
    return final, extra1, extra0
