"""A file in the wrong format, told from its first bytes: CSV, a header line, UTF-16 or UTF-32, a
space where a tab belongs.

One function, :func:`sniff_head`, reads the first :data:`SNIFF_BYTES` of an upload (decompressed)
and returns the one problem that refuses it, with a hint that says what to do, or ``None``. The
web request's :class:`~leaderboard.ingestion.Receiver` calls it on a run as the bytes pass (the
run is refused before it is stored, queued or counted), and the parser calls it first on every
upload (runs in the worker, the organizers' files), so that such a file is refused with the hint,
not with a problem on every line.

It refuses only on clear evidence, because a key may hold a comma, a semicolon or a space:

- UTF-16 or UTF-32: a byte order mark, or NUL bytes in the pattern ASCII text has in them.
- CSV: no tab in any line read, and every line splits by ``,`` (or ``;``) into the same number
  of fields, the last one a number where the layout has a score; where the layout's columns are
  text (a reference sample's group, a pool's keys), only with a header line too. A key with a
  comma in a TSV file (``a,b<TAB>0.9``) has a tab; a run of keys alone (``rec-1,rec-2``) has no
  number at the end; JSON Lines are never read as CSV.
- a space: no tab in any line read, and every line ends in a space and a score, some of them
  with a decimal point (keys such as ``item 2`` end in integers).
- a header line: line 1's fields are column names (``key``, ``id``, ``score``, ...), or words
  among them one such name where every other line has a number.

Only the complete lines of the head are read (all of it once the whole file fits): 16 KiB is
some 300 lines of typical keys, enough for a consistent split to mean something, a single
scan of it costs microseconds, and it is well inside the first block every reader reads anyway.
"""

from __future__ import annotations

import csv
import re

from .fields import _CANDIDATES, _KEYS, _POOL_RUN, _REFERENCE, _RUN
from .reading import _BOM, _archive, _format_from_name
from .results import Problem

SNIFF_BYTES = 16 * 1024


class _GoldLayout:
    """Gold files, ``key<TAB>correct|incorrect`` (read line by line by the annotation app's gold
    loader, not by the parser): the sniffer needs only their layout."""

    name = "gold"
    fields: tuple[str, ...] = ("answer",)
    required = True
    comments = True  # lines starting with "#" are skipped


KINDS = {
    spec.name: spec for spec in (_RUN, _POOL_RUN, _REFERENCE, _CANDIDATES, _KEYS, _GoldLayout())
}
# Layouts whose value columns are numbers (a run's score, a closed-pool run's score and label).
_NUMERIC = (_RUN, _POOL_RUN)

_UTF32_BOMS = (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
UTF16_HINT = "this file is UTF-16 (as Excel saves it): save it as UTF-8"
UTF32_HINT = "this file is UTF-32: save it as UTF-8"

_NUMBER_RE = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_DECIMAL_COMMA_RE = re.compile(r"[-+]?\d*,\d+")
_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_ .\-]{0,39}")
# Column names a header line is made of: a key's, then a value's.
KEY_NAMES = frozenset(
    {"key", "keys", "id", "ids", "item", "items", "item_id", "item_key", "pair", "pair_id"}
    | {"record", "record_id", "key_id", "uid", "name"}
)
VALUE_NAMES = frozenset(
    {"score", "scores", "prob", "probability", "confidence", "similarity", "sim", "value"}
    | {"label", "labels", "prediction", "predicted", "pred", "match", "is_match", "class"}
    | {"group", "document", "doc", "doc_id", "document_id", "source"}
    | {"answer", "gold", "verdict"}
)


def sniff_head(head: bytes, *, kind: str, file_name: str = "", complete: bool) -> Problem | None:
    """The problem that shows ``head`` (the first bytes of a ``kind`` upload, decompressed) is
    in the wrong format, or ``None``; ``complete`` says ``head`` is the whole file.

    ``kind`` is one of :data:`KINDS`. Only the first :data:`SNIFF_BYTES` are read.
    """
    spec = KINDS[kind]
    complete = complete and len(head) <= SNIFF_BYTES
    head = head[:SNIFF_BYTES]
    if _archive(head):
        return None  # the parser names it
    encoding = _wide_encoding(head)
    if encoding is not None:
        return Problem(None, UTF32_HINT if encoding == "UTF-32" else UTF16_HINT)
    if _format_from_name(file_name) == "jsonl":
        return None
    lines = _complete_lines(head.removeprefix(_BOM), complete)
    if getattr(spec, "comments", False):
        lines = [(number, text) for number, text in lines if not text.lstrip().startswith("#")]
    if not lines or lines[0][1].lstrip().startswith("{"):
        return None
    texts = [text for _, text in lines]
    if any("\t" in text for text in texts):
        return _header_problem(spec, [text.split("\t") for text in texts])
    return _csv_problem(spec, texts) or _space_problem(spec, lines) or _key_header(texts)


def _wide_encoding(head: bytes) -> str | None:
    """``"UTF-16"`` or ``"UTF-32"`` by the byte order mark or the NUL bytes of ASCII text (every
    second byte, or three bytes in four, in the same places), else ``None``."""
    if head.startswith(_UTF32_BOMS):
        return "UTF-32"
    if head.startswith(_UTF16_BOMS):
        return "UTF-16"
    if b"\x00" not in head[:4096]:
        return None
    sample = head[: len(head[:4096]) // 4 * 4]
    if len(sample) < 8:
        return None
    nul = [sample[i::4].count(0) / (len(sample) // 4) for i in range(4)]
    mostly = [share >= 0.9 for share in nul]
    never = [share <= 0.1 for share in nul]
    if (mostly[2] and mostly[3] and never[0]) or (mostly[0] and mostly[1] and never[3]):
        return "UTF-32"
    halves = [share >= 0.5 for share in nul]
    if (halves[1] and halves[3] and never[0] and never[2]) or (
        halves[0] and halves[2] and never[1] and never[3]
    ):
        return "UTF-16"
    return None


def _complete_lines(head: bytes, complete: bool) -> list[tuple[int, str]]:
    """``(line number, text)`` of the non-blank complete lines of ``head``."""
    parts = head.split(b"\n")
    if not complete or not parts[-1]:
        parts.pop()  # cut off by the head's end, or the empty text after the final newline
    lines = []
    for number, raw in enumerate(parts, start=1):
        text = raw.decode("utf-8", errors="replace").removesuffix("\r")
        if text.strip(" \t"):
            lines.append((number, text))
    return lines


def _is_number(text: str, *, decimal_comma: bool = False) -> bool:
    text = text.strip()
    return bool(_NUMBER_RE.fullmatch(text) or (decimal_comma and _DECIMAL_COMMA_RE.fullmatch(text)))


def _names(fields: list[str]) -> list[str] | None:
    """``fields`` as column names (unquoted, lower case), or ``None`` if one is not a name."""
    names = [field.strip().strip("\"'").strip() for field in fields]
    if not all(_NAME_RE.fullmatch(name) for name in names):
        return None
    return [name.lower() for name in names]


def _is_header(spec, first: list[str], rest: list[list[str]], *, decimal_comma=False) -> bool:
    """Whether the fields ``first`` of line 1 name the columns of the lines ``rest``: all of
    them column names, or names one of which is known where every other line has a number
    (``id<TAB>p``; not ``a<TAB>nan``, a bad score)."""
    names = _names(first)
    if not names:  # not names, or no field at all
        return False
    key_named = names[0] in KEY_NAMES
    values_named = [name in VALUE_NAMES for name in names[1:]]
    if key_named and all(values_named):
        return True
    if not (key_named or any(values_named)) or spec not in _NUMERIC or len(first) < 2 or not rest:
        return False
    numbers = [row[1] for row in rest if len(row) == len(first)]
    return len(numbers) == len(rest) and all(
        _is_number(n, decimal_comma=decimal_comma) for n in numbers
    )


def _header_problem(spec, rows: list[list[str]]) -> Problem | None:
    if not _is_header(spec, rows[0], rows[1:]):
        return None
    shown = ", ".join(field.strip() for field in rows[0])
    return Problem(1, f"this looks like a header line ({shown}): remove it")


def _key_header(texts: list[str]) -> Problem | None:
    """Line 1 of a file of keys alone (no tab anywhere) that is a key column's name."""
    names = _names([texts[0]])
    if len(texts) < 2 or names is None or names[0] not in KEY_NAMES:
        return None
    return Problem(1, f"this looks like a header line ({texts[0].strip()}): remove it")


def _separate(spec) -> str:
    """What to do instead, in the layout's words: "separate key and score with a tab"."""
    names = ["key", *spec.fields]
    if len(names) == 1:
        return "put one key per line"
    listed = " and ".join(names) if len(names) == 2 else f"{', '.join(names[:-1])} and {names[-1]}"
    return f"separate {listed} with {'a tab' if len(names) == 2 else 'tabs'}"


def _csv_problem(spec, texts: list[str]) -> Problem | None:
    for sep, name in ((";", "semicolon"), (",", "comma")):  # "a;0,9": a decimal comma
        if not all(sep in text for text in texts):
            continue
        try:
            rows = list(csv.reader(texts, delimiter=sep))
        except csv.Error:  # a lone carriage return in a field: no clear CSV; the parser words it
            continue
        width = len(rows[0])
        if width < 2 or any(len(row) != width for row in rows):
            continue
        comma = sep == ";"
        header = _is_header(spec, rows[0], rows[1:], decimal_comma=comma)
        data = rows[1:] if header else rows
        numbers = bool(data) and all(_is_number(row[-1], decimal_comma=comma) for row in data)
        # A file of text columns without a tab is refused anyway where a value is required.
        if header or spec.required or (spec in _NUMERIC and numbers):
            fix = ", and remove the header line" if header else ""
            return Problem(1, f"this looks like CSV ({name}-separated): {_separate(spec)}{fix}")
    return None


def _space_problem(spec, lines: list[tuple[int, str]]) -> Problem | None:
    """A key and its values separated by spaces (no tab in any line)."""
    if spec not in _NUMERIC and not spec.required:
        return None
    width = 1 + len(spec.fields)
    rows = [text.strip().rsplit(None, width - 1) for _, text in lines]
    header = len(rows) > 1 and _is_header(spec, rows[0], rows[1:])
    data = rows[1:] if header else rows
    if not data or any(len(row) != width for row in data):
        return None
    if spec in _NUMERIC:
        scores = [row[1] for row in data]
        if not all(map(_is_number, scores)) or not any(set(s) & set(".eE") for s in scores):
            return None
    fix = ", and remove the header line" if header else ""
    where = "spaces separate" if width > 2 else "a space separates"
    return Problem(lines[0][0], f"{where} the columns: {_separate(spec)}{fix}")
