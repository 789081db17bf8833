"""Copying an upload into Django's default storage in one pass, hashed and size-checked as it
streams (received run files, a task's data files)."""

from __future__ import annotations

import contextlib
import logging
from typing import IO, cast

from django.core.files import File
from django.core.files.storage import default_storage

from ..errors import StorageUnavailable
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
) -> tuple[str, Receiver]:
    """Copy ``upload`` to storage as ``name`` through a :class:`Receiver` (``max_bytes``;
    ``inflate``: whether gzip data counts decompressed; ``kind`` and ``file_name``: the layout
    its head is sniffed for); return the stored name and the receiver (size, SHA-256). Over the
    limit, or in the wrong format, it raises ``UploadRejected`` and nothing stays stored; when
    the storage fails (``OSError``: a full disk, an unreachable object store), it raises
    :class:`StorageUnavailable`."""
    receiver = Receiver(
        upload, max_bytes=max_bytes, inflate=inflate, kind=kind, file_name=file_name
    )
    try:
        # A Receiver is file-like as far as storage backends read one.
        stored = default_storage.save(name, _ReceivedFile(cast(IO[bytes], receiver), name=name))
        receiver.finish()
    except OSError as exc:
        log.error("storing an upload as %r failed: %s", name, exc)
        _forget(name)
        raise StorageUnavailable() from exc
    except BaseException:
        _forget(name)
        raise
    return stored, receiver


def _forget(name: str) -> None:
    """Delete the part of ``name`` written before a refusal or a failure, if any (an
    unreachable storage has nothing more to delete that this could reach)."""
    with contextlib.suppress(OSError):
        default_storage.delete(name)
