"""Agreement between annotators on a task: Krippendorff's alpha (nominal) and raw pairwise.

Both read counted judgments ("correct"/"incorrect"; skips and uncounted late answers are left
out) of items with at least two of them. Computing them scans judgments, so the organizer page
samples at most :data:`MAX_ITEMS` items (the most recently created requests) and says so.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import krippendorff
import numpy as np

from .models import Answer, Judgment, VerificationRequest

MAX_ITEMS = 20_000
METHOD = "Krippendorff's alpha (nominal) over counted judgments of items with 2 or more"


@dataclass(frozen=True)
class Agreement:
    alpha: float | None
    pairwise: float | None
    items: int
    method: str

    def as_dict(self) -> dict:
        return {
            "alpha": self.alpha,
            "pairwise": self.pairwise,
            "items": self.items,
            "method": self.method,
        }


def agreement_from_counts(counts: np.ndarray) -> tuple[float | None, float | None]:
    """(alpha, pairwise agreement) from an (items x 2) array of votes per category.

    Rows with fewer than two votes are dropped. Alpha is None when undefined (fewer than two
    pairable items, or every vote in one category); pairwise is the share of agreeing pairs of
    judgments on the same item, pooled over items.
    """
    counts = np.asarray(counts, dtype=np.int64).reshape(-1, 2)
    counts = counts[counts.sum(axis=1) >= 2]
    if counts.shape[0] == 0:
        return None, None
    n = counts.sum(axis=1)
    pairs = n * (n - 1) / 2
    agree = (counts * (counts - 1) / 2).sum(axis=1)
    pairwise = float(agree.sum() / pairs.sum())
    if (counts.sum(axis=0) == 0).any():
        return None, pairwise
    alpha = float(krippendorff.alpha(value_counts=counts, level_of_measurement="nominal"))
    return (alpha if np.isfinite(alpha) else None), pairwise


def task_agreement(*, task) -> Agreement:
    """Agreement over the task's most recent :data:`MAX_ITEMS` requests with 2+ votes."""
    eligible = VerificationRequest.objects.filter(task=task, judgments_counted__gte=2)
    request_ids = eligible.order_by("-id").values("pk")[:MAX_ITEMS]
    votes: defaultdict[int, list[int]] = defaultdict(lambda: [0, 0])
    for request_id, answer in (
        Judgment.objects.filter(request_id__in=request_ids, counted=True)
        .values_list("request_id", "answer")
        .iterator(chunk_size=5000)
    ):
        votes[request_id][0 if answer == Answer.CORRECT else 1] += 1
    counts = np.array(list(votes.values()), dtype=np.int64).reshape(-1, 2)
    alpha, pairwise = agreement_from_counts(counts)
    items = int((counts.sum(axis=1) >= 2).sum()) if counts.size else 0
    method = METHOD + (
        f" (the latest {MAX_ITEMS} such items)" if eligible.count() > MAX_ITEMS else ""
    )
    return Agreement(alpha=alpha, pairwise=pairwise, items=items, method=method)
