"""Copying an upload into Django's default storage in one pass, hashed and size-checked as it
streams (received run files, organizers' uploads, a task's data files)."""

from __future__ import annotations

from typing import IO, cast

from django.core.files import File
from django.core.files.storage import default_storage

from ..ingestion import READ_SIZE, Receiver


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
) -> tuple[str, Receiver]:
    """Copy ``upload`` to storage as ``name`` through a :class:`Receiver` (``max_bytes``;
    ``inflate``: whether gzip data counts decompressed; ``kind`` and ``file_name``: the layout
    its head is sniffed for; ``max_lines``, ``max_line_bytes``: the text's caps, if any); return
    the stored name and the receiver (size, SHA-256, lines). Over a limit, or in the wrong
    format, it raises ``UploadRejected`` and nothing stays stored."""
    receiver = Receiver(
        upload,
        max_bytes=max_bytes,
        inflate=inflate,
        kind=kind,
        file_name=file_name,
        max_lines=max_lines,
        max_line_bytes=max_line_bytes,
    )
    try:
        # A Receiver is file-like as far as storage backends read one.
        stored = default_storage.save(name, _ReceivedFile(cast(IO[bytes], receiver), name=name))
        receiver.finish()
    except BaseException:
        default_storage.delete(name)  # the part written before the limit (if any)
        raise
    return stored, receiver
