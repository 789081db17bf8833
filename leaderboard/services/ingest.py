"""Validating a received run (a worker's job): parse its stored file, then queue it or reject it
(or, for an open task, hold it for the organizers when most of its keys match no item and look
malformed: :mod:`.held_runs`).

Safe to repeat: the run's row is locked and its state re-read before every write, so a retried or
duplicated message finds the run past ``validating`` and does nothing. Parsing (seconds for
millions of lines) happens outside any transaction. Storing writes in short transactions, so
that on SQLite, where a transaction holds the whole database's write lock, other writers
(answers, claims, uploads, sign-ins) wait well under a second even for a run of the maximum size
(issue 29, N9; bench/ingest_writer_wait.py): the run's new items go in batches
(:func:`.items.ensure_items_in_batches`), each also adding its count to the run's
``n_new_items``, while the run stays ``validating``, which nothing reads as complete; then one
transaction writes its predictions and moves it to ``queued``. A worker killed half-way leaves
the run ``validating`` with some of its items stored (items no run predicts yet, as gold and
reference items can be) and no predictions; the redelivered message parses again, finds those
items known and goes on where the batches stopped. The stored file is deleted once the run is
queued or rejected.
"""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import F

from .. import jobs
from ..ingestion import UploadRejected, human_bytes
from ..ingestion.screening import KeyScreen
from ..kinds import RunContent, kind_for
from ..models import Run, Task
from .held_runs import hold_run, junk_screen, was_held
from .items import ensure_items_in_batches
from .lifecycle import fail_run, transition_run
from .runs import SubmissionError, submit_run
from .stored_files import forget_stored_on_commit

WAITING = (Run.State.RECEIVED, Run.State.VALIDATING)


def ingest_run(run_id: int) -> str:
    """Validate run ``run_id`` if it is waiting for it; return the run's state."""
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        return "missing"
    ingest_received(run)
    return run.state


def submit_and_ingest(**submission: Any) -> Run:
    """:func:`~leaderboard.services.runs.submit_run`, then validate the file here and now.

    For callers that are not web requests (``manage.py submit_run``, the demo, tests): the run is
    ``queued`` on return, or :class:`SubmissionError` is raised with its problems (the run is
    recorded ``rejected``, as a worker would have).
    """
    run = submit_run(**submission, enqueue=False)
    rejected = ingest_received(run)
    if rejected is not None:
        raise SubmissionError(
            rejected.summary,
            code=rejected.code,
            problems=rejected.problems,
            total=rejected.total,
            run=run,
        )
    return run


def ingest_received(run: Run) -> UploadRejected | None:
    """Validate ``run``'s stored file and store its predictions, or reject it.

    Returns the rejection (the problems are also recorded on the run), or ``None``. ``run`` is
    updated in place.
    """
    if not _start(run):
        return None
    try:
        with default_storage.open(run.upload, "rb") as stream:
            content = kind_for(run.task).read_run(run, stream, _Progress(run))
    except UploadRejected as exc:
        _reject(run, exc)
        return exc
    except FileNotFoundError:
        _lost(run)
        return None
    keys = content.screened_keys
    if keys is not None and not was_held(run):  # a released run is not held again
        screen = junk_screen(run.task, keys)
        if screen.junk:
            _hold(run, screen, keys)
            return None
    _store(run, content)
    return None


def _locked(run: Run) -> Run | None:
    """``run`` re-read with its row locked, if it still waits for validation."""
    current = Run.objects.select_for_update().filter(pk=run.pk, state__in=WAITING).first()
    if current is None:
        run.refresh_from_db()
    return current


def _start(run: Run) -> bool:
    """Move a received run to ``validating``; ``False`` if someone else already finished it."""
    with transaction.atomic():
        current = _locked(run)
        if current is None:
            return False
        if current.state == Run.State.RECEIVED:
            transition_run(current, Run.State.VALIDATING, "validating the file")
    run.refresh_from_db()
    return True


def _reject(run: Run, exc: UploadRejected) -> None:
    with transaction.atomic():
        current = _locked(run)
        if current is None:
            return
        transition_run(
            current,
            Run.State.REJECTED,
            exc.summary,
            upload="",
            errors=[p.as_dict() for p in exc.problems],
            error_count=exc.total,
        )
        forget_stored_on_commit(run.upload)
    run.refresh_from_db()


def _hold(run: Run, screen: KeyScreen, keys: list[str]) -> None:
    with transaction.atomic():
        current = _locked(run)
        if current is not None:
            hold_run(current, screen, keys)
    run.refresh_from_db()


def _lost(run: Run) -> None:
    with transaction.atomic():
        current = _locked(run)
        if current is not None:
            fail_run(
                current,
                "the received file was lost before it could be validated; "
                "your quota was refunded, please submit it again",
            )
    run.refresh_from_db()


def _store(run: Run, content: RunContent) -> None:
    indices = None
    if content.new_items is not None:
        keys, payloads = content.new_items
        indices = ensure_items_in_batches(
            task=run.task,
            keys=keys,
            payloads=payloads,
            on_batch=lambda n_new: _count_new_items(run, n_new),
        )
        if indices is None:  # the run left `validating` meanwhile
            return
    with transaction.atomic():
        Task.objects.select_for_update().only("pk").get(pk=run.task_id)
        current = _locked(run)
        if current is None:
            return
        content.store(current, indices)
        reason, fields = content.queued()
        transition_run(
            current,
            Run.State.QUEUED,
            reason,
            n_predictions=len(content),
            file_format=content.format,
            upload="",
            **fields,
        )
        forget_stored_on_commit(run.upload)
        jobs.enqueue_plan(current.pk)
    run.refresh_from_db()


def _count_new_items(run: Run, n_new: int) -> bool:
    """In a batch's transaction (the task row locked): the items the batch inserted count as the
    run's new ones (across retries), if the run still waits for validation; ``False`` if it left
    ``validating`` meanwhile (withdrawn, or stored by a duplicated message): storing stops."""
    if _locked(run) is None:
        return False
    Run.objects.filter(pk=run.pk).update(n_new_items=F("n_new_items") + n_new)
    return True


class _Progress:
    """Tells the run page how far validation has got (the reason, at most every few seconds)."""

    def __init__(self, run: Run):
        self.run_id = run.pk
        self.size = run.file_bytes
        self.next = time.monotonic() + settings.INGEST_PROGRESS_SECONDS

    def __call__(self, n_bytes: int, n_lines: int) -> None:
        now = time.monotonic()
        if now < self.next:
            return
        self.next = now + settings.INGEST_PROGRESS_SECONDS
        share = f"{min(99, int(100 * n_bytes / self.size))}% of " if self.size else ""
        Run.objects.filter(pk=self.run_id, state=Run.State.VALIDATING).update(
            reason=f"{share}the file read ({human_bytes(n_bytes)}, {n_lines:,} lines)"
        )
