"""Reading a data set's files: lines decoded and checked, problems collected per file.

Shared by the open-world loader (:mod:`.datasets`) and the closed-pool loader
(:mod:`.closed_pool_data`): both report every problem of a file with its line number and raise
them together as one :class:`DatasetError`, so that a user can fix everything in one go.
"""

from __future__ import annotations

import os
from typing import NamedTuple, cast

__all__ = [
    "DatasetError",
    "Problem",
    "ProblemCollector",
    "plural",
    "read_bytes",
    "show_key",
    "split_lines",
]

_MAX_KEY_IN_MESSAGE = 80


class Problem(NamedTuple):
    """One problem found in a data set file.

    Attributes
    ----------
    file : str
        File name relative to the data set directory, e.g. ``"systems/a.tsv"``.
    line : int or None
        1-based line number, or None when the problem concerns the whole file.
    message : str
        Human-readable description, without file name and line number.
    """

    file: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.message}"


class DatasetError(ValueError):
    """A malformed data set.

    The message (``str(error)``) names the offending file and, where there is one,
    the 1-based line number.

    Parameters
    ----------
    message : str
        Complete human-readable message.
    path : str, optional
        File system path of the (first) offending file or directory.
    line : int, optional
        1-based line number of the (first) problem in ``path``.
    problems : sequence of Problem, optional
        All problems listed in the message (possibly capped per file).

    Attributes
    ----------
    path : str or None
    line : int or None
    problems : tuple of Problem
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        problems: tuple[Problem, ...] | list[Problem] = (),
    ) -> None:
        super().__init__(message)
        self.path = path
        self.line = line
        self.problems = tuple(problems)


class ProblemCollector:
    """Collects problems per file; lists at most ``limit`` per file."""

    def __init__(self, root: str, limit: int) -> None:
        self.root = root
        self.limit = limit
        self.shown: list[Problem] = []
        self.counts: dict[str, int] = {}

    def add(self, file: str, line: int | None, message: str) -> None:
        count = self.counts.get(file, 0)
        self.counts[file] = count + 1
        if count < self.limit:
            self.shown.append(Problem(file, line, message))

    def first_time(self, file: str, line: int, key: str, seen: dict[str, int]) -> bool:
        """Whether ``key`` first stands on ``line`` of ``file`` (``seen`` maps each key to its
        first line); a repeated key is a problem of its line."""
        first = seen.setdefault(key, line)
        if first != line:
            self.add(file, line, f"duplicate key {show_key(key)} (first on line {first})")
            return False
        return True

    def usable_key(self, file: str, line: int, key: str, seen: dict[str, int]) -> bool:
        """Whether ``key`` is neither empty (nor white space) nor repeated (:meth:`first_time`)."""
        if not key or key.isspace():
            self.add(file, line, "empty key")
            return False
        return self.first_time(file, line, key, seen)

    def count(self, file: str) -> int:
        return self.counts.get(file, 0)

    def raise_if_any(self, name: str) -> None:
        if not self.counts:
            return
        total = sum(self.counts.values())
        n_files = len(self.counts)
        lines = [
            f"invalid data set {name!r} ({self.root}): "
            f"{plural(total, 'problem')} in {plural(n_files, 'file')}"
        ]
        for file, count in self.counts.items():
            lines.extend(f"  {p}" for p in self.shown if p.file == file)
            if count > self.limit:
                lines.append(
                    f"  {file}: ... and {count - self.limit} more "
                    f"({plural(count, 'problem')} in this file)"
                )
        first = self.shown[0]
        raise DatasetError(
            "\n".join(lines),
            path=os.path.join(self.root, first.file),
            line=first.line,
            problems=self.shown,
        )


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def show_key(key: str) -> str:
    """Quote a key for a message, shortened if long."""
    if len(key) > _MAX_KEY_IN_MESSAGE:
        key = key[: _MAX_KEY_IN_MESSAGE - 3] + "..."
    return repr(key)


def read_bytes(path: str, rel: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise DatasetError(f"{rel}: cannot read file: {e}", path=path) from e


def split_lines(data: bytes) -> tuple[list[str | None], dict[int, str]]:
    """Decode ``data`` and split it into lines.

    Returns
    -------
    lines : list of str or None
        One entry per line (index ``i`` is line ``i + 1``): the line without its
        line ending, or None for a bad line (invalid UTF-8, blank, stray carriage
        return).
    bad : dict
        ``{line number: problem}`` for the None entries; the caller reports them, so
        that the problems of a file are listed in line order.
    """
    lines: list[str | None]
    bad: dict[int, str] = {}
    try:
        lines = cast("list[str | None]", data.decode("utf-8").split("\n"))
    except UnicodeDecodeError:
        # Slow path: decode line by line to report every bad line. A newline byte
        # never occurs inside a multi-byte UTF-8 sequence, so splitting first is safe.
        lines = []
        for lineno, raw in enumerate(data.split(b"\n"), 1):
            try:
                lines.append(raw.decode("utf-8"))
            except UnicodeDecodeError as e:
                bad[lineno] = (
                    f"invalid UTF-8: byte 0x{raw[e.start]:02x} at byte {e.start + 1} of the line"
                )
                lines.append(None)
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    first = lines[0] if lines else None
    if first is not None and first.startswith("\ufeff"):
        lines[0] = first[1:]
    has_cr = b"\r" in data
    for i, line in enumerate(lines):
        if line is None:
            continue
        if has_cr and "\r" in line:
            if line.endswith("\r"):
                line = line[:-1]
                lines[i] = line
            if "\r" in line:
                bad[i + 1] = "carriage return (\\r) inside the line"
                lines[i] = None
                continue
        if not line or line.isspace():
            bad[i + 1] = "blank line"
            lines[i] = None
    return lines, bad
