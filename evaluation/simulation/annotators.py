"""Who answers in a simulated campaign: a perfect oracle, or a panel of fallible annotators.

A panel is described by a specification such as ``"0.98,0.95x2,0.9,0.5"`` (accuracies, one
annotator each, ``xN`` for ``N`` alike) or ``"0.99:0.85x5"`` (sensitivity:specificity: a lenient
annotator says "correct" too easily). Each judgment is given by an annotator who has not judged the
item yet, chosen at random; answers are independent given the truth. A share of all judgments
(``gold_rate``) goes to gold items, whose answer the organizer knows: half correct, half
incorrect items of the data set where it has them.

To measure what happens when the annotator model's assumption of no item-level difficulty fails,
a share of the items can be *hard*: on them every annotator is right only with probability
``hard_accuracy`` (if that is below their own rates), so their errors are correlated.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from ..core.results import Plan
from ..core.state import TaskState

__all__ = ["AnnotatorPanel", "PerfectOracle", "parse_annotators"]

_ENTRY = re.compile(r"^(?P<a>[0-9.]+)(?::(?P<b>[0-9.]+))?(?:x(?P<n>[0-9]+))?$")


def parse_annotators(spec: str) -> tuple[tuple[float, float], ...]:
    """``(sensitivity, specificity)`` per annotator from a specification (see module notes).

    Raises :class:`ValueError` naming the entry that is not understood.
    """
    profiles = []
    for raw in spec.split(","):
        entry = raw.strip()
        match = _ENTRY.match(entry)
        if not match:
            raise ValueError(
                f"annotator {entry!r}: use an accuracy like 0.95, or "
                "sensitivity:specificity like 0.99:0.85, optionally xN"
            )
        se = float(match["a"])
        sp = float(match["b"]) if match["b"] is not None else se
        count = int(match["n"]) if match["n"] is not None else 1
        if not (0.0 <= se <= 1.0 and 0.0 <= sp <= 1.0):
            raise ValueError(f"annotator {entry!r}: rates must lie in [0, 1]")
        if count < 1:
            raise ValueError(f"annotator {entry!r}: xN needs N >= 1")
        profiles += [(se, sp)] * count
    if not profiles:
        raise ValueError("no annotators given")
    return tuple(profiles)


class PerfectOracle:
    """Every answer is right and final: the item's exact label (one judgment per item)."""

    judgments = 0

    def __init__(self, truth: np.ndarray):
        self.truth = truth

    def answer(self, state: TaskState, plan: Plan) -> None:
        if plan.items.size:
            state.set_labels(plan.items, self.truth[plan.items])
            self.judgments += int(plan.items.size)


@dataclass
class AnnotatorPanel:
    """Fallible annotators answering a campaign's requests, plus gold items at ``gold_rate``.

    Parameters
    ----------
    profiles : tuple of (sensitivity, specificity)
    truth : numpy.ndarray of bool
        The true label of every item.
    gold_items : numpy.ndarray
        Items with a known answer (set on the state with :meth:`TaskState.set_gold`).
    gold_rate : float
        Share of all judgments spent on gold items.
    judgments_per_item : int
        Judgments a newly drawn item gets.
    rng : numpy.random.Generator
    hard : numpy.ndarray of bool, optional
        Per item: a hard item, on which every annotator is right with probability at most
        ``hard_accuracy`` (gold items are never hard: the organizer chose them clear).
    hard_accuracy : float
    """

    profiles: tuple
    truth: np.ndarray
    gold_items: np.ndarray
    gold_rate: float
    judgments_per_item: int
    rng: np.random.Generator
    hard: np.ndarray | None = None
    hard_accuracy: float = 0.5
    judgments: int = 0
    gold_judgments: int = 0
    _gold_owed: float = 0.0

    def __post_init__(self):
        if not 0.0 <= self.gold_rate < 1.0:
            raise ValueError("gold rate must lie in [0, 1)")
        self.sensitivity = np.array([p[0] for p in self.profiles])
        self.specificity = np.array([p[1] for p in self.profiles])
        self._judged_by: dict[int, set] = {}

    @property
    def size(self) -> int:
        return len(self.profiles)

    def answer(self, state: TaskState, plan: Plan) -> None:
        """Judge the plan's new items (``judgments_per_item`` each) and its ``again`` items (one
        more each), then the gold judgments owed at ``gold_rate``."""
        self.answer_items(state, plan.items, plan.again)

    def answer_items(
        self, state: TaskState, items: np.ndarray, again: np.ndarray | None = None
    ) -> None:
        """Judge new ``items`` (``judgments_per_item`` each) and ``again`` items (one more
        each), then the gold judgments owed at ``gold_rate``."""
        again = np.zeros(0, np.int64) if again is None else again
        items = np.concatenate(
            [np.repeat(items, min(self.judgments_per_item, self.size)), again]
        ).astype(np.int64)
        self._judge(state, items)
        if items.size and self.gold_rate > 0 and self.gold_items.size:
            self._gold_owed += items.size * self.gold_rate / (1.0 - self.gold_rate)
            owed = math.floor(self._gold_owed)
            self._gold_owed -= owed
            self._judge(state, self._gold_draws(owed), gold=True)

    def _judge(self, state: TaskState, items: np.ndarray, *, gold: bool = False) -> None:
        who_list: list[int] = []
        kept_list: list[int] = []
        for item in items.tolist():
            done = self._judged_by.setdefault(item, set())
            free = [a for a in range(self.size) if a not in done]
            if not free:
                continue
            a = free[int(self.rng.integers(len(free)))]
            done.add(a)
            who_list.append(a)
            kept_list.append(item)
        if not kept_list:
            return
        kept = np.array(kept_list, dtype=np.int64)
        who = np.array(who_list, dtype=np.int64)
        truth = self.truth[kept]
        se, sp = self.sensitivity[who], self.specificity[who]
        if self.hard is not None and not gold:
            hard = self.hard[kept]
            se = np.where(hard, np.minimum(se, self.hard_accuracy), se)
            sp = np.where(hard, np.minimum(sp, self.hard_accuracy), sp)
        p_yes = np.where(truth, se, 1.0 - sp)
        says = self.rng.random(kept.size) < p_yes
        state.add_judgments(kept, who, says)
        self.judgments += int(kept.size)
        if gold:
            self.gold_judgments += int(kept.size)

    def _gold_draws(self, count: int) -> np.ndarray:
        """``count`` gold items, each one some annotator has not judged yet."""
        out = []
        for _ in range(count):
            for _attempt in range(20):
                item = int(self.gold_items[self.rng.integers(self.gold_items.size)])
                if len(self._judged_by.get(item, ())) < self.size:
                    out.append(item)
                    break
        return np.array(out, dtype=np.int64)


def choose_gold(
    truth: np.ndarray, candidates: np.ndarray, size: int, rng: np.random.Generator
) -> np.ndarray:
    """Up to ``size`` gold items among ``candidates``: half correct, half incorrect where the
    candidates allow (sorted)."""
    correct = candidates[truth[candidates]]
    wrong = candidates[~truth[candidates]]
    n_wrong = min(size // 2, wrong.size)
    n_correct = min(size - n_wrong, correct.size)
    n_wrong = min(size - n_correct, wrong.size)
    chosen = np.concatenate(
        [rng.choice(correct, n_correct, replace=False), rng.choice(wrong, n_wrong, replace=False)]
    )
    return np.sort(chosen.astype(np.int64))
