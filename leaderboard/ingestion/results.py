"""What parsing an upload produces: the parsed run or reference, or the problems that refuse it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "ParsedFile",
    "ParsedPool",
    "ParsedPoolRun",
    "ParsedReference",
    "ParsedRun",
    "Problem",
    "UploadRejected",
    "human_bytes",
]


@dataclass(frozen=True)
class Problem:
    """A problem of an upload: at a line (1-based) or, with ``line=None``, of the whole file."""

    line: int | None
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"line": self.line, "message": self.message}

    def __str__(self) -> str:
        return self.message if self.line is None else f"line {self.line}: {self.message}"


class UploadRejected(ValueError):
    """The upload has problems; ``problems`` holds the first ones, ``total`` counts them all.

    ``code`` is ``"too_large"`` when the file (decompressed) is over the size limit,
    ``"wrong_format"`` when its first bytes show the wrong format (CSV, a header line, UTF-16:
    one problem, its hint), else ``"rejected"``.
    """

    def __init__(
        self, problems: list[Problem], total: int, *, code: str = "rejected", n_bytes: int = 0
    ):
        self.problems = list(problems)
        self.total = max(total, len(self.problems))
        self.code = code
        self.n_bytes = n_bytes
        super().__init__(self.summary)

    @property
    def summary(self) -> str:
        if self.code == "wrong_format" and self.problems:
            return str(self.problems[0])  # the hint says what to do
        noun = "problem" if self.total == 1 else "problems"
        first = f" (first: {self.problems[0]})" if self.problems else ""
        return f"rejected: {self.total:,} {noun}{first}"


@dataclass(frozen=True, eq=False, kw_only=True)
class ParsedFile:
    """What every parsed upload carries: its keys in line order and what was read."""

    keys: list[str]  # line i + 1 holds keys[i]
    format: str  # "tsv" or "jsonl"
    compressed: bool
    n_bytes: int  # raw bytes read (compressed size for gzip)
    sha256: str  # of the raw bytes

    def __len__(self) -> int:
        return len(self.keys)


@dataclass(frozen=True, eq=False, kw_only=True)
class ParsedRun(ParsedFile):
    """An open-world run: its predicted keys with scores and the payloads given."""

    scores: np.ndarray  # float64, one per key; 1.0 everywhere when the file has no scores
    payloads: dict[str, object]  # only the keys that had one


@dataclass(frozen=True, eq=False, kw_only=True)
class ParsedReference(ParsedFile):
    """A reference sample: true keys, their groups and the payloads given."""

    groups: list[str]  # "" where the line has none
    payloads: dict[str, object]


@dataclass(frozen=True, eq=False, kw_only=True)
class ParsedPool(ParsedFile):
    """A closed pool's keys and the payloads given."""

    payloads: dict[str, object]


@dataclass(frozen=True, eq=False, kw_only=True)
class ParsedPoolRun(ParsedFile):
    """A closed-pool run: per line a score and a 0/1 label."""

    scores: np.ndarray  # float64
    labels: np.ndarray  # uint8, 0 or 1


def human_bytes(n: float) -> str:
    """``1536`` -> ``"1.5 KiB"``; ``512 * 2**20`` -> ``"512 MiB"``."""
    if n < 1024:
        return f"{int(n):,} bytes"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        n /= 1024
        if n < 1024 or unit == "TiB":
            text = f"{n:,.1f}"
            return f"{text.removesuffix('.0')} {unit}"
    raise AssertionError("unreachable")
