"""The closed pool, the product's side: the organizers upload the pool once; a run gives a score
and a 0/1 label for every pool item, checked against the pool.

A run is parsed by the one upload parser (:func:`leaderboard.ingestion.parse_pool_run_file`:
malformed lines and duplicate keys by line); here the keys are matched with the pool, refusing
keys outside it (by line) and any pool item left out. Stored packed in pool index order
(:class:`~leaderboard.models.PoolRunOutputs`); the predicted positives are also the run's
:class:`~leaderboard.models.RunPredictions`, which is what the annotation queue's conflict rules
read: a team whose run predicts an item positive never verifies it.
"""

from __future__ import annotations

from typing import IO

import numpy as np
from django.utils.safestring import mark_safe

from evaluation.core.closed_pool import CLOSED_POOL_MEASURES
from evaluation.core.measures import OPEN_MEASURES

from ..ingestion import MAX_PROBLEMS, Problem, UploadRejected, parse_pool_run_file
from ..ingestion.fields import _shown
from ..models import Item, PoolRunOutputs, Run, RunPredictions, Task
from ..selectors import all_item_indices, upload_limits
from ..selectors.readiness import closed_pool_annotators, gold, phases, pool
from .base import Progress, RunContent, RunFile, TaskKind

# Pool keys a refusal names as examples of the items a run left out.
MISSING_EXAMPLES = 3


class PoolRun(RunContent):
    """A closed-pool run's output in pool index order, and what its file was."""

    def __init__(self, scores: np.ndarray, labels: np.ndarray, format: str):
        self.scores = scores  # float64 per pool item
        self.labels = labels  # uint8 per pool item
        self.format = format

    @property
    def predicted_positives(self) -> int:
        return int(np.count_nonzero(self.labels))

    def __len__(self) -> int:
        return int(self.scores.size)

    def store(self, run: Run, indices: np.ndarray | None) -> None:  # noqa: ARG002 (RunContent's)
        PoolRunOutputs.objects.create(
            run=run, scores=self.scores.tobytes(), labels=self.labels.tobytes()
        )
        positives = np.flatnonzero(self.labels).astype(np.int64)
        RunPredictions.objects.create(
            run=run,
            items=positives.tobytes(),
            scores=self.scores[positives].astype(np.float64).tobytes(),
        )

    def queued(self) -> tuple[str, dict[str, object]]:
        return (
            f"{len(self):,} pool items scored, {self.predicted_positives:,} predicted positive",
            {},
        )


class ClosedPool(TaskKind):
    value = Task.Kind.CLOSED_POOL.value
    called = "a closed pool"
    measures = CLOSED_POOL_MEASURES
    has_pool = True
    has_curves = True
    uploads = ("pool", "gold")
    readiness_checks = (pool, gold, closed_pool_annotators, phases)
    run_file = RunFile(
        "pool_run",
        "lines",
        format_html=mark_safe(
            "One line per pool item, every one of them: "
            "<code>key&lt;TAB&gt;score&lt;TAB&gt;label</code>, scores in [0, 1], labels 0 or 1."
        ),
        overview_html=mark_safe(
            "A run has one line per pool item, every one of them: "
            "<code>key&lt;TAB&gt;score&lt;TAB&gt;label</code>."
        ),
    )

    def board_measures(self, task: Task) -> tuple[str, ...]:
        """The task's chosen measures, else the three."""
        return tuple(task.measures) if task.measures else OPEN_MEASURES

    def records_per_run(self, task: Task) -> int:
        """A run scores every pool item, however many."""
        return max(task.max_predictions_per_run, task.n_items)

    def runs_refused(self, task: Task) -> tuple[str, str] | None:
        # A run before the pool could not be scored, and would block the pool's upload.
        if task.has_pool:
            return None
        loading = " (an upload of it is being stored)" if task.pool_loading else ""
        return (
            "no_pool",
            f"task {task.slug!r} has no pool yet{loading}: its organizers upload it before "
            "runs are accepted; nothing was stored or counted",
        )

    def read_run(self, run: Run, stream: IO[bytes], progress: Progress = None) -> PoolRun:
        """Parse ``run``'s file and order it by the pool; raise :class:`UploadRejected` with the
        problems by line (keys outside the pool) and of the whole file (pool items left out)."""
        task = run.task
        if not task.has_pool:
            raise UploadRejected(
                [Problem(None, "the task's pool has not been uploaded yet: no run can be scored")],
                1,
            )
        parsed = parse_pool_run_file(
            stream,
            file_name=run.file_name,
            max_bytes=upload_limits(task).max_bytes,
            max_items=max(task.max_predictions_per_run, task.n_items),
            progress=progress,
        )
        indices_of = all_item_indices(task=task)
        indices = np.fromiter(
            (indices_of.get(k, -1) for k in parsed.keys), np.int64, len(parsed.keys)
        )
        # Line i + 1 holds key i: an accepted file has blank lines only at its end.
        outside = np.flatnonzero(indices < 0)
        problems = [
            Problem(int(i) + 1, f"key {_shown(parsed.keys[i], 60)} is not in the pool")
            for i in outside[:MAX_PROBLEMS]
        ]
        total = int(outside.size)
        seen = np.zeros(len(indices_of), dtype=bool)
        seen[indices[indices >= 0]] = True
        if not seen.all():
            problems.insert(0, _missing_problem(task, np.flatnonzero(~seen), len(indices_of)))
            total += 1
        if problems:
            raise UploadRejected(problems[:MAX_PROBLEMS], total, n_bytes=parsed.n_bytes)
        scores = np.empty(len(indices_of), dtype="<f8")
        labels = np.empty(len(indices_of), dtype=np.uint8)
        scores[indices] = parsed.scores
        labels[indices] = parsed.labels
        return PoolRun(scores, labels, parsed.format)


def _missing_problem(task: Task, missing: np.ndarray, n_pool: int) -> Problem:
    keys = dict(
        Item.objects.filter(task_id=task.pk, index__in=missing[:MISSING_EXAMPLES].tolist())
        .order_by("index")
        .values_list("index", "key")
    )
    examples = ", ".join(_shown(keys[int(i)], 40) for i in missing[:MISSING_EXAMPLES])
    return Problem(
        None,
        f"{missing.size:,} of the pool's {n_pool:,} items are missing (every run "
        f"scores every pool item), e.g. {examples}",
    )
