"""Receiving an upload: read it through once, hashing it and counting its bytes, decompressed too.

The web request only copies a run file to storage through a :class:`Receiver`; a worker parses it
later. The receiver enforces the size limits as the bytes pass: the raw size, and for gzip data
the decompressed size (inflated in bounded steps, so a zip bomb costs at most ``max_bytes`` of
counting and never that much memory). Given the upload's ``kind``, it also keeps the first
:data:`~.sniffing.SNIFF_BYTES` (decompressed) and refuses a file whose head shows the wrong
format (:func:`~.sniffing.sniff_head`: CSV, a header line, UTF-16...) as soon as they are in.
Corrupt gzip data is not judged here: counting stops and the parser words the problem later.
It also hashes the content as the parser reads it (:class:`ContentHash`), so that the same run
sent gzipped, or with other line ends, is found a duplicate.
"""

from __future__ import annotations

import hashlib
import zlib
from typing import IO

import numpy as np

from .reading import _GZIP_MAGIC, READ_SIZE
from .results import Problem, UploadRejected, human_bytes
from .sniffing import SNIFF_BYTES, sniff_head

_NEWLINE = 10


def too_large_message(max_bytes: int, *, compressed: bool) -> str:
    """The problem of a file over the limit (the parser says the same)."""
    where = " once decompressed" if compressed else ""
    return f"the file is larger than the limit of {human_bytes(max_bytes)}{where}; reading stopped"


class ContentHash:
    """SHA-256 of a text file's content as the parser reads it: decompressed (the caller feeds
    inflated bytes), line ends CRLF read as LF, and the last line's end added if it has none
    (the parser takes ``a\r\n``, ``a\n`` and a last ``a`` as the same line)."""

    def __init__(self) -> None:
        self._sha = hashlib.sha256()
        self._cr = False  # a CR at the end of the last chunk: its LF may start the next one
        self._last = b""

    def update(self, data: bytes) -> None:
        if not data:
            return
        if self._cr:
            data, self._cr = b"\r" + data, False
        if data.endswith(b"\r"):
            data, self._cr = data[:-1], True
        data = data.replace(b"\r\n", b"\n")
        if data:
            self._sha.update(data)
            self._last = data[-1:]

    def hexdigest(self) -> str:
        sha = self._sha.copy()
        if self._cr or self._last not in (b"", b"\n"):  # a last CR ends its line as LF does
            sha.update(b"\n")
        return sha.hexdigest()


class Receiver:
    """A file-like reader over ``stream`` that hashes and counts what passes through it.

    ``read`` raises :class:`UploadRejected` (code ``too_large``) once the file, raw or
    decompressed, passes ``max_bytes`` (with ``inflate`` false, a file kept as it is such as a
    task's data file, only its raw size counts), and with ``kind`` (one of
    :data:`~.sniffing.KINDS`; ``file_name`` tells JSON Lines) ``wrong_format`` once its head
    shows the wrong format (:meth:`finish` judges a shorter file). With ``max_lines`` or
    ``max_line_bytes`` (an organizer's upload, a run), ``too_large`` once the (decompressed) text
    has more lines (``lines_why`` says why that many, in the refusal), or a longer line, than
    that. After :meth:`finish`: ``n_bytes``, ``sha256`` (of the bytes as received),
    ``content_sha256`` (of the content: :class:`ContentHash`), ``compressed``, ``n_lines``.
    """

    def __init__(
        self,
        stream: IO[bytes],
        *,
        max_bytes: int,
        kind: str | None = None,
        file_name: str = "",
        inflate: bool = True,
        max_lines: int | None = None,
        max_line_bytes: int | None = None,
        lines_why: str = "",
    ):
        self._stream = stream
        self.max_lines, self.max_line_bytes = max_lines, max_line_bytes
        self.lines_why = lines_why  # what the line limit is, for the refusal
        self.n_lines = 0  # complete lines so far (newlines), then with a last unended one
        self._line_bytes = 0  # bytes of the line not ended yet
        self.max_bytes = max_bytes
        self.kind, self.file_name = kind, file_name
        self._sniffed = b""  # the first SNIFF_BYTES (decompressed), until judged
        self._judged = kind is None
        self._sha = hashlib.sha256()
        self._content = ContentHash()
        self.n_bytes = 0
        self.n_decompressed = 0
        # Known from the first bytes (when inflating: gzip data is counted decompressed).
        self.compressed: bool | None = None if inflate else False
        self._head = b""
        self._inflater: zlib._Decompress | None = None
        self._counting = True  # False once the gzip data turned out corrupt

    # File protocol, as far as storage backends use it.
    def read(self, size: int = -1) -> bytes:
        data = self._stream.read(size if size and size > 0 else READ_SIZE)
        if isinstance(data, str):
            raise TypeError("uploads must be read as bytes (open the file in binary mode)")
        if not data:
            return b""
        self._sha.update(data)
        self.n_bytes += len(data)
        if self.compressed is None:  # counting starts once the first bytes tell the kind
            self._head += data
            if len(self._head) >= len(_GZIP_MAGIC):
                self._begin()
            return data
        self._count(data)
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        if offset != 0 or whence != 0 or self.n_bytes:
            raise OSError("a received upload can only be read once, from its start")
        return 0

    def seekable(self) -> bool:
        return False

    @property
    def closed(self) -> bool:
        # Asked before ``seekable`` by Django's File proxies (the object-store backend's).
        return bool(getattr(self._stream, "closed", False))

    @property
    def sha256(self) -> str:
        return self._sha.hexdigest()

    @property
    def content_sha256(self) -> str:
        """The content's hash; the raw bytes' for gzip data that could not all be inflated
        (corrupt or truncated: the parser refuses it)."""
        if self.compressed and not (self._counting and self._inflater is None):
            return self.sha256
        return self._content.hexdigest()

    def _too_large(self) -> UploadRejected:
        message = too_large_message(self.max_bytes, compressed=bool(self.compressed))
        return UploadRejected([Problem(None, message)], 1, code="too_large", n_bytes=self.n_bytes)

    def _count(self, data: bytes) -> None:
        if not self.compressed:
            if self.n_bytes > self.max_bytes:
                raise self._too_large()
            self._content.update(data)
            self._sniff(data)
            self._count_lines(data)
            return
        while data and self._counting:
            if self._inflater is None:  # a gzip member starts (a file may hold several)
                self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            try:
                out = self._inflater.decompress(data, READ_SIZE)
            except zlib.error:
                self._counting = False
                return
            self.n_decompressed += len(out)
            if self.n_decompressed > self.max_bytes:
                raise self._too_large()
            self._content.update(out)
            self._sniff(out)
            self._count_lines(out)
            if self._inflater.eof:
                data, self._inflater = self._inflater.unused_data, None
            else:
                data = self._inflater.unconsumed_tail

    def _count_lines(self, data: bytes) -> None:
        """Count lines and measure the longest, in one NumPy scan of the block."""
        if (self.max_lines is None and self.max_line_bytes is None) or not data:
            return
        ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == _NEWLINE)
        if self.max_line_bytes is not None:
            # Bytes of each line ended in this block (without its newline), then the rest.
            lengths = np.diff(ends, prepend=-1) - 1
            if lengths.size:
                lengths[0] += self._line_bytes
                self._line_bytes = len(data) - int(ends[-1]) - 1
            else:
                self._line_bytes += len(data)
            over = np.flatnonzero(lengths > self.max_line_bytes)
            if over.size:
                self._line_too_long(self.n_lines + int(over[0]) + 1)
            if self._line_bytes > self.max_line_bytes:
                self._line_too_long(self.n_lines + ends.size + 1)
        else:
            tail = len(data) - int(ends[-1]) - 1 if ends.size else self._line_bytes + len(data)
            self._line_bytes = tail
        self.n_lines += ends.size
        if self.max_lines is not None and self.n_lines > self.max_lines:
            self._too_many_lines()

    def _line_too_long(self, line: int) -> None:
        assert self.max_line_bytes is not None
        message = (
            f"is longer than the limit of {human_bytes(self.max_line_bytes)} for one line; "
            "reading stopped (is it one record per line?)"
        )
        raise UploadRejected([Problem(line, message)], 1, code="too_large", n_bytes=self.n_bytes)

    def _too_many_lines(self) -> None:
        message = (
            f"the file has more than the limit of {self.max_lines:,} lines{self.lines_why}; "
            "reading stopped"
        )
        raise UploadRejected([Problem(None, message)], 1, code="too_large", n_bytes=self.n_bytes)

    def _sniff(self, data: bytes, *, complete: bool = False) -> None:
        """Keep the head until it is :data:`SNIFF_BYTES` long (or the file ends), then judge it."""
        if self._judged:
            return
        self._sniffed += data[: SNIFF_BYTES - len(self._sniffed)]
        if len(self._sniffed) < SNIFF_BYTES and not complete:
            return
        self._judged = True
        assert self.kind is not None  # else judged from the start
        problem = sniff_head(
            self._sniffed,
            kind=self.kind,
            file_name=self.file_name,
            complete=complete and len(self._sniffed) < SNIFF_BYTES,
        )
        self._sniffed = b""
        if problem is not None:
            raise UploadRejected([problem], 1, code="wrong_format", n_bytes=self.n_bytes)

    def _begin(self) -> None:
        """The first bytes tell whether the file is gzip data: count (and sniff) from here."""
        self.compressed = self._head.startswith(_GZIP_MAGIC)
        head, self._head = self._head, b""
        self._count(head)

    def finish(self) -> None:
        """After the last read: a short file whose head was still held is counted now, and a
        file shorter than the sniffed head is judged (not corrupt or truncated gzip data: the
        parser words those)."""
        if self.compressed is None:
            self._begin()
        if self._counting and self._inflater is None:
            self._sniff(b"", complete=True)
        if self._line_bytes:  # a last line without its newline
            self._line_bytes = 0
            self.n_lines += 1
            if self.max_lines is not None and self.n_lines > self.max_lines:
                self._too_many_lines()
