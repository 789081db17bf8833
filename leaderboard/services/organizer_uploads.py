"""Organizers' uploads of a task's data (gold items, a closed pool, a reference sample,
reference candidates) go the way runs go: a web request only streams the file to storage, a
worker parses and loads it.

:func:`receive_upload` (the web request) refuses what the task cannot take now, then copies the
file to Django's default storage through a :class:`~leaderboard.ingestion.Receiver`: its size
and decompressed size under the task's upload limit, its lines under
``ORGANIZER_UPLOAD_MAX_LINES`` (or the task's line limit for runs, if higher:
:func:`.runs.line_limit`) and each line under ``ORGANIZER_UPLOAD_MAX_LINE_BYTES``, its head
sniffed for the wrong format; a refused file keeps nothing. The upload is recorded ``received``
and a worker is asked, on commit, to load it.

:func:`load_upload` (the worker's job, ``evaluation.load_upload``) is safe to repeat: it moves
the upload to ``parsing``, reads the stored file outside any transaction, then in one
transaction with the upload's row locked stores what the file holds (the kind's own all-or-nothing
write; the items a pool, reference sample or candidates file names are stored before it, in short
transactions: items nothing reads as the pool, sample or candidates until then) and records
``loaded`` with its counts, or ``rejected`` with the first
``ORGANIZER_UPLOAD_PROBLEMS`` problems and their total. A retried or duplicated message finds the
upload settled and does nothing; one that finds it ``parsing`` (a worker died) starts over. The
stored files are deleted once it is settled. An upload that waits past
``PIPELINE_STUCK_SECONDS`` (its message lost, its worker killed) is sent again by the watchdog
(:func:`resend_stuck_uploads`), and rejected after ``PIPELINE_MAX_ATTEMPTS``.

What each kind reads and stores is its own service's (:mod:`.pool`, :mod:`.reference`,
:mod:`.reference_candidates`; gold items are the annotation app's, which adds its loader:
``annotation.services.uploads``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from datetime import datetime, timedelta
from typing import IO, TYPE_CHECKING, Any

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from site_platform.errors import ServiceError

from .. import jobs
from ..ingestion import Problem, UploadRejected, human_bytes
from ..models import OrganizerUpload, Task
from ..selectors import reference_size
from .pool import PoolError, check_pool_upload, finish_pool, read_pool, stage_pool
from .reference import read_reference, store_reference
from .reference_candidates import (
    check_candidates_upload,
    read_candidates,
    refuse_while_verifying,
    stage_items,
    store_candidates,
)
from .runs import SubmissionError, check_size, store_task_upload
from .stored_files import forget_stored

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)

Kind = OrganizerUpload.Kind
State = OrganizerUpload.State
MAX_FILE_NAME_LENGTH = 255

# A kind's loader reads the upload's stored file(s) and stores the items they name in short
# transactions (outside any transaction), and returns the write that makes them what the file
# holds, run in the transaction that records the upload loaded; it returns the counts to record.
# Either raises a ServiceError for a file or a task that refuses.
Store = Callable[[], dict[str, int]]
Loader = Callable[[OrganizerUpload, IO[bytes], "IO[bytes] | None"], Store]


def _owner(upload: OrganizerUpload) -> User | str:
    return upload.uploaded_by or "a former user"


def _load_pool(upload: OrganizerUpload, stream: IO[bytes], payloads: IO[bytes] | None) -> Store:
    task = upload.task
    content = read_pool(
        task=task,
        upload=stream,
        file_name=upload.file_name,
        payloads=payloads,
        payloads_name=upload.payloads_name,
    )
    stage_pool(task=task, content=content)
    return lambda: {"items": finish_pool(task=task, content=content, user=_owner(upload))}


def _load_reference(upload: OrganizerUpload, stream: IO[bytes], _: IO[bytes] | None) -> Store:
    task = upload.task
    parsed = read_reference(task=task, upload=stream, file_name=upload.file_name)
    refuse_while_verifying(task)
    indices = stage_items(task=task, parsed=parsed)

    def store() -> dict[str, int]:
        store_reference(task=task, parsed=parsed, user=_owner(upload), indices=indices)
        size = reference_size(task)  # an item without a group is a document of its own
        return {"items": size.items, "documents": size.documents, "reference_version": size.version}

    return store


def _load_candidates(upload: OrganizerUpload, stream: IO[bytes], _: IO[bytes] | None) -> Store:
    task = upload.task
    parsed = read_candidates(task=task, upload=stream, file_name=upload.file_name)
    confirm = bool(upload.options.get("confirm"))
    check_candidates_upload(task, confirm=confirm)
    indices = stage_items(task=task, parsed=parsed)

    def store() -> dict[str, int]:
        loaded = store_candidates(
            task=task, parsed=parsed, user=_owner(upload), confirm=confirm, indices=indices
        )
        return {"candidates": loaded.candidates, "documents": loaded.documents}

    return store


UPLOAD_LOADERS: dict[str, Loader] = {
    Kind.POOL: _load_pool,
    Kind.REFERENCE: _load_reference,
    Kind.CANDIDATES: _load_candidates,
}


def _check_can_take(task: Task, kind: str, options: Mapping[str, Any]) -> None:
    """What the kind's own service refuses before reading a file (and again when storing it)."""
    if kind == Kind.POOL:
        check_pool_upload(task)
        _refuse_a_second_pool(task)
    elif kind == Kind.REFERENCE:
        refuse_while_verifying(task)
    elif kind == Kind.CANDIDATES:
        check_candidates_upload(task, confirm=bool(options.get("confirm")))


def _refuse_a_second_pool(task: Task) -> None:
    """One pool upload at a time: a pool's items are stored in several transactions, and two
    files stored at once would mix their keys (both would then be rejected)."""
    waiting = OrganizerUpload.objects.filter(
        task=task, kind=Kind.POOL, state__in=(State.RECEIVED, State.PARSING)
    ).first()
    if waiting is not None:
        raise PoolError(
            f"a pool upload of task {task.slug!r} ({waiting.file_name or 'a file'}, upload "
            f"{waiting.pk}) is waiting to be loaded: wait until it is loaded or rejected "
            "(see Uploads); nothing was stored",
            code="pool_upload_waiting",
        )


def _file_name(upload: IO[bytes], file_name: str) -> str:
    name = os.path.basename((file_name or getattr(upload, "name", "") or "").replace("\\", "/"))
    return name[-MAX_FILE_NAME_LENGTH:]


def _store(task: Task, kind: str, upload: IO[bytes], file_name: str) -> tuple[str, int, str]:
    """Copy one file to storage under the caps; its stored name, size and SHA-256."""
    check_size(task=task, size=getattr(upload, "size", None))
    seekable = getattr(upload, "seekable", None)
    if callable(seekable) and seekable():
        upload.seek(0)
    try:
        # The site's line cap, or the task's line limit if more: a pool as large as its runs.
        stored, received = store_task_upload(
            upload,
            task=task,
            directory=settings.ORGANIZER_UPLOAD_DIR,
            kind=kind,
            file_name=file_name,
            min_lines=settings.ORGANIZER_UPLOAD_MAX_LINES,
            max_line_bytes=settings.ORGANIZER_UPLOAD_MAX_LINE_BYTES,
        )
    except UploadRejected as exc:
        raise SubmissionError(
            f"{exc.summary}; nothing was stored",
            code=exc.code,
            problems=exc.problems,
            total=exc.total,
        ) from None
    return stored, received.n_bytes, received.sha256


def _delete(*names: str) -> None:
    for name in names:
        if name:
            forget_stored(name)


def receive_upload(
    *,
    task: Task,
    user: User,
    kind: str,
    upload: IO[bytes],
    file_name: str = "",
    payloads: IO[bytes] | None = None,
    payloads_name: str = "",
    options: Mapping[str, Any] | None = None,
) -> OrganizerUpload:
    """Receive an organizer's upload of ``kind`` for ``task`` (``user``, an organizer: the
    caller checked): store its file (and a pool's payloads file) and record it ``received`` for
    a worker to load. ``options``: a candidates upload's ``confirm``.

    Raises what the kind's service refuses now (``PoolError``, ``ReferenceSampleError``) and
    :class:`~leaderboard.services.runs.SubmissionError` for a file over a cap (``too_large``)
    or in the wrong format (``wrong_format``); nothing is stored then.
    """
    if kind not in Kind.values:
        raise ServiceError(f"unknown upload kind {kind!r}")
    options = dict(options or {})
    _check_can_take(task, kind, options)
    file_name = _file_name(upload, file_name)
    stored, n_bytes, sha256 = _store(task, kind, upload, file_name)
    payloads_stored = ""
    try:
        if payloads is not None:
            payloads_name = _file_name(payloads, payloads_name)
            payloads_stored, more, _ = _store(task, kind, payloads, payloads_name)
            n_bytes += more
        with transaction.atomic():
            received = OrganizerUpload.objects.create(
                task=task,
                kind=kind,
                uploaded_by=user,
                file_name=file_name,
                stored=stored,
                payloads_name=payloads_name if payloads is not None else "",
                payloads_stored=payloads_stored,
                n_bytes=n_bytes,
                sha256=sha256,
                options=options,
                message=f"received {file_name or 'a file'} ({human_bytes(n_bytes)}); "
                "waiting to be loaded",
            )
            jobs.enqueue_load_upload(received.pk)
    except BaseException:
        _delete(stored, payloads_stored)
        raise
    return received


def _settle(upload: OrganizerUpload, state: str, message: str, **fields: Any) -> None:
    """Record ``upload`` settled (its row locked by the caller) and delete its files on commit."""
    files = (upload.stored, upload.payloads_stored)
    upload.state, upload.message = state, message[:2000]
    upload.stored = upload.payloads_stored = ""
    upload.updated_at = timezone.now()
    for name, value in fields.items():
        setattr(upload, name, value)
    upload.save()
    transaction.on_commit(lambda: _delete(*files))


def _locked(upload_id: int) -> OrganizerUpload | None:
    """The upload with its row locked, if it still waits to be loaded."""
    return (
        OrganizerUpload.objects.select_for_update()
        .filter(pk=upload_id, state__in=(State.RECEIVED, State.PARSING))
        .first()
    )


def _reject(upload_id: int, exc: ServiceError) -> None:
    cap = settings.ORGANIZER_UPLOAD_PROBLEMS
    problems = [p.as_dict() if hasattr(p, "as_dict") else dict(p) for p in exc.problems[:cap]]
    with transaction.atomic():
        current = _locked(upload_id)
        if current is None:
            return
        total = max(exc.total, len(exc.problems))
        _settle(current, State.REJECTED, exc.message, problems=problems, problem_count=total)


def _summary(counts: Mapping[str, int]) -> str:
    shown = ", ".join(f"{value:,} {name.replace('_', ' ')}" for name, value in counts.items())
    return f"loaded: {shown}" if shown else "loaded"


def load_upload(upload_id: int, *, loaders: Mapping[str, Loader]) -> str:
    """Parse and load upload ``upload_id`` if it waits for it, with the loader of its kind;
    returns its state (``missing`` for an unknown id). See the module's docstring."""
    # A message redelivered after a worker died finds the upload parsing: it starts over.
    OrganizerUpload.objects.filter(pk=upload_id, state=State.RECEIVED).update(
        state=State.PARSING, message="being read", updated_at=timezone.now()
    )
    current = (
        OrganizerUpload.objects.select_related("task", "uploaded_by").filter(pk=upload_id).first()
    )
    if current is None:
        return "missing"
    if current.state in OrganizerUpload.SETTLED:
        return current.state
    try:
        with ExitStack() as files:
            stream = files.enter_context(default_storage.open(current.stored, "rb"))
            payloads = (
                files.enter_context(default_storage.open(current.payloads_stored, "rb"))
                if current.payloads_stored
                else None
            )
            store = loaders[current.kind](current, stream, payloads)
        with transaction.atomic():
            locked = _locked(upload_id)
            if locked is None:
                return OrganizerUpload.objects.get(pk=upload_id).state
            counts = store()
            _settle(locked, State.LOADED, _summary(counts), counts=counts)
    except ServiceError as exc:
        _reject(upload_id, exc)
    except FileNotFoundError:
        lost = Problem(None, "the stored file was lost before it was read: upload it again")
        _reject(upload_id, ServiceError(str(lost), code="lost", problems=[lost]))
    state = OrganizerUpload.objects.get(pk=upload_id).state
    logger.info("%s upload %d of task %s: %s", current.kind, upload_id, current.task.slug, state)
    return state


def resend_stuck_uploads(*, now: datetime | None = None) -> tuple[int, int]:
    """The watchdog's: send an upload untouched for ``PIPELINE_STUCK_SECONDS`` in ``received``
    or ``parsing`` to a worker again, or reject it after ``PIPELINE_MAX_ATTEMPTS`` (nothing of
    it was stored). Returns (sent again, rejected)."""
    now = now or timezone.now()
    deadline = now - timedelta(seconds=settings.PIPELINE_STUCK_SECONDS)
    waiting = (State.RECEIVED, State.PARSING)
    stuck = OrganizerUpload.objects.filter(state__in=waiting, updated_at__lt=deadline)
    sent = rejected = 0
    for upload in stuck.order_by("pk")[:1000]:
        if upload.attempts >= settings.PIPELINE_MAX_ATTEMPTS:
            given_up = Problem(
                None,
                f"it was not loaded after {upload.attempts + 1} attempts; nothing of it was "
                "stored: upload it again",
            )
            _reject(upload.pk, ServiceError(str(given_up), code="failed", problems=[given_up]))
            rejected += 1
            continue
        moved = OrganizerUpload.objects.filter(
            pk=upload.pk, state=upload.state, updated_at=upload.updated_at
        ).update(attempts=F("attempts") + 1, updated_at=now)
        if moved:
            jobs.enqueue_load_upload(upload.pk)
            sent += 1
    return sent, rejected
