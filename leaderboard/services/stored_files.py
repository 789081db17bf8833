"""Copying an upload into Django's default storage in one pass, hashed and size-checked as it
streams (received run files, organizers' uploads, a task's data files)."""

from __future__ import annotations

import logging
from typing import IO, cast

from django.core.files import File
from django.core.files.storage import default_storage
from django.db import transaction

from site_platform.errors import StorageUnavailable

from ..ingestion import READ_SIZE, Receiver

log = logging.getLogger(__name__)


class _ReceivedFile(File):  # type: ignore[type-arg]  # File is generic only in the stubs
    DEFAULT_CHUNK_SIZE = READ_SIZE


def store_upload(
    upload: IO[bytes],
    *,
    name: str,
    max_bytes: int,
    inflate: bool = True,
    kind: str | None = None,
    file_name: str = "",
    max_lines: int | None = None,
    max_line_bytes: int | None = None,
    lines_why: str = "",
) -> tuple[str, Receiver]:
    """Copy ``upload`` to storage as ``name`` through a :class:`Receiver` (``max_bytes``;
    ``inflate``: whether gzip data counts decompressed; ``kind`` and ``file_name``: the layout
    its head is sniffed for; ``max_lines``, ``max_line_bytes``: the text's caps, if any, and
    ``lines_why`` what the line cap is); return
    the stored name and the receiver (size, SHA-256, lines). Over a limit, or in the wrong
    format, it raises ``UploadRejected`` and nothing stays stored; when the storage fails
    (``OSError``: a full disk, an unreachable object store), it raises
    :class:`StorageUnavailable`."""
    receiver = Receiver(
        upload,
        max_bytes=max_bytes,
        inflate=inflate,
        kind=kind,
        file_name=file_name,
        max_lines=max_lines,
        max_line_bytes=max_line_bytes,
        lines_why=lines_why,
    )
    try:
        # A Receiver is file-like as far as storage backends read one.
        stored = default_storage.save(name, _ReceivedFile(cast(IO[bytes], receiver), name=name))
        receiver.finish()
    except OSError as exc:
        log.error("storing an upload as %r failed: %s", name, exc)
        forget_stored(name)
        raise StorageUnavailable() from exc
    except BaseException:
        forget_stored(name)  # the part written before the limit (if any)
        raise
    return stored, receiver


def forget_stored(name: str) -> None:
    """Delete the stored file ``name`` if it is there. A failing storage (an unreachable object
    store) is logged, never raised: what it leaves behind is garbage, while the caller's own
    outcome (a refusal being raised, a change already committed) must stand."""
    try:
        default_storage.delete(name)
    except OSError as exc:
        log.warning("the stored file %r could not be deleted and is left behind: %s", name, exc)


def forget_stored_on_commit(name: str) -> None:
    """:func:`forget_stored` once the current transaction commits (never if it rolls back). A
    failure there would otherwise stop the callbacks after it, such as the next job's enqueue."""
    transaction.on_commit(lambda: forget_stored(name))
