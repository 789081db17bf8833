"""The line parser: reads an upload in blocks of whole lines, validates them, collects problems.

Speed: TSV blocks take a fast path (whole-block decoding, numpy scans of the bytes for control
characters and the tab/newline layout, C-level splitting and float conversion) that accepts a block
only when every line in it is valid; any doubt sends the block through the careful per-line path,
which is the one that words the problems. Both accept exactly the same lines. Duplicate keys are
found at the end with one dictionary pass.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Callable
from itertools import chain
from typing import IO, Any, cast

import numpy as np

from . import reading
from .fields import (
    _MISSING,
    _SUSPECT_RE,
    MAX_KEY_LENGTH,
    _Bad,
    _check_key,
    _Groups,
    _Json,
    _json_type,
    _Keys,
    _payload_problem,
    _PoolOutputs,
    _Scores,
    _shown,
)
from .reading import _BOM, _GZIP_MAGIC, _archive, _format_from_name, _looks_like_json, _RawReader
from .receiving import too_large_message
from .results import Problem, UploadRejected, human_bytes
from .screening import glued_value_hint
from .sniffing import SNIFF_BYTES, sniff_head

MAX_LINE_BYTES = 4 * 1024 * 1024  # a longer line (a JSON payload gone wrong) is skipped, reported
_FAST_PATH = True  # tests switch it off to check that both paths agree


def _printable(name: str, limit: int = 40) -> str:
    """A JSON field name for a message: shortened, lone surrogates as ``\\udXXX`` escapes."""
    name = name if len(name) <= limit else name[:limit] + "..."
    return name.encode("utf-8", "backslashreplace").decode("utf-8")


class _Parser:
    """One upload: reads blocks of whole lines, validates them, collects records and problems."""

    def __init__(
        self,
        stream: IO[bytes],
        kind: _Scores | _Groups | _Keys | _PoolOutputs,
        *,
        file_name: str,
        max_bytes: int,
        max_records: int,
        max_problems: int,
        progress: Callable[[int, int], None] | None = None,
    ):
        self.raw = _RawReader(stream)
        self.progress = progress
        self.kind = kind
        self.max_bytes = max_bytes
        self.max_records = max_records
        self.max_problems = max_problems
        self.file_name = file_name
        self.format = _format_from_name(file_name)
        self._named_tsv = self.format == "tsv"
        self.compressed = False
        self.problems: list[Problem] = []
        self.total = 0
        self.code = "rejected"
        self.stopped = False
        self.keys: list[str] = []
        self.value_chunks: list = []  # per block, aligned with keys
        self.payloads: dict[str, object] = {}
        self._line_chunks: list = []  # line numbers of the keys (ranges and lists)
        self._has_value: bool | None = None  # whether lines carry the value (all-or-none)
        self._mode_line = 0
        self._n_lines = 0  # non-blank lines seen
        self._blank: list[int] = []  # blank lines that are interior unless the file ends
        self._at_start = True

    # -- problems
    def problem(self, line: int | None, message: str) -> None:
        self.total += 1
        if len(self.problems) < self.max_problems:
            self.problems.append(Problem(line, message))

    def stop(self, message: str, code: str = "rejected", line: int | None = None) -> None:
        """A problem of the whole file (listed first, whatever the cap); stop reading."""
        self.total += 1
        self.problems.insert(0, Problem(line, message))
        self.stopped = True
        if code != "rejected":
            self.code = code

    def _flush_blanks(self) -> None:
        for line in self._blank:
            self.problem(line, "blank line (only the end of the file may have blank lines)")
        self._blank.clear()

    # -- the stream
    def parse(self) -> None:
        n = 0
        head = self.raw.head()
        self.compressed = head.startswith(_GZIP_MAGIC)
        archive = _archive(head)
        if archive:
            self.stop(
                f"the file is {archive}; upload plain text (.tsv or .jsonl), optionally "
                "gzipped (.gz)"
            )
        if not self.stopped and self.compressed:
            try:
                # GzipFile only reads its file object forward here (never seeks it).
                raw = cast(IO[bytes], self.raw)
                with gzip.GzipFile(fileobj=raw, mode="rb") as source:
                    n = self._read(source)
            except EOFError:
                self.stop(
                    "the gzip data is truncated (the file ends before the end of the "
                    "compressed stream)"
                )
            except (OSError, zlib.error) as exc:
                self.stop(f"the gzip data is corrupt ({exc})")
        elif not self.stopped:
            n = self._read(self.raw)
        self._find_duplicates()
        if not self.stopped:
            self.raw.drain()
            if n == 0:
                self.stop("the file is empty")
            elif not self.keys and not self.total:
                self.stop(f"the file has no {self.kind.noun}s (only blank lines)")
        if self.total:
            raise UploadRejected(
                self.problems[: self.max_problems],
                self.total,
                code=self.code,
                n_bytes=self.raw.n_bytes,
            )

    def _sniffed_head(self, source) -> bytes:
        """The first :data:`SNIFF_BYTES` of ``source`` (fewer at its end), read and sniffed: a
        file in the wrong format stops here with the hint (``wrong_format``)."""
        head = b""
        while len(head) < SNIFF_BYTES:
            data = source.read(SNIFF_BYTES - len(head))
            if not data:
                break
            head += data
        problem = sniff_head(
            head, kind=self.kind.name, file_name=self.file_name, complete=len(head) < SNIFF_BYTES
        )
        if problem is not None:
            self.stop(problem.message, code="wrong_format", line=problem.line)
        return head

    def _read(self, source) -> int:
        """Feed ``source`` to :meth:`_block` in blocks of whole lines; return the bytes read."""
        total = 0
        tail = b""
        line, offset = 1, 0  # where ``tail`` (the next block) starts
        skipping = False  # inside a line longer than MAX_LINE_BYTES
        head = self._sniffed_head(source)
        while not self.stopped:
            if head:  # blocks of the same size as the rest
                chunk, head = head[: reading.READ_SIZE], head[reading.READ_SIZE :]
            else:
                chunk = source.read(reading.READ_SIZE)
            if not chunk:
                break
            total += len(chunk)
            if total > self.max_bytes:
                self.stop(
                    too_large_message(self.max_bytes, compressed=self.compressed), code="too_large"
                )
                break
            if skipping:
                newline = chunk.find(b"\n")
                if newline < 0:
                    offset += len(chunk)
                    continue
                skipping = False
                offset += newline + 1
                line += 1
                chunk = chunk[newline + 1 :]
            data = tail + chunk if tail else chunk
            cut = data.rfind(b"\n") + 1
            if cut:
                self._block(data[:cut], line, offset)
                line += data.count(b"\n", 0, cut)
                offset += cut
                tail = data[cut:]
            else:
                tail = data
            if len(tail) > MAX_LINE_BYTES:
                self._flush_blanks()
                self.problem(line, f"the line is longer than {human_bytes(MAX_LINE_BYTES)}")
                self._n_lines += 1
                offset += len(tail)
                tail, skipping = b"", True
            if self.progress is not None:
                self.progress(self.raw.n_bytes, line - 1)
        if tail and not self.stopped and not skipping:
            self._block(tail + b"\n", line, offset)
        return total

    # -- blocks of whole lines
    def _block(self, block: bytes, line: int, offset: int) -> None:
        if self._at_start:
            self._at_start = False
            if block.startswith(_BOM):
                block, offset = block[len(_BOM) :], offset + len(_BOM)
        if self._named_tsv or self.format is None:
            stripped = block.lstrip()
            if stripped:
                if self.format is None:
                    self.format = "jsonl" if stripped.startswith(b"{") else "tsv"
                elif _looks_like_json(stripped):
                    at = line + block.count(b"\n", 0, len(block) - len(stripped))
                    self.problem(
                        at,
                        "this looks like JSON, but the file name says TSV: name "
                        "a JSON Lines file .jsonl",
                    )
                self._named_tsv = False
        if not (_FAST_PATH and self.format == "tsv" and self._fast_tsv(block, line)):
            self._slow(block, line, offset)

    def _fast_tsv(self, block: bytes, line: int) -> bool:  # noqa: C901 (one pass, the hot loop)
        """Take a TSV block at once if every line is valid (else the slow path words why)."""
        if b"\r" in block:
            block = block.replace(b"\r\n", b"\n")
        try:
            text = block.decode("utf-8")
        except UnicodeDecodeError:
            return False
        raw = np.frombuffer(block, dtype=np.uint8)
        newlines = np.flatnonzero(raw == 10)
        tabs = np.flatnonzero(raw == 9)
        n = newlines.size
        if block.isascii():  # no C1 controls nor U+FEFF: count the C0 ones and DEL
            controls = np.count_nonzero(raw < 32) + np.count_nonzero(raw == 127)
            if controls != n + tabs.size:
                return False
        elif _SUSPECT_RE.search(text):
            return False
        if self._n_lines + n > self.max_records:
            return False
        starts = np.concatenate(([0], newlines[:-1] + 1))
        if (newlines - starts).max() > MAX_LINE_BYTES:
            return False
        width = len(self.kind.fields)  # value columns after the key
        columns: list[list[str]] = []
        if tabs.size == 0:  # key only
            has_value = False
            keys = text.split("\n")
            keys.pop()
            key_bytes = newlines - starts
        elif width and tabs.size == width * n:
            # Exactly ``width`` tabs on every line: each line's first tab after the previous
            # newline, its last before its own.
            rows = tabs.reshape(n, width)
            if not ((rows[:, -1] < newlines).all() and (rows[1:, 0] > newlines[:-1]).all()):
                return False
            has_value = True
            parts = text.replace("\t", "\n").split("\n")
            keys = parts[0 : -1 : width + 1]
            columns = [parts[j :: width + 1] for j in range(1, width + 1)]
            key_bytes = rows[:, 0] - starts
        else:
            return False
        if self.kind.all_or_none and self._has_value not in (None, has_value):
            return False
        if self.kind.required and not has_value:
            return False
        # A key has at most as many characters as bytes: count characters only if needed.
        if key_bytes.min() == 0 or any(map(str.isspace, keys)):
            return False
        if key_bytes.max() > MAX_KEY_LENGTH and max(map(len, keys)) > MAX_KEY_LENGTH:
            return False
        values = self.kind.fast(*columns) if has_value else [self.kind.missing] * n
        if values is None:
            return False
        # Every line is valid: take them (duplicate keys are looked for at the end).
        self._flush_blanks()
        if self._has_value is None:
            self._has_value, self._mode_line = has_value, line
        self.keys.extend(keys)
        self.value_chunks.append(values)
        self._line_chunks.append(range(line, line + n))
        self._n_lines += n
        return True

    def _slow(self, block: bytes, line: int, offset: int) -> None:
        values: list = []
        lines: list[int] = []
        for raw in block.split(b"\n")[:-1]:
            if self._line(raw, line, offset, values):
                lines.append(line)
            if self.stopped:
                break
            line += 1
            offset += len(raw) + 1
        self.value_chunks.append(values)
        self._line_chunks.append(lines)

    def _find_duplicates(self) -> None:
        """Report every repeated key (at the end: one dictionary pass when there are none)."""
        n = len(self.keys)
        first = dict(zip(reversed(self.keys), range(n - 1, -1, -1), strict=True))
        if len(first) == n:
            return
        lines = np.fromiter(chain.from_iterable(self._line_chunks), dtype=np.int64, count=n)
        found = [
            Problem(
                int(lines[pos]),
                f"duplicate key {_shown(key, 60)} (first on line {lines[first[key]]})",
            )
            for pos, key in enumerate(self.keys)
            if first[key] != pos
        ]
        # Both lists are in line order (file problems first), and the kept problems are the
        # first ones of theirs.
        self.total += len(found)
        merged = sorted(self.problems + found, key=lambda p: (p.line is not None, p.line or 0))
        self.problems = merged[: self.max_problems]

    # -- one line
    def _line(self, raw: bytes, line: int, offset: int, values: list) -> bool:
        """Validate one line; return whether it was taken."""
        if len(raw) - raw.endswith(b"\r") > MAX_LINE_BYTES:
            # Also when the whole line fits in one block: the limit must not depend on where
            # the line falls in the file.
            self._flush_blanks()
            self._n_lines += 1
            self.problem(line, f"the line is longer than {human_bytes(MAX_LINE_BYTES)}")
            return False
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self._flush_blanks()
            self._n_lines += 1
            self.problem(
                line,
                f"not valid UTF-8: byte 0x{raw[exc.start]:02X} at byte "
                f"{exc.start + 1} of the line (offset {offset + exc.start:,} "
                "of the file)",
            )
            return False
        if text.endswith("\r"):
            text = text[:-1]
        if not text.strip(" \t"):
            # Only spaces and tabs make a blank line: other "whitespace" (U+001C..U+001F, U+0085,
            # U+3000, ...) is reported as a key, never silently skipped at the end of the file.
            self._blank.append(line)
            return False
        self._flush_blanks()
        self._n_lines += 1
        if self._n_lines > self.max_records:
            self.stop(
                f"the file has more than {self.max_records:,} {self.kind.noun}s (the "
                f"limit); reading stopped at line {line:,}"
            )
            return False
        try:
            key, value, payload = self._tsv(text) if self.format == "tsv" else self._jsonl(text)
            value = self._check(key, value, line)
        except _Bad as exc:
            self.problem(line, str(exc))
            return False
        self.keys.append(key)
        values.append(value)
        if payload is not None:
            self.payloads.setdefault(key, payload)
        return True

    def _tsv(self, text: str) -> tuple[str, object, None]:
        parts = text.split("\t")
        width = len(self.kind.fields)
        if len(parts) > 1 + width:
            raise _Bad(f"{len(parts)} tab-separated columns; expected {self.kind.layout}")
        if len(parts) == 1:
            return parts[0], _MISSING, None
        # One value column is its text; several are a tuple of texts (checked by the kind).
        return parts[0], (parts[1] if width == 1 else tuple(parts[1:])), None

    def _jsonl(self, text: str) -> tuple[str, object, object]:
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            hint = (
                " (give one JSON object per line, not an array)"
                if text.lstrip().startswith("[")
                else ""
            )
            raise _Bad(f"invalid JSON: {exc.msg} at column {exc.colno}{hint}") from None
        except (ValueError, RecursionError) as exc:  # huge integers, deep nesting
            raise _Bad(f"invalid JSON: {exc}") from None
        if not isinstance(obj, dict):
            raise _Bad(f"expected a JSON object {{...}}, got {_json_type(obj)}")
        allowed = ("key", *self.kind.fields, *(("payload",) if self.kind.payloads else ()))
        unknown = sorted(set(obj) - set(allowed))
        if unknown:
            fields = ", ".join(f'"{_printable(name)}"' for name in unknown)
            noun = "field" if len(unknown) == 1 else "fields"
            raise _Bad(f"unknown {noun} {fields} (allowed: {', '.join(allowed)})")
        if "key" not in obj:
            raise _Bad('missing "key"')
        key = obj["key"]
        if not isinstance(key, str):
            raise _Bad(f'"key" must be a string, not {_json_type(key)}')
        names = self.kind.fields
        value: object
        if len(names) == 1:
            value = obj.get(names[0], _MISSING)
        else:
            found = tuple(obj.get(name, _MISSING) for name in names)
            value = _MISSING if all(v is _MISSING for v in found) else found
        payload = obj.get("payload")
        if payload is not None:
            problem = _payload_problem(payload)
            if problem:
                raise _Bad(problem)
        return key, (value if value is _MISSING else _Json(value)), payload

    def _check(self, key: str, value: object, line: int) -> object:
        """Validate a record's key and value; return the value (converted)."""
        _check_key(key)
        has_value = value is not _MISSING
        if self.kind.all_or_none:
            if self._has_value is None:
                self._has_value, self._mode_line = has_value, line
            elif has_value != self._has_value:
                field, first = self.kind.field, self._mode_line
                if has_value:
                    raise _Bad(
                        f"unexpected {field}: line {first} has none, so no line may have "
                        f"one ({field}s are all-or-none)"
                    )
                raise _Bad(
                    f"{field} missing: line {first} has one, so every line needs one "
                    f"({field}s are all-or-none){glued_value_hint(key)}"
                )
        if not has_value:
            if self.kind.required:
                raise _Bad(
                    f"{self.kind.field} missing: expected {self.kind.layout}"
                    + glued_value_hint(key)
                )
            return self.kind.missing
        if isinstance(value, _Json):
            return self.kind.from_json(value.value)
        # Otherwise TSV text: a string, or a tuple of strings for several value columns.
        return self.kind.from_text(cast(Any, value))
