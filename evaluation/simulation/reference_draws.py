"""A reference sample built in the product, simulated: the candidates of the drawn documents are
judged by a panel of annotators, and doubtful ones get further looks by the rule the service
follows (:func:`evaluation.core.candidates.candidate_labels`) until every candidate is resolved or
has every judgment it can get.

The service asks looks after each estimation, as answers arrive; here they are asked in rounds
(every due look, then the next fit), which asks the same looks once the answers are in. Each
judgment is given by an annotator who has not judged the candidate yet, chosen at random, right
with their sensitivity or specificity. The annotator model is fitted as the service's is on a
draft task (no run: one prior class for every judged item).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..core.candidates import candidate_labels
from ..core.labels import item_labels
from ..core.state import TaskState

__all__ = ["DrawOutcome", "simulate_draw"]


@dataclass(frozen=True)
class DrawOutcome:
    """What one simulated draw ended with.

    ``misclassified`` counts the candidates whose label (as the answers stand: true when its
    posterior is above one half, unless that overrules every answer) is wrong, resolved or not;
    ``misclassified_resolved`` those among the resolved ones, ``misclassified_exhausted`` those
    among the exhausted ones (what an organizer's settling of the stuck candidates decides:
    ``evaluation.kinds.open_world.reference_sample``). ``complete``: every
    candidate resolved (otherwise ``exhausted`` of them are doubtful with every judgment they
    can get). ``labelled_true`` candidates are labelled true (the sample the draw writes once
    its stuck candidates are settled), ``false_in`` of them wrongly, ``false_in_exhausted`` of
    those among the exhausted ones.
    """

    candidates: int
    true: int
    complete: bool
    exhausted: int
    misclassified: int
    misclassified_resolved: int
    misclassified_exhausted: int
    labelled_true: int
    false_in: int
    false_in_exhausted: int
    judgments: int
    rounds: int


def simulate_draw(
    truth: npt.ArrayLike,
    profiles: tuple[tuple[float, float], ...],
    *,
    confidence: float,
    rng: np.random.Generator,
    first: int = 1,
    most: int = 5,
    max_rounds: int = 20,
) -> DrawOutcome:
    """Judge the candidates (``truth``: per candidate, whether it is true) with the panel
    ``profiles`` (``(sensitivity, specificity)`` per annotator), ``first`` judgments each, then
    looks until none is due; an item gets at most ``min(most, len(profiles))`` judgments."""
    truth = np.asarray(truth, dtype=bool)
    n = truth.size
    limit = min(most, len(profiles))
    if not 1 <= first <= limit:
        raise ValueError(f"first must be from 1 to {limit} (the panel's size and most)")
    state = TaskState(n)
    judged = np.zeros((n, len(profiles)), dtype=bool)
    asked = np.zeros(n, np.int64)
    items = np.arange(n)

    def judge(targets: np.ndarray) -> None:
        who = np.array([rng.choice(np.flatnonzero(~judged[i])) for i in targets], dtype=np.int64)
        rates = np.array(
            [
                profiles[a][0] if truth[i] else profiles[a][1]
                for i, a in zip(targets, who, strict=True)
            ]
        )
        right = rng.random(targets.size) < rates
        state.add_judgments(targets, who, np.where(right, truth[targets], ~truth[targets]))
        judged[targets, who] = True
        asked[targets] += 1

    for _ in range(first):
        judge(items)
    rounds = 0
    while True:
        labels = item_labels(state, item_class=np.full(n, -1, np.int64))
        decided = candidate_labels(
            labels, items, asked=asked, can_look=asked < limit, confidence=confidence
        )
        due = np.flatnonzero(decided.look)
        if not due.size or rounds >= max_rounds:
            break
        judge(due)
        rounds += 1
    label = decided.leaning
    wrong = label != truth
    return DrawOutcome(
        candidates=n,
        true=int(truth.sum()),
        complete=decided.complete,
        exhausted=int(decided.exhausted.sum()),
        misclassified=int(wrong.sum()),
        misclassified_resolved=int((wrong & decided.resolved).sum()),
        misclassified_exhausted=int((wrong & decided.exhausted).sum()),
        labelled_true=int(label.sum()),
        false_in=int((label & ~truth).sum()),
        false_in_exhausted=int((label & ~truth & decided.exhausted).sum()),
        judgments=int(asked.sum()),
        rounds=rounds,
    )
