"""Load and validate a closed-pool data set: a fixed pool that every system scores in full.

A closed-pool data set is a directory laid out as follows (the closed-pool README)::

    NAME/
        items.tsv             every pool item key, one per line (the closed universe)
        truth.tsv             the keys whose true label is 1 (the complete truth)
        systems/S.tsv[.gz]    one line per pool item, in the order of items.tsv:
                              ``key<TAB>score<TAB>label``, score in [0, 1], label 0 or 1

The presence of ``items.tsv`` is what tells it from an open-world data set
(:mod:`.datasets`). Problems are reported as :class:`.datasets.DatasetError` naming file and line,
collected per file, with the same reading rules (UTF-8, no blank lines, no duplicate keys).
"""

from __future__ import annotations

import gzip
import math
import os
from dataclasses import dataclass

import numpy as np

from .dataset_files import DatasetError, ProblemCollector, read_bytes, show_key, split_lines
from .datasets import SYSTEMS_DIR, TRUTH_FILE

__all__ = ["POOL_FILE", "ClosedPoolData", "PoolSystem", "is_closed_pool", "load_closed_pool"]

POOL_FILE = "items.tsv"


@dataclass(frozen=True, eq=False)
class PoolSystem:
    """One system's output on every pool item, in pool order (read-only arrays)."""

    name: str
    scores: np.ndarray  # float64 in [0, 1]
    predictions: np.ndarray  # bool


@dataclass(frozen=True, eq=False)
class ClosedPoolData:
    """A loaded closed pool: ``keys`` in pool order, ``truth`` aligned with them, the systems."""

    name: str
    path: str
    keys: np.ndarray
    truth: np.ndarray
    systems: tuple[PoolSystem, ...]

    @property
    def n_items(self) -> int:
        return int(self.keys.size)


def is_closed_pool(path: str) -> bool:
    """Whether ``path`` is a closed-pool data set (it has ``items.tsv``)."""
    return os.path.isfile(os.path.join(path, POOL_FILE))


def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _lines_of(path: str, rel: str, col: ProblemCollector) -> list[str | None]:
    data = read_bytes(path, rel)
    if rel.endswith(".gz"):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as e:
            col.add(rel, None, f"not a readable gzip file: {e}")
            return []
    if not data:
        col.add(rel, None, "file is empty")
        return []
    lines, bad = split_lines(data)
    for lineno in sorted(bad):
        col.add(rel, lineno, bad[lineno])
    return lines


def _read_pool(path: str, col: ProblemCollector) -> list[str]:
    lines = _lines_of(os.path.join(path, POOL_FILE), POOL_FILE, col)
    seen: dict[str, int] = {}
    for lineno, key in enumerate(lines, 1):
        if key is None:
            continue
        if "\t" in key:
            col.add(POOL_FILE, lineno, "a pool line holds one key and no tab")
        else:
            col.first_time(POOL_FILE, lineno, key, seen)
    return [k if k is not None else "" for k in lines]


def _read_truth(path: str, index: dict[str, int], col: ProblemCollector) -> np.ndarray:
    truth = np.zeros(len(index), dtype=bool)
    lines = _lines_of(os.path.join(path, TRUTH_FILE), TRUTH_FILE, col)
    for lineno, key in enumerate(lines, 1):
        if key is None:
            continue
        i = index.get(key)
        if i is None:
            col.add(TRUTH_FILE, lineno, f"key {show_key(key)} is not in {POOL_FILE}")
        elif truth[i]:
            col.add(TRUTH_FILE, lineno, f"duplicate key {show_key(key)}")
        else:
            truth[i] = True
    return truth


def _read_system(path: str, rel: str, keys: list[str], col: ProblemCollector) -> PoolSystem:
    lines = _lines_of(path, rel, col)
    n = len(keys)
    scores = np.zeros(n)
    predictions = np.zeros(n, dtype=bool)
    if lines and len(lines) != n:
        col.add(rel, None, f"{len(lines)} lines for {n} pool items: a system lists every item")
    for lineno, line in enumerate(lines[:n], 1):
        if line is None:
            continue
        parts = line.split("\t")
        if len(parts) != 3:
            col.add(rel, lineno, f"expected key<TAB>score<TAB>label, found {len(parts)} fields")
            continue
        key, score_text, label = parts
        if key != keys[lineno - 1]:
            col.add(
                rel,
                lineno,
                f"key {show_key(key)}, but line {lineno} of {POOL_FILE} is "
                f"{show_key(keys[lineno - 1])} (systems list the pool in its order)",
            )
            continue
        try:
            score = float(score_text)
        except ValueError:
            score = math.nan
        if not 0.0 <= score <= 1.0:
            col.add(rel, lineno, f"score {score_text!r} is not a number in [0, 1]")
            continue
        if label not in ("0", "1"):
            col.add(rel, lineno, f"label {label!r} is not 0 or 1")
            continue
        scores[lineno - 1] = score
        predictions[lineno - 1] = label == "1"
    name = os.path.basename(rel).removesuffix(".gz").removesuffix(".tsv")
    return PoolSystem(name, _readonly(scores), _readonly(predictions))


def load_closed_pool(path: str, *, max_problems: int = 10) -> ClosedPoolData:
    """Read and validate the closed-pool data set at ``path``.

    Raises
    ------
    DatasetError
        Any problem in any file, with file names and line numbers.
    """
    path = os.fspath(path)
    name = os.path.basename(os.path.normpath(path))
    col = ProblemCollector(path, max_problems)
    if not is_closed_pool(path):
        raise DatasetError(f"{path}: no {POOL_FILE}: not a closed-pool data set", path=path)
    keys = _read_pool(path, col)
    index = {k: i for i, k in enumerate(keys)}
    truth = _read_truth(path, index, col)
    systems_dir = os.path.join(path, SYSTEMS_DIR)
    files = sorted(
        f
        for f in (os.listdir(systems_dir) if os.path.isdir(systems_dir) else [])
        if not f.startswith(".") and (f.endswith(".tsv") or f.endswith(".tsv.gz"))
    )
    if not files:
        col.add(SYSTEMS_DIR, None, "no system files (systems/NAME.tsv or NAME.tsv.gz)")
    systems = tuple(
        _read_system(os.path.join(systems_dir, f), f"{SYSTEMS_DIR}/{f}", keys, col) for f in files
    )
    col.raise_if_any(name)
    return ClosedPoolData(
        name, path, _readonly(np.array(keys, dtype=object)), _readonly(truth), systems
    )
