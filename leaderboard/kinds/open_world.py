"""The open-world task, the product's side: a run is a set of predicted items, new keys become
the task's items, recall rests on a reference sample the organizers upload or draw."""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO

import numpy as np
from django.utils.safestring import mark_safe

from evaluation.core.designs import SERVICE_DESIGNS
from evaluation.core.measures import OPEN_MEASURES

from ..ingestion import ParsedRun, parse_run_file
from ..models import Run, RunPredictions, Task
from ..selectors import upload_limits
from ..selectors.readiness import gold, open_world_annotators, phases, reference_sample
from .base import Progress, RunContent, RunFile, TaskKind


class OpenWorldRun(RunContent):
    """An open-world run: its predicted keys, their scores and the payloads it gives."""

    def __init__(self, parsed: ParsedRun):
        self.parsed = parsed
        self.format = parsed.format

    def __len__(self) -> int:
        return len(self.parsed)

    @property
    def screened_keys(self) -> list[str]:
        return self.parsed.keys

    @property
    def new_items(self) -> tuple[list[str], Mapping[str, object]]:
        return self.parsed.keys, self.parsed.payloads

    def store(self, run: Run, indices: np.ndarray | None) -> None:
        assert indices is not None  # new_items always gives the run's keys
        order = np.argsort(indices, kind="stable")
        RunPredictions.objects.create(
            run=run, items=indices[order].tobytes(), scores=self.parsed.scores[order].tobytes()
        )

    def queued(self) -> tuple[str, dict[str, object]]:
        # How many items are new says whether another team predicted them: not in the reason.
        # A released run's examples of malformed keys go: its events keep why.
        return f"{len(self):,} predictions", {"errors": [], "error_count": 0}


class OpenWorld(TaskKind):
    value = Task.Kind.OPEN.value
    called = "an open task"
    measures = OPEN_MEASURES
    has_reference_sample = True
    uploads = ("reference", "gold")
    readiness_checks = (open_world_annotators, reference_sample, gold, phases)
    run_file = RunFile(
        "run",
        "predictions",
        format_html=mark_safe(
            "One prediction per line: <code>key&lt;TAB&gt;score</code>, scores in [0, 1]."
        ),
        overview_html=mark_safe(
            "A run has one prediction per line: <code>key&lt;TAB&gt;score</code>, scores in [0, 1]."
        ),
    )

    def design_name_checked_alone(self, task: Task) -> bool:
        return task.design not in SERVICE_DESIGNS

    def read_run(self, run: Run, stream: IO[bytes], progress: Progress = None) -> OpenWorldRun:
        parsed = parse_run_file(
            stream,
            file_name=run.file_name,
            max_bytes=upload_limits(run.task).max_bytes,
            max_predictions=run.task.max_predictions_per_run,
            progress=progress,
        )
        return OpenWorldRun(parsed)
