"""The raw bytes of an upload: counted and hashed as read; gzip, archives and format detection."""

from __future__ import annotations

import hashlib
import re
from typing import IO

READ_SIZE = 1024 * 1024  # also the parser's block size: it reads it from here

_BOM = b"\xef\xbb\xbf"
_GZIP_MAGIC = b"\x1f\x8b"
_ARCHIVES = {
    b"PK\x03\x04": "a zip archive",
    b"BZh": "bzip2 data",  # with a block header after the level digit (see _archive)
    b"\xfd7zXZ\x00": "xz data",
    b"7z\xbc\xaf\x27\x1c": "a 7z archive",
    b"\x28\xb5\x2f\xfd": "zstd data",
}
_BZIP2_RE = re.compile(rb"BZh[1-9]1AY&SY")
_EXTENSIONS = {
    ".tsv": "tsv",
    ".txt": "tsv",
    ".jsonl": "jsonl",
    ".json": "jsonl",
    ".ndjson": "jsonl",
}


class _RawReader:
    """The upload as received: counts and hashes every byte read (``n_bytes``, ``sha256``)."""

    def __init__(self, stream: IO[bytes]):
        self._stream = stream
        self._sha = hashlib.sha256()
        self._pending = b""
        self.n_bytes = 0

    def _read_raw(self, size: int) -> bytes:
        data = self._stream.read(size)
        if isinstance(data, str):
            raise TypeError("uploads must be read as bytes (open the file in binary mode)")
        if data:
            self._sha.update(data)
            self.n_bytes += len(data)
        return data or b""

    def head(self, size: int = 10) -> bytes:
        """The first ``size`` bytes (or fewer at EOF), kept for the next ``read``."""
        while len(self._pending) < size:
            data = self._read_raw(READ_SIZE)
            if not data:
                break
            self._pending += data
        return self._pending[:size]

    def read(self, size: int = -1) -> bytes:
        if self._pending:
            data = self._pending
            if 0 <= size < len(data):
                data, self._pending = data[:size], data[size:]
            else:
                self._pending = b""
            return data
        return self._read_raw(size if size >= 0 else READ_SIZE)

    def drain(self) -> None:
        """Read what is left (so ``sha256`` covers the whole upload)."""
        self._pending = b""
        while self._read_raw(READ_SIZE):
            pass

    def hexdigest(self) -> str:
        return self._sha.hexdigest()


def _archive(head: bytes) -> str | None:
    for magic, what in _ARCHIVES.items():
        if head.startswith(magic) and (magic != b"BZh" or _BZIP2_RE.match(head)):
            return what
    return None


def _looks_like_json(text: bytes) -> bool:
    """Whether the first line of ``text`` looks like a JSON object with a key."""
    first = text.split(b"\n", 1)[0].rstrip()
    return first.startswith(b"{") and first.endswith(b"}") and b'"key"' in first


def _format_from_name(file_name: str) -> str | None:
    name = file_name.lower().strip()
    name = name.removesuffix(".gz").removesuffix(".gzip")
    dot = name.rfind(".")
    return _EXTENSIONS.get(name[dot:]) if dot >= 0 else None
