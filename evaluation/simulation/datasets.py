"""Load and validate an evaluation data set from disk.

A data set is a directory laid out as follows::

    NAME/
        truth.tsv           every correct item key, one per line (the complete gold set)
        systems/S.tsv       one submission per file: ``key<TAB>score`` per line
        items.jsonl         optional: ``{"key": ..., "payload": {...}}`` per line

:func:`load_dataset` reads it into a :class:`Dataset`, in which every distinct key
(the union of ``truth.tsv`` and all system files) gets an integer id, so that
systems and the gold set can be compared with plain numpy indexing.

File format rules enforced by the loader
----------------------------------------
* Files are UTF-8 (a leading byte-order mark is ignored). Lines end in ``\\n`` or
  ``\\r\\n``; the final line may or may not end in a newline.
* Blank lines (empty or whitespace only) are errors wherever they occur, apart from
  the single newline that ends the last line.
* Keys are opaque strings: they may contain spaces, ``|`` and any other character
  except tab, carriage return and newline, and are compared exactly (no trimming).
* ``truth.tsv``: one key per line, no tab, no duplicates.
* ``systems/*.tsv``: ``key<TAB>score`` with ``score`` a finite number in [0, 1]
  (anything Python's :func:`float` accepts). A line holding only a key (no tab) is
  allowed and means score 1.0, for systems that output a set without confidences.
  No duplicate keys within one file. Files not ending in ``.tsv`` and hidden files
  (name starting with ``.``) are ignored.
* ``items.jsonl`` (checked only when ``check_items=True`` and the file exists):
  every line a JSON object with a non-empty string ``"key"``, no duplicate keys,
  and every key of ``truth.tsv`` and of every system present. Extra items are fine.

All problems are reported as :class:`DatasetError`. Problems inside files are
collected (up to ``max_problems`` listed per file) and raised together, so that a
user can fix everything in one go.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from .dataset_files import (
    DatasetError,
    Problem,
    ProblemCollector,
    plural,
    read_bytes,
    show_key,
    split_lines,
)

__all__ = ["Dataset", "DatasetError", "Problem", "System", "load_dataset"]

TRUTH_FILE = "truth.tsv"
SYSTEMS_DIR = "systems"
ITEMS_FILE = "items.jsonl"

_UNKNOWN_EXAMPLES = 5


@dataclass(frozen=True, eq=False)
class System:
    """The predictions of one system.

    Attributes
    ----------
    name : str
        File stem of ``systems/NAME.tsv``.
    items : numpy.ndarray
        int64 ids (indices into :attr:`Dataset.keys`), one per prediction, in file
        order, unique. Read-only.
    scores : numpy.ndarray
        float64 confidences in [0, 1], aligned with ``items``. Read-only.
    """

    name: str
    items: np.ndarray
    scores: np.ndarray


@dataclass(frozen=True, eq=False)
class Dataset:
    """A loaded data set.

    Attributes
    ----------
    name : str
        Name of the data set directory.
    path : str
        The path it was loaded from, as given.
    keys : numpy.ndarray
        object array of ``str``: every distinct key of ``truth.tsv`` and of all
        systems, sorted (code point order); the index of a key is its item id.
        Read-only.
    truth : numpy.ndarray
        bool array aligned with ``keys``: the key is in ``truth.tsv``. Truth keys that
        no system predicts are included, because recall is defined against all of
        ``truth.tsv``. Read-only.
    systems : tuple of System
        Sorted by name.
    n_truth : int
        Number of correct keys (lines of ``truth.tsv``, which holds no duplicates);
        equals ``truth.sum()``.
    """

    name: str
    path: str
    keys: np.ndarray
    truth: np.ndarray
    systems: tuple[System, ...]
    n_truth: int


def _read_truth(path: str, col: ProblemCollector, ids: dict[str, int]) -> list[int]:
    """Parse ``truth.tsv``; return the provisional ids of its keys."""
    rel = TRUTH_FILE
    data = read_bytes(path, rel)
    if not data:
        col.add(rel, None, "file is empty: a data set needs at least one correct key")
        return []
    seen: dict[str, int] = {}
    out: list[int] = []
    lines, bad = split_lines(data)
    for lineno, key in enumerate(lines, 1):
        if key is None:
            col.add(rel, lineno, bad[lineno])
            continue
        if "\t" in key:
            col.add(
                rel,
                lineno,
                "line contains a tab: truth.tsv holds one key per line "
                "and keys cannot contain tabs",
            )
            continue
        if not col.first_time(rel, lineno, key, seen):
            continue
        out.append(ids.setdefault(key, len(ids)))
    return out


def _read_system(
    path: str, rel: str, name: str, col: ProblemCollector, ids: dict[str, int]
) -> tuple[list[int], list[float]]:
    """Parse one system file; return provisional ids and scores."""
    data = read_bytes(path, rel)
    if not data:
        col.add(rel, None, f"system {name!r} has no predictions (the file is empty)")
        return [], []
    seen: dict[str, int] = {}
    items: list[int] = []
    scores: list[float] = []
    isfinite = math.isfinite
    lines, bad = split_lines(data)
    for lineno, line in enumerate(lines, 1):
        if line is None:
            col.add(rel, lineno, bad[lineno])
            continue
        parts = line.split("\t")
        n_fields = len(parts)
        if n_fields == 2:
            key, text = parts
            try:
                score = float(text)
            except ValueError:
                col.add(rel, lineno, f"score {show_key(text)} is not a number")
                continue
            if not 0.0 <= score <= 1.0:
                if isfinite(score):
                    col.add(rel, lineno, f"score {show_key(text)} is outside [0, 1]")
                else:
                    col.add(rel, lineno, f"score {show_key(text)} is not a finite number")
                continue
        elif n_fields == 1:
            key, score = line, 1.0
        else:
            col.add(
                rel,
                lineno,
                f"expected 'key<TAB>score', found {n_fields} tab-separated fields",
            )
            continue
        if not col.usable_key(rel, lineno, key, seen):
            continue
        items.append(ids.setdefault(key, len(ids)))
        scores.append(score)
    return items, scores


def _read_item_keys(path: str, col: ProblemCollector) -> dict[str, int]:
    """Stream ``items.jsonl``; return ``{key: line number}``. Payloads are discarded."""
    try:
        with open(path, "rb") as f:
            return _scan_items(f, col)
    except OSError as e:
        raise DatasetError(f"{ITEMS_FILE}: cannot read file: {e}", path=path) from e


def _scan_items(f: Iterable[bytes], col: ProblemCollector) -> dict[str, int]:
    rel = ITEMS_FILE
    seen: dict[str, int] = {}
    loads = json.loads
    for lineno, raw in enumerate(f, 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            col.add(
                rel,
                lineno,
                f"invalid UTF-8: byte 0x{raw[e.start]:02x} at byte {e.start + 1} of the line",
            )
            continue
        if lineno == 1 and line.startswith("\ufeff"):
            line = line[1:]
        if not line or line.isspace():
            col.add(rel, lineno, "blank line")
            continue
        try:
            obj = loads(line)
        except ValueError as e:
            msg = getattr(e, "msg", str(e))
            col_no = getattr(e, "colno", None)
            where = f" at column {col_no}" if col_no is not None else ""
            col.add(rel, lineno, f"invalid JSON: {msg}{where}")
            continue
        if not isinstance(obj, dict):
            col.add(rel, lineno, f"expected a JSON object, found a JSON {_json_type(obj)}")
            continue
        key = obj.get("key")
        if not isinstance(key, str):
            if "key" not in obj:
                col.add(rel, lineno, 'the object has no "key" field')
            else:
                col.add(rel, lineno, f'"key" is a JSON {_json_type(key)}, not a string')
            continue
        col.usable_key(rel, lineno, key, seen)
    return seen


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


# --------------------------------------------------------------------------- loading


def _readonly(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def load_dataset(
    path: str | os.PathLike[str], *, check_items: bool = True, max_problems: int = 50
) -> Dataset:
    """Load and validate a data set directory.

    Parameters
    ----------
    path : str or os.PathLike
        The data set directory (containing ``truth.tsv`` and ``systems/``).
    check_items : bool, default True
        If True and ``items.jsonl`` exists, stream it, check that every line is a
        JSON object with a non-empty string ``"key"`` and no key repeats, and check
        that every key of ``truth.tsv`` and of the systems has an item. Payloads are
        not kept. If ``items.jsonl`` does not exist, this check is skipped silently.
    max_problems : int, default 50
        Maximum number of problems listed per file in the error message; the total
        count is always given.

    Returns
    -------
    Dataset

    Raises
    ------
    DatasetError
        If the directory, ``truth.tsv`` or ``systems/`` (with at least one ``*.tsv``)
        is missing, or if any file is malformed (see the module docstring for the
        rules). Problems within files are collected over all files and raised
        together; the message names each file and 1-based line number.
    ValueError
        If ``max_problems`` is smaller than 1.

    Notes
    -----
    A system line holding only a key (no tab) gets score 1.0. Item ids are indices
    into :attr:`Dataset.keys`, which is sorted, so ids do not depend on file order.
    """
    if max_problems < 1:
        raise ValueError(f"max_problems must be at least 1, got {max_problems}")
    root = os.fspath(path)
    name = os.path.basename(os.path.normpath(root))
    if not os.path.exists(root):
        raise DatasetError(f"data set directory {root!r} does not exist", path=root)
    if not os.path.isdir(root):
        raise DatasetError(f"data set path {root!r} is not a directory", path=root)

    truth_path = os.path.join(root, TRUTH_FILE)
    if not os.path.isfile(truth_path):
        what = "is not a file" if os.path.exists(truth_path) else "is missing"
        raise DatasetError(f"{TRUTH_FILE} {what} in data set {root!r}", path=truth_path)

    systems_dir = os.path.join(root, SYSTEMS_DIR)
    if not os.path.isdir(systems_dir):
        what = "is not a directory" if os.path.exists(systems_dir) else "is missing"
        raise DatasetError(f"{SYSTEMS_DIR}/ {what} in data set {root!r}", path=systems_dir)
    system_files = sorted(
        entry
        for entry in os.listdir(systems_dir)
        if entry.endswith(".tsv")
        and not entry.startswith(".")
        and os.path.isfile(os.path.join(systems_dir, entry))
    )
    if not system_files:
        raise DatasetError(
            f"{SYSTEMS_DIR}/ in data set {root!r} contains no *.tsv system file",
            path=systems_dir,
        )

    col = ProblemCollector(root, max_problems)
    ids: dict[str, int] = {}  # key -> provisional id, in order of first appearance
    truth_prov = _read_truth(truth_path, col, ids)
    parsed: list[tuple[str, list[int], list[float]]] = []
    for entry in system_files:
        stem = entry[: -len(".tsv")]
        rel = f"{SYSTEMS_DIR}/{entry}"
        items, scores = _read_system(os.path.join(systems_dir, entry), rel, stem, col, ids)
        parsed.append((stem, items, scores))

    # Final ids: rank of the key in sorted order.
    prov_keys = list(ids)
    order = sorted(range(len(prov_keys)), key=prov_keys.__getitem__)
    rank = np.empty(len(prov_keys), dtype=np.int64)
    rank[np.asarray(order, dtype=np.int64)] = np.arange(len(prov_keys), dtype=np.int64)
    keys = np.empty(len(prov_keys), dtype=object)
    keys[:] = [prov_keys[i] for i in order]

    truth = np.zeros(len(prov_keys), dtype=bool)
    truth[rank[np.asarray(truth_prov, dtype=np.int64)]] = True
    systems = tuple(
        System(
            name=stem,
            items=_readonly(rank[np.asarray(items, dtype=np.int64)]),
            scores=_readonly(np.asarray(scores, dtype=np.float64)),
        )
        for stem, items, scores in parsed
    )

    if check_items:
        items_path = os.path.join(root, ITEMS_FILE)
        if os.path.exists(items_path):
            if not os.path.isfile(items_path):
                raise DatasetError(
                    f"{ITEMS_FILE} in data set {root!r} is not a file", path=items_path
                )
            item_keys = _read_item_keys(items_path, col)
            if col.count(ITEMS_FILE) == 0:
                # Only meaningful when every line of items.jsonl could be read.
                _check_unknown(keys, truth, systems, item_keys, col)

    col.raise_if_any(name)
    return Dataset(
        name=name,
        path=root,
        keys=_readonly(keys),
        truth=_readonly(truth),
        systems=systems,
        n_truth=len(truth_prov),
    )


def _check_unknown(
    keys: np.ndarray,
    truth: np.ndarray,
    systems: tuple[System, ...],
    item_keys: dict[str, int],
    col: ProblemCollector,
) -> None:
    """Report keys of truth/systems that have no line in ``items.jsonl``."""
    unknown = [i for i, key in enumerate(keys.tolist()) if key not in item_keys]
    if not unknown:
        return
    examples = []
    for i in unknown[:_UNKNOWN_EXAMPLES]:
        if truth[i]:
            source = TRUTH_FILE
        else:
            source = next(f"{SYSTEMS_DIR}/{s.name}.tsv" for s in systems if np.any(s.items == i))
        examples.append(f"{show_key(keys[i])} (from {source})")
    more = len(unknown) - len(examples)
    tail = f", ... ({more} more)" if more else ""
    col.add(
        ITEMS_FILE,
        None,
        f"unknown keys: {plural(len(unknown), 'key')} of {TRUTH_FILE} or {SYSTEMS_DIR}/ "
        f"missing from {ITEMS_FILE}, e.g. {', '.join(examples)}{tail}",
    )
