"""What a task's kind decides for the product: :class:`TaskKind`, which each kind's wing
(``open_world``, ``closed_pool``) implements, and :class:`RunContent`, a run file as its kind read
it, which the ingestion service stores.

The wings stand on the models, the ingestion parsers, the selectors and the engine core; the
services, presenters, board texts, views, forms and API above ask the kind instead of testing it
(``leaderboard.kinds.kind_for``). Nothing a wing imports may import ``leaderboard.kinds`` back.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import IO, ClassVar

import numpy as np

from ..models import Run, Task
from ..selectors import Check, Readiness


class RunContent(ABC):
    """A run's file as its kind read it: what the ingestion service screens and stores.

    ``format`` is the file's format (``tsv``, ``jsonl``...); ``len()`` the records it holds."""

    format: str

    @abstractmethod
    def __len__(self) -> int: ...

    @property
    def screened_keys(self) -> list[str] | None:
        """The keys the junk screen looks at before storing (``None``: never held)."""
        return None

    @property
    def new_items(self) -> tuple[list[str], Mapping[str, object]] | None:
        """The keys (and their payloads) the run may add to the task's items, stored in short
        transactions before the run (``None``: it adds none)."""
        return None

    @abstractmethod
    def store(self, run: Run, indices: np.ndarray | None) -> None:
        """Write the run's rows (inside the caller's transaction, the run row locked);
        ``indices`` are the item indices of :attr:`new_items`' keys, when it has any."""

    @abstractmethod
    def queued(self) -> tuple[str, dict[str, object]]:
        """The reason the run is queued with, and the run fields it sets beside its counts."""


class TaskKind(ABC):
    """The product's wing of one kind of task (``Task.Kind``).

    What the organizer supplies: :attr:`uploads` (the Data section's upload forms, in order) and
    :attr:`readiness` (the checklist before opening, in order); whether the task has a pool or a
    reference sample. What a run file holds: :attr:`run_upload` (the receiver's name for its
    format), the words for it on the submit and overview pages, :meth:`read_run` (the worker's
    parser). What it publishes: :attr:`measures` (those it may show), :meth:`board_measures`
    (those it shows), and whether a run page has a precision-recall curve."""

    value: ClassVar[str]  # the Task.Kind value
    called: ClassVar[str]  # what a task of this kind is, in a sentence: "an open task"
    measures: ClassVar[tuple[str, ...]]
    has_pool: ClassVar[bool] = False
    has_reference_sample: ClassVar[bool] = False
    has_curves: ClassVar[bool] = False
    uploads: ClassVar[tuple[str, ...]]
    readiness_checks: ClassVar[tuple[Callable[[Task], Check], ...]]
    run_upload: ClassVar[str]
    run_records: ClassVar[str]  # what a run's limit counts: "predictions", "lines"
    run_format_html: ClassVar[str]  # the submit page's line format (safe HTML)
    run_format_overview_html: ClassVar[str]  # the task page's

    def readiness(self, task: Task) -> Readiness:
        """``task``'s checklist as its settings (those set on the object, saved or not) and its
        stored data stand now (``task`` itself is saved)."""
        return Readiness(tuple(check(task) for check in self.readiness_checks))

    def board_measures(self, task: Task) -> tuple[str, ...]:
        """The columns of ``task``'s board."""
        return self.measures

    def records_per_run(self, task: Task) -> int:
        """The most records (lines) a run of ``task`` may hold."""
        return task.max_predictions_per_run

    def runs_refused(self, task: Task) -> tuple[str, str] | None:
        """Why the open ``task`` takes no run now, as an error code and message; or ``None``."""
        return None

    def design_name_checked_alone(self, task: Task) -> bool:
        """Whether the validator checks ``task``'s design name even when other settings are
        wrong (the design as a whole is checked once they are right)."""
        return False

    @abstractmethod
    def read_run(
        self,
        run: Run,
        stream: IO[bytes],
        *,
        max_bytes: int,
        progress: Callable[[int, int], None] | None = None,
    ) -> RunContent:
        """Parse ``run``'s stored file (a worker's job, outside any transaction); raise
        ``UploadRejected`` with its problems."""
