"""Names people tell apart by eye (team names, task slugs): what may be in one, and the key two
names share when they look alike.

A name shown on a public board must not pass for another: ``team alice`` beside ``Team Alice``,
a no-break or zero-width space, a Cyrillic A (U+0410) for a Latin one, fullwidth letters, a
right-to-left override. So a name is refused if it holds a control character (a newline, a tab),
a line or paragraph separator, or a bidirectional control; and names are unique by each of
:func:`lookalike_keys`: NFKC, invisible characters removed, white space collapsed, case folded
and Unicode's confusable skeleton (UTS #39), in both orders, repeated until it no longer
changes.

The skeleton's data is Unicode's ``confusables.txt`` as the ``confusable-homoglyphs`` package
ships it (each pair in both directions): each character maps to the prototype of its class.

References
----------
Unicode Technical Standard #39, Unicode Security Mechanisms, section 4 (Confusable Detection).
Unicode Standard Annex #15, Unicode Normalization Forms.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import re
import unicodedata
from functools import cache

# Characters that are invisible in a name though not of category Cf (which is removed whole):
# the Default_Ignorable_Code_Point ones of other categories (DerivedCoreProperties.txt).
_IGNORABLE = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0\U000e0100-\U000e01ef]"
)
_BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
_SPACES = re.compile(r"\s+")


def name_problem(name: str) -> str | None:
    """Why ``name`` may not be shown as a name (``None``: it may): a control character, a line
    or paragraph separator, or a bidirectional control (they reorder the text around them)."""
    for char in name:
        category = unicodedata.category(char)
        if category == "Cc" or category in ("Zl", "Zp"):
            return f"a name may not contain control characters or line breaks (U+{ord(char):04X})"
        if char in _BIDI_CONTROLS:
            return f"a name may not contain bidirectional controls (U+{ord(char):04X})"
    return None


def tidy_name(name: str) -> str:
    """``name`` as stored and shown: every run of white space (no-break spaces included) one
    space, none at either end."""
    return _SPACES.sub(" ", name).strip()


@cache
def _prototypes() -> dict[str, str]:
    """Each confusable character's prototype (characters not listed are their own)."""
    data = importlib.resources.files("confusable_homoglyphs").joinpath("confusables.json")
    pairs: dict[str, list[str]] = {
        char: [entry["c"] for entry in entries]
        for char, entries in json.loads(data.read_text(encoding="utf-8")).items()
    }
    mapping: dict[str, str] = {}
    for char, others in pairs.items():
        if len(char) != 1 or len(others) != 1:
            continue  # a prototype (it lists its confusables) or a sequence (always a prototype)
        other = others[0]
        if len(other) > 1 or len(pairs.get(other, ())) > 1:
            mapping[char] = other  # a confusable of the prototype ``other``
        else:
            # A class of two: the data, symmetric, does not say which is the prototype; either
            # serves, as long as both map to the same one.
            mapping[char] = min(char, other, key=lambda c: (not c.isascii(), c))
    return mapping


def skeleton(text: str) -> str:
    """UTS #39's skeleton of ``text``: NFD, each character to its prototype, NFD again."""
    prototypes = _prototypes()
    mapped = "".join(prototypes.get(char, char) for char in unicodedata.normalize("NFD", text))
    return unicodedata.normalize("NFD", mapped)


def _visible(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = "".join(char for char in text if unicodedata.category(char) != "Cf")
    return tidy_name(_IGNORABLE.sub("", text))


def _key(name: str, *, fold_first: bool) -> str:
    key = _visible(name)
    if fold_first:
        key = key.casefold()
    for _ in range(4):  # a prototype's case fold may have a prototype of its own; 3 suffice
        folded = _visible(skeleton(key)).casefold()
        if folded == key:
            break
        key = folded
    return key


def lookalike_keys(name: str) -> tuple[str, str]:
    """The two keys under which names that look alike meet (see the module's description).

    The skeleton is case-sensitive, so one order cannot serve both kinds of lookalike: case
    folded first, ``Iris`` meets ``iris``; skeleton first, a Cyrillic capital Te meets a Latin
    ``T`` (its small letter looks like a small capital T) and a capital I a small L. Two names
    look alike if either key is the same."""
    return _key(name, fold_first=True), _key(name, fold_first=False)


def lookalike_digests(name: str) -> tuple[str, str]:
    """:func:`lookalike_keys` as SHA-256 digests: fixed-width columns with unique indexes (a
    key can be many times longer than its name: NFKC and the skeleton expand characters)."""
    folded, shaped = lookalike_keys(name)
    return _digest(folded), _digest(shaped)


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()
