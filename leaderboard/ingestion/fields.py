"""What a line carries besides its key (a run's score, a reference's group), and the key rules."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

MAX_KEY_LENGTH = 512
MAX_GROUP_LENGTH = 200  # ReferenceItem.group

# Never allowed in a key or a group: C0/C1 controls, DEL, byte order marks, line separators, and
# lone surrogates (only a JSON escape such as "\ud800" makes one; no database can store it).
_FORBIDDEN_RE = re.compile(r"[\x00-\x1f\x7f-\x9f\ufeff\u2028\u2029\ud800-\udfff]")
# The same minus tab and newline: one search tells whether a decoded TSV block needs a closer look.
_SUSPECT_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ufeff\u2028\u2029\ud800-\udfff]")
# What a JSON payload's strings may not hold: NUL and lone surrogates (PostgreSQL's jsonb refuses
# both; no JSON response could carry a lone surrogate).
_UNSTORABLE_RE = re.compile(r"[\x00\ud800-\udfff]")
_MISSING = object()  # a line without a score / group


class _Bad(Exception):
    """A line's problem (the parser adds the line number)."""


def _shown(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return f"the string {_shown(value)}"
    return "an array" if isinstance(value, list) else "an object"


def _forbidden_problem(what: str, text: str) -> str | None:
    match = _FORBIDDEN_RE.search(text)
    if match is None:
        return None
    char = match.group()
    if "\ud800" <= char <= "\udfff":
        return (
            f"{what} contains a lone surrogate U+{ord(char):04X} at position "
            f"{match.start() + 1} (an invalid \\u escape)"
        )
    if char == "\ufeff":
        return (
            f"{what} contains a byte order mark (U+FEFF), allowed only at the very start of "
            "the file"
        )
    return (
        f"{what} contains the control character U+{ord(char):04X} at position {match.start() + 1}"
    )


def _payload_problem(payload: object) -> str | None:
    """Why ``payload`` (parsed JSON) cannot be stored, or ``None`` (a loop: payloads may nest
    as deep as the JSON parser allows)."""
    stack = [payload]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, float) and not math.isfinite(value):
            return (
                f'"payload" contains the number {value!r} (NaN, Infinity and numbers too '
                "large for a double are not JSON)"
            )
        elif isinstance(value, str):
            match = _UNSTORABLE_RE.search(value)
            if match:
                what = (
                    "a NUL character (\\u0000)"
                    if match.group() == "\x00"
                    else f"a lone surrogate (\\u{ord(match.group()):04x})"
                )
                return f'"payload" contains {what}, which cannot be stored'
    return None


def _check_text(what: str, text: str, max_length: int) -> None:
    """Raise :class:`_Bad` if ``text`` (a key, a group) is longer than ``max_length`` or holds a
    forbidden character."""
    if len(text) > max_length:
        raise _Bad(f"{what} is longer than {max_length} characters ({len(text):,})")
    problem = _forbidden_problem(what, text)
    if problem:
        raise _Bad(problem)


def _check_key(key: str) -> None:
    """Raise :class:`_Bad` if ``key`` is empty, too long or holds a forbidden character."""
    if not key or key.isspace():
        raise _Bad("empty key")
    _check_text("key", key, MAX_KEY_LENGTH)


class _Scores:
    """Runs: an optional score in [0, 1]; all lines have one or none do (then every score is 1)."""

    name = "run"  # the upload kind, as :func:`.sniffing.sniff_head` and the Receiver name it
    field = "score"
    fields: tuple[str, ...] = ("score",)
    layout = "key or key<TAB>score"
    noun = "prediction"
    all_or_none = True
    required = False
    payloads = True
    missing: object = 1.0

    def from_text(self, text: str) -> float:
        if not text.strip():
            raise _Bad("empty score")
        if not text.isascii() or "_" in text:  # float() would take "1_0" and non-ASCII digits
            raise _Bad(f"score {_shown(text)} is not a number")
        try:
            value = float(text)
        except ValueError:
            raise _Bad(f"score {_shown(text)} is not a number") from None
        return self._in_range(value, _shown(text))

    def from_json(self, value: object) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _Bad(f'"score" must be a number, not {_json_type(value)}')
        return self._in_range(value, str(value))

    @staticmethod
    def _in_range(value: float, shown: str) -> float:
        if isinstance(value, float) and math.isnan(value):
            raise _Bad(f"score {shown} is not a number (NaN)")
        if isinstance(value, float) and math.isinf(value):
            raise _Bad(f"score {shown} is infinite")
        if not 0 <= value <= 1:
            raise _Bad(f"score {shown} is outside [0, 1]")
        return float(value)

    def fast(self, texts: Sequence[str]) -> np.ndarray | None:
        """The scores of a block if every one is valid, else ``None``."""
        joined = "".join(texts)
        if "_" in joined or not joined.isascii():
            return None
        try:
            values = np.fromiter(map(float, texts), dtype=np.float64, count=len(texts))
        except ValueError:
            return None
        return values if ((values >= 0.0) & (values <= 1.0)).all() else None


class _Groups:
    """Reference samples: an optional group (source document), at most 200 characters."""

    name = "reference"
    field = "group"
    fields: tuple[str, ...] = ("group",)
    layout = "key or key<TAB>group"
    noun = "item"
    all_or_none = False
    required = False
    payloads = True
    missing: object = ""

    def from_text(self, text: str) -> str:
        _check_text("group", text, MAX_GROUP_LENGTH)
        return text

    def from_json(self, value: object) -> str:
        if not isinstance(value, str):
            raise _Bad(f'"group" must be a string, not {_json_type(value)}')
        return self.from_text(value)

    def fast(self, texts: Sequence[str]) -> list[str] | None:
        # Control characters were excluded by the block search; tabs cannot occur.
        return list(texts) if max(map(len, texts)) <= MAX_GROUP_LENGTH else None


class _Documents(_Groups):
    """Reference candidates: each item's document (group), required and not empty."""

    name = "candidates"
    field = "document"
    fields: tuple[str, ...] = ("document",)
    layout = "key<TAB>document"
    noun = "candidate"
    required = True

    def from_text(self, text: str) -> str:
        if not text.strip():
            raise _Bad(f"document missing: expected {self.layout}")
        return super().from_text(text)

    def fast(self, texts: Sequence[str]) -> list[str] | None:
        if not all(t.strip() for t in texts):
            return None  # the slow path names the line
        return super().fast(texts)


class _Keys:
    """Closed pools: the key alone (a payload only in JSON Lines)."""

    name = "pool"
    field = "key"
    fields: tuple[str, ...] = ()
    layout = "one key per line"
    noun = "item"
    all_or_none = False
    required = False
    payloads = True
    missing: object = None

    def from_text(self, text: object) -> None:  # noqa: ARG002 (a field's reader's signature)
        raise _Bad(f"expected {self.layout}")

    from_json = from_text

    def fast(self) -> None:
        return None


class _PoolOutputs:
    """Closed-pool runs: a score in [0, 1] and a 0/1 label on every line."""

    name = "pool_run"
    field = "score and label"
    fields: tuple[str, ...] = ("score", "label")
    layout = "key<TAB>score<TAB>label"
    noun = "pool item"
    all_or_none = False
    required = True
    payloads = False
    missing: object = None

    def from_text(self, parts: tuple[str, ...]) -> tuple[float, float]:
        if len(parts) != 2:
            raise _Bad(f"{len(parts) + 1} tab-separated columns; expected {self.layout}")
        return _RUN.from_text(parts[0]), self._label(parts[1], _shown(parts[1]))

    def from_json(self, value: object) -> tuple[float, float]:
        score, label = cast(tuple[object, object], value)
        if score is _MISSING or label is _MISSING:
            raise _Bad(f'"{"score" if score is _MISSING else "label"}" missing')
        if isinstance(label, bool) or not isinstance(label, int):
            raise _Bad(f'"label" must be 0 or 1, not {_json_type(label)}')
        return _RUN.from_json(score), self._label(str(label), str(label))

    @staticmethod
    def _label(text: str, shown: str) -> float:
        if text not in ("0", "1"):
            raise _Bad(f"label {shown} is not 0 or 1")
        return float(text)

    def fast(self, scores: Sequence[str], labels: Sequence[str]) -> np.ndarray | None:
        """``(n, 2)`` scores and labels of a block if every one is valid, else ``None``."""
        values = _RUN.fast(scores)
        if values is None or not set(labels) <= {"0", "1"}:
            return None
        return np.column_stack([values, np.fromiter(map(float, labels), float, len(labels))])


_RUN = _Scores()
_REFERENCE = _Groups()
_CANDIDATES = _Documents()
_KEYS = _Keys()
_POOL_RUN = _PoolOutputs()


@dataclass(frozen=True)
class _Json:
    """A value that came from JSON (typed), as opposed to TSV text."""

    value: object
