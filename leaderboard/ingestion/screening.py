"""Whether a parsed run looks like junk: most of its keys match no item of the task and look
malformed, judged on what the task's own item keys look like (pure: the caller reads them).

An open-world run predicts new items, so keys that match no item are normal in a first run; what
makes a key look malformed is a shape no item key of the task has:

- it ends in a separator and a decimal number (``,0.9000``, ``;0.25``, ``|1.0``, `` 0.5``): the
  score of a line glued to the key, as a comma-separated file read as keys alone gives;
- it holds a character that no item key holds among a comma, a semicolon, a quote or whitespace
  (only once the task has items to compare with).

A run is junk when more than half of its keys both look malformed and match no item; a long run
is judged on :data:`SCREEN_SAMPLE` of its keys, evenly spaced (the share is then known within
about ±0.022 at 95%, and only a run near one half could be judged either way).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from .fields import _shown

SCREEN_SAMPLE = 2_000  # keys screened in a longer run
EXAMPLES = 10  # malformed keys shown, with their lines
_SCORE_SUFFIX_RE = re.compile(r"(?:[,;|:]\s*|\s+)[-+]?(?:\d+\.\d*|\.\d+)(?:[eE][-+]?\d+)?\s*$")
_SEPARATORS = frozenset(",;\"'")
_CHAR_NAMES = {",": "a comma", ";": "a semicolon", '"': "a double quote", "'": "a quote"}


@dataclass(frozen=True)
class KnownKeys:
    """What the task's item keys (or a sample of them) look like."""

    n: int
    chars: frozenset[str]
    score_suffix: bool  # some item key ends like a score after a separator

    @classmethod
    def of(cls, keys: Iterable[str]) -> KnownKeys:
        chars: set[str] = set()
        n, suffix = 0, False
        for key in keys:
            n += 1
            chars.update(key)
            suffix = suffix or bool(_SCORE_SUFFIX_RE.search(key))
        return cls(n=n, chars=frozenset(chars), score_suffix=suffix)

    def marks(self, key: str) -> list[tuple[str, str]]:
        """Why ``key`` looks malformed: ``("suffix", ",0.9000")``, ``("char", ",")``..."""
        found = []
        if not self.score_suffix:
            match = _SCORE_SUFFIX_RE.search(key)
            if match:
                found.append(("suffix", match.group()))
        if self.n:
            found.extend(
                ("char", c)
                for c in dict.fromkeys(key)
                if (c in _SEPARATORS or c.isspace()) and c not in self.chars
            )
        return found


@dataclass(frozen=True)
class KeyScreen:
    """A run's keys screened: ``malformed`` are the indices (into the run's keys) of screened
    keys that look malformed and match no item, with what made them look so."""

    n_keys: int
    n_screened: int
    malformed: list[int] = field(default_factory=list)
    marks: dict[int, list[tuple[str, str]]] = field(default_factory=dict)

    @property
    def junk(self) -> bool:
        return 2 * len(self.malformed) > self.n_screened

    def summary(self) -> str:
        """``273 of its 273 keys match no item of the task and look malformed: 273 end in a
        separator and a number (',0.9000'), 273 contain ',' (no item key does)``."""
        of = (
            f"{len(self.malformed):,} of {self.n_screened:,} keys sampled from its {self.n_keys:,}"
            if self.n_screened < self.n_keys
            else f"{len(self.malformed):,} of its {self.n_keys:,} keys"
        )
        suffixes: Counter[str] = Counter()
        chars: Counter[str] = Counter()
        for index in self.malformed:
            for kind, detail in self.marks[index]:
                (suffixes if kind == "suffix" else chars)[detail] += 1
        reasons = []
        if suffixes:
            common = ", ".join(repr(s) for s, _ in suffixes.most_common(3))
            reasons.append(f"{suffixes.total():,} end in a separator and a number ({common})")
        for char, count in chars.most_common(3):
            reasons.append(f"{count:,} contain {_char_name(char)} (no item key does)")
        return f"{of} match no item of the task and look malformed: {', '.join(reasons)}"

    def examples(self, keys: Sequence[str]) -> list[dict[str, object]]:
        """The first malformed keys of ``keys`` (the run's) as problems by line (line ``i + 1``
        holds key ``i``)."""
        return [
            {"line": index + 1, "message": self._example(index, keys[index])}
            for index in self.malformed[:EXAMPLES]
        ]

    def _example(self, index: int, key: str) -> str:
        what = [
            f"ends in {detail!r}" if kind == "suffix" else f"contains {_char_name(detail)}"
            for kind, detail in self.marks[index]
        ]
        return f"key {_shown(key, 60)} matches no item and looks malformed: {' and '.join(what)}"


def glued_value_hint(key: str) -> str:
    """For a line whose value is missing: `` (a space separates the key from its value on this
    line: use a tab)`` when ``key`` ends in a separator and a decimal number, else ``""``."""
    match = _SCORE_SUFFIX_RE.search(key)
    if match is None:
        return ""
    return (
        f" ({_char_name(match.group()[0])} separates the key from its value on this line: "
        "use a tab)"
    )


def _char_name(char: str) -> str:
    if char in _CHAR_NAMES:
        return _CHAR_NAMES[char]
    if char.isspace():
        return "a space" if char == " " else f"a space (U+{ord(char):04X})"
    return repr(char)


def screened_indices(n: int, sample: int = SCREEN_SAMPLE) -> list[int]:
    """Every index below ``n``, or ``sample`` of them evenly spaced (first and last included)."""
    if n <= sample:
        return list(range(n))
    return sorted({round(i * (n - 1) / (sample - 1)) for i in range(sample)})


def screen_keys(
    keys: Sequence[str], *, known: KnownKeys, existing: Callable[[list[str]], set[str]]
) -> KeyScreen:
    """Screen a run's ``keys`` against the task's (``known``); ``existing(keys)`` says which of
    the given keys are items of the task (asked only about malformed keys, and only when they
    are enough to make the run junk)."""
    screened = screened_indices(len(keys))
    marks = {i: found for i in screened if (found := known.marks(keys[i]))}
    if 2 * len(marks) <= len(screened):
        return KeyScreen(n_keys=len(keys), n_screened=len(screened))
    items = existing([keys[i] for i in marks])
    malformed = [i for i in marks if keys[i] not in items]
    return KeyScreen(
        n_keys=len(keys),
        n_screened=len(screened),
        malformed=malformed,
        marks={i: marks[i] for i in malformed},
    )
