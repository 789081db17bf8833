"""Streaming parsers for uploaded runs and reference samples (pure Python + numpy, no database).

A run file has one prediction per line, as TSV (``key`` or ``key<TAB>score``) or JSON Lines
(``{"key": ..., "score"?: ..., "payload"?: ...}``); a reference file has one true item per line
(``key[<TAB>group]`` or ``{"key": ..., "group"?: ..., "payload"?: ...}``), a reference
candidates file one candidate item per line with its document, required
(``key<TAB>document`` or ``{"key": ..., "document": ..., "payload"?: ...}``). A closed pool's file
has one key per line (``key`` or ``{"key": ..., "payload"?: ...}``), a closed-pool run one
scored pool item per line (``key<TAB>score<TAB>label`` or ``{"key", "score", "label"}``, the
label 0 or 1). Any of them may be gzipped
(detected by its magic bytes, whatever the name) and is read in blocks of whole lines: the file is
never held in memory as one string, and the *decompressed* size is counted against the limit, so
a zip bomb stops after ``max_bytes``.

Every problem is reported with its 1-based line number (up to ``max_problems`` of them; all are
counted) and the whole upload is refused with :class:`UploadRejected` if there is any.

Modules: ``results`` (what a parse returns or raises), ``reading`` (the raw bytes: counting,
hashing, gzip, archives, format detection), ``receiving`` (the web request's single pass that
stores an upload: hash, size and decompressed size), ``sniffing`` (a file in the wrong format
told from its first bytes: CSV, a header line, UTF-16; one hint), ``fields`` (the key rules and
the score / group field rules) and ``parser`` (the line parser, whose docstring tells how TSV
blocks are made fast). The constants are re-exported here to be read; tests change them where
they are read: ``reading.READ_SIZE``, ``parser.MAX_LINE_BYTES``, ``parser._FAST_PATH``.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import chain
from typing import IO, Any, Required, TypedDict, Unpack

import numpy as np

from .fields import (
    _CANDIDATES,
    _KEYS,
    _POOL_RUN,
    _REFERENCE,
    _RUN,
    MAX_GROUP_LENGTH,
    MAX_KEY_LENGTH,
)
from .parser import MAX_LINE_BYTES, _Parser
from .reading import READ_SIZE
from .receiving import Receiver, too_large_message
from .results import (
    ParsedPool,
    ParsedPoolRun,
    ParsedReference,
    ParsedRun,
    Problem,
    UploadRejected,
    human_bytes,
)
from .sniffing import SNIFF_BYTES, sniff_head

__all__ = [
    "MAX_GROUP_LENGTH",
    "MAX_KEY_LENGTH",
    "MAX_LINE_BYTES",
    "MAX_PROBLEMS",
    "READ_SIZE",
    "SNIFF_BYTES",
    "FileLimits",
    "ParsedPool",
    "ParsedPoolRun",
    "ParsedReference",
    "ParsedRun",
    "Problem",
    "Receiver",
    "UploadRejected",
    "human_bytes",
    "parse_candidate_file",
    "parse_pool_file",
    "parse_pool_run_file",
    "parse_reference_file",
    "parse_run_file",
    "sniff_head",
    "too_large_message",
]

MAX_PROBLEMS = 50


class FileLimits(TypedDict, total=False):
    """What every parse is given besides the stream and its most records (``max_predictions``
    or ``max_items``): the name the file was sent under (its extension may tell the format;
    default none), the most bytes it may have once decompressed, the most problems listed (all
    are counted; default :data:`MAX_PROBLEMS`), and ``progress(raw_bytes_read, lines_read)``,
    called after every block if given."""

    file_name: str
    max_bytes: Required[int]
    max_problems: int
    progress: Callable[[int, int], None] | None


def _parsed(stream: IO[bytes], kind, max_records: int, **limits: Unpack[FileLimits]) -> _Parser:
    """``stream`` read through the one parser with ``kind``'s line rules; raises
    :class:`UploadRejected` listing its problems."""
    p = _Parser(
        stream,
        kind,
        file_name=limits.get("file_name", ""),
        max_bytes=limits["max_bytes"],
        max_records=max_records,
        max_problems=limits.get("max_problems", MAX_PROBLEMS),
        progress=limits.get("progress"),
    )
    p.parse()
    return p


def _file_facts(p: _Parser) -> dict[str, Any]:
    """What every parse result says of the file itself."""
    return {
        "format": p.format or "tsv",
        "compressed": p.compressed,
        "n_bytes": p.raw.n_bytes,
        "sha256": p.raw.hexdigest(),
    }


def parse_run_file(
    stream: IO[bytes], *, max_predictions: int, **limits: Unpack[FileLimits]
) -> ParsedRun:
    """Parse and validate a run file; raise :class:`UploadRejected` listing its problems."""
    p = _parsed(stream, _RUN, max_predictions, **limits)
    scores = (
        np.concatenate([np.asarray(c, dtype=np.float64) for c in p.value_chunks])
        if p.keys
        else np.zeros(0, dtype=np.float64)
    )
    return ParsedRun(
        keys=p.keys,
        scores=scores,
        payloads=p.payloads,
        **_file_facts(p),
    )


def parse_reference_file(
    stream: IO[bytes], *, max_items: int, **limits: Unpack[FileLimits]
) -> ParsedReference:
    """Parse and validate a reference sample file; raise :class:`UploadRejected` on problems."""
    return _grouped_items(_parsed(stream, _REFERENCE, max_items, **limits))


def parse_candidate_file(
    stream: IO[bytes], *, max_items: int, **limits: Unpack[FileLimits]
) -> ParsedReference:
    """Parse reference candidates (``key<TAB>document`` or JSON Lines with ``key``,
    ``document`` and an optional ``payload``): the items with their documents as ``groups``;
    raise :class:`UploadRejected` on problems."""
    return _grouped_items(_parsed(stream, _CANDIDATES, max_items, **limits))


def _grouped_items(p: _Parser) -> ParsedReference:
    """Items with one group each (the reference sample's groups, the candidates' documents)."""
    return ParsedReference(
        keys=p.keys,
        groups=list(chain.from_iterable(p.value_chunks)),
        payloads=p.payloads,
        **_file_facts(p),
    )


def parse_pool_file(
    stream: IO[bytes], *, max_items: int, **limits: Unpack[FileLimits]
) -> ParsedPool:
    """Parse a closed pool's keys (with payloads, in JSON Lines); raise :class:`UploadRejected`."""
    p = _parsed(stream, _KEYS, max_items, **limits)
    return ParsedPool(
        keys=p.keys,
        payloads=p.payloads,
        **_file_facts(p),
    )


def parse_pool_run_file(
    stream: IO[bytes], *, max_items: int, **limits: Unpack[FileLimits]
) -> ParsedPoolRun:
    """Parse a closed-pool run (a score and a label per line); raise :class:`UploadRejected`.

    Whether the keys are exactly the pool's is the caller's check (it knows the pool).
    """
    p = _parsed(stream, _POOL_RUN, max_items, **limits)
    values = (
        np.concatenate([np.asarray(c, dtype=np.float64).reshape(-1, 2) for c in p.value_chunks])
        if p.keys
        else np.zeros((0, 2))
    )
    return ParsedPoolRun(
        keys=p.keys,
        scores=np.ascontiguousarray(values[:, 0]),
        labels=values[:, 1].astype(np.uint8),
        **_file_facts(p),
    )
