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
from dataclasses import dataclass
from typing import IO, ClassVar

import numpy as np

from ..models import Run, Task
from ..selectors import Check, Readiness

Progress = Callable[[int, int], None] | None


@dataclass(frozen=True)
class RunFile:
    """What a run file of a kind is: ``upload``, its format as the receiver names it
    (``leaderboard.ingestion``: ``run``, ``pool_run``); ``records``, what the task's limit counts
    in it; its line format on the submit page (``format_html``) and the task page
    (``overview_html``), safe HTML."""

    upload: str
    records: str
    format_html: str
    overview_html: str


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
    :attr:`readiness_checks` (the checklist before opening, in order); whether the task has a
    pool or a reference sample. What a run file holds: :attr:`run_file` (its format's name and
    the pages' words for it) and :meth:`read_run` (the worker's parser). What it publishes:
    :attr:`measures` (those it may show), :meth:`board_measures` (those it shows), and whether
    a run page has a precision-recall curve."""

    value: ClassVar[str]  # the Task.Kind value
    called: ClassVar[str]  # what a task of this kind is, in a sentence: "an open task"
    measures: ClassVar[tuple[str, ...]]
    has_pool: ClassVar[bool] = False
    has_reference_sample: ClassVar[bool] = False
    has_curves: ClassVar[bool] = False
    uploads: ClassVar[tuple[str, ...]]
    readiness_checks: ClassVar[tuple[Callable[[Task], Check], ...]]
    run_file: ClassVar[RunFile]

    def readiness(self, task: Task) -> Readiness:
        """``task``'s checklist as its settings (those set on the object, saved or not) and its
        stored data stand now (``task`` itself is saved)."""
        return Readiness(tuple(check(task) for check in self.readiness_checks))

    def board_measures(self, task: Task) -> tuple[str, ...]:  # noqa: ARG002 (a wing's may read it)
        """The columns of ``task``'s board."""
        return self.measures

    def records_per_run(self, task: Task) -> int:
        """The most records (lines) a run of ``task`` may hold."""
        return task.max_predictions_per_run

    def runs_refused(self, task: Task) -> tuple[str, str] | None:  # noqa: ARG002 (as above)
        """Why the open ``task`` takes no run now, as an error code and message; or ``None``."""
        return None

    def design_name_checked_alone(self, task: Task) -> bool:  # noqa: ARG002 (as above)
        """Whether the validator checks ``task``'s design name even when other settings are
        wrong (the design as a whole is checked once they are right)."""
        return False

    @abstractmethod
    def read_run(self, run: Run, stream: IO[bytes], progress: Progress = None) -> RunContent:
        """Parse ``run``'s stored file under the task's upload limits (a worker's job, outside
        any transaction; ``progress(bytes_read, lines_read)`` after every block); raise
        ``UploadRejected`` with its problems."""
