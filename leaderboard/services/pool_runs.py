"""Closed-pool runs: a score and a 0/1 label for every pool item, checked against the pool.

Parsed by the one upload parser (:func:`leaderboard.ingestion.parse_pool_run_file`: malformed
lines and duplicate keys by line); here the keys are matched with the pool, refusing keys outside
it (by line) and any pool item left out. Stored packed in pool index order
(:class:`~leaderboard.models.PoolRunOutputs`); the predicted positives are also the run's
:class:`~leaderboard.models.RunPredictions`, which is what the annotation queue's conflict rules
read: a team whose run predicts an item positive never verifies it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

import numpy as np

from ..ingestion import MAX_PROBLEMS, Problem, UploadRejected, parse_pool_run_file
from ..ingestion.fields import _shown
from ..models import Item, PoolRunOutputs, Run, RunPredictions
from .items import all_item_indices
from .runs import upload_limit

# Pool keys a refusal names as examples of the items a run left out.
MISSING_EXAMPLES = 3


@dataclass(frozen=True, eq=False)
class PoolRunArrays:
    """A closed-pool run's output in pool index order, and what its file was."""

    scores: np.ndarray  # float64 per pool item
    labels: np.ndarray  # uint8 per pool item
    format: str

    @property
    def predicted_positives(self) -> int:
        return int(np.count_nonzero(self.labels))

    def __len__(self) -> int:
        return int(self.scores.size)


def read_pool_run(
    run: Run, stream: IO[bytes], *, progress: Callable[[int, int], None] | None = None
) -> PoolRunArrays:
    """Parse ``run``'s file and order it by the pool; raise :class:`UploadRejected` with the
    problems by line (keys outside the pool) and of the whole file (pool items left out)."""
    task = run.task
    if not task.has_pool:
        raise UploadRejected(
            [Problem(None, "the task's pool has not been uploaded yet: no run can be scored")], 1
        )
    parsed = parse_pool_run_file(
        stream,
        file_name=run.file_name,
        max_bytes=upload_limit(task),
        max_items=max(task.max_predictions_per_run, task.n_items),
        progress=progress,
    )
    pool = all_item_indices(task=task)
    indices = np.fromiter((pool.get(k, -1) for k in parsed.keys), np.int64, len(parsed.keys))
    # Line i + 1 holds key i: an accepted file has blank lines only at its end.
    outside = np.flatnonzero(indices < 0)
    problems = [
        Problem(int(i) + 1, f"key {_shown(parsed.keys[i], 60)} is not in the pool")
        for i in outside[:MAX_PROBLEMS]
    ]
    total = int(outside.size)
    seen = np.zeros(len(pool), dtype=bool)
    seen[indices[indices >= 0]] = True
    if not seen.all():
        missing = np.flatnonzero(~seen)
        keys = dict(
            Item.objects.filter(task_id=task.pk, index__in=missing[:MISSING_EXAMPLES].tolist())
            .order_by("index")
            .values_list("index", "key")
        )
        examples = ", ".join(_shown(keys[int(i)], 40) for i in missing[:MISSING_EXAMPLES])
        problems.insert(
            0,
            Problem(
                None,
                f"{missing.size:,} of the pool's {len(pool):,} items are missing (every run "
                f"scores every pool item), e.g. {examples}",
            ),
        )
        total += 1
    if problems:
        raise UploadRejected(problems[:MAX_PROBLEMS], total, n_bytes=parsed.n_bytes)
    scores = np.empty(len(pool), dtype="<f8")
    labels = np.empty(len(pool), dtype=np.uint8)
    scores[indices] = parsed.scores
    labels[indices] = parsed.labels
    return PoolRunArrays(scores, labels, parsed.format)


def store_pool_run(run: Run, outputs: PoolRunArrays) -> None:
    """Store ``outputs`` for ``run`` (inside the caller's transaction)."""
    PoolRunOutputs.objects.create(
        run=run, scores=outputs.scores.tobytes(), labels=outputs.labels.tobytes()
    )
    positives = np.flatnonzero(outputs.labels).astype(np.int64)
    RunPredictions.objects.create(
        run=run,
        items=positives.tobytes(),
        scores=outputs.scores[positives].astype(np.float64).tobytes(),
    )
