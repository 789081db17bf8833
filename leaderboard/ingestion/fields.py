"""What a line carries besides its key (a run's score, a reference's group), and the key rules."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

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


def _check_key(key: str) -> None:
    """Raise :class:`_Bad` if ``key`` is empty, too long or holds a forbidden character."""
    if not key or key.isspace():
        raise _Bad("empty key")
    if len(key) > MAX_KEY_LENGTH:
        raise _Bad(f"key is longer than {MAX_KEY_LENGTH} characters ({len(key):,})")
    problem = _forbidden_problem("key", key)
    if problem:
        raise _Bad(problem)


class _Scores:
    """Runs: an optional score in [0, 1]; all lines have one or none do (then every score is 1)."""

    field = "score"
    noun = "prediction"
    all_or_none = True
    missing = 1.0

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

    field = "group"
    noun = "item"
    all_or_none = False
    missing = ""

    def from_text(self, text: str) -> str:
        if len(text) > MAX_GROUP_LENGTH:
            raise _Bad(f"group is longer than {MAX_GROUP_LENGTH} characters ({len(text):,})")
        problem = _forbidden_problem("group", text)
        if problem:
            raise _Bad(problem)
        return text

    def from_json(self, value: object) -> str:
        if not isinstance(value, str):
            raise _Bad(f'"group" must be a string, not {_json_type(value)}')
        return self.from_text(value)

    def fast(self, texts: Sequence[str]) -> list[str] | None:
        # Control characters were excluded by the block search; tabs cannot occur.
        return list(texts) if max(map(len, texts)) <= MAX_GROUP_LENGTH else None


_RUN = _Scores()
_REFERENCE = _Groups()


@dataclass(frozen=True)
class _Json:
    """A value that came from JSON (typed), as opposed to TSV text."""

    value: object
