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
from typing import IO, Any

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


def _parsed(stream: IO[bytes], kind, **limits: Any) -> _Parser:
    """``stream`` read through the one parser with ``kind``'s line rules; raises
    :class:`UploadRejected` listing its problems."""
    p = _Parser(stream, kind, **limits)
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
    stream: IO[bytes],
    *,
    file_name: str = "",
    max_bytes: int,
    max_predictions: int,
    max_problems: int = MAX_PROBLEMS,
    progress: Callable[[int, int], None] | None = None,
) -> ParsedRun:
    """Parse and validate a run file; raise :class:`UploadRejected` listing its problems.

    ``progress(raw_bytes_read, lines_read)`` is called after every block, if given.
    """
    p = _parsed(
        stream,
        _RUN,
        file_name=file_name,
        max_bytes=max_bytes,
        max_records=max_predictions,
        max_problems=max_problems,
        progress=progress,
    )
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
    stream: IO[bytes],
    *,
    file_name: str = "",
    max_bytes: int,
    max_items: int,
    max_problems: int = MAX_PROBLEMS,
) -> ParsedReference:
    """Parse and validate a reference sample file; raise :class:`UploadRejected` on problems."""
    return _grouped_items(stream, _REFERENCE, file_name, max_bytes, max_items, max_problems)


def parse_candidate_file(
    stream: IO[bytes],
    *,
    file_name: str = "",
    max_bytes: int,
    max_items: int,
    max_problems: int = MAX_PROBLEMS,
) -> ParsedReference:
    """Parse reference candidates (``key<TAB>document`` or JSON Lines with ``key``,
    ``document`` and an optional ``payload``): the items with their documents as ``groups``;
    raise :class:`UploadRejected` on problems."""
    return _grouped_items(stream, _CANDIDATES, file_name, max_bytes, max_items, max_problems)


def _grouped_items(stream, spec, file_name, max_bytes, max_items, max_problems) -> ParsedReference:
    """Items with one group each (the reference sample's groups, the candidates' documents)."""
    p = _parsed(
        stream,
        spec,
        file_name=file_name,
        max_bytes=max_bytes,
        max_records=max_items,
        max_problems=max_problems,
    )
    return ParsedReference(
        keys=p.keys,
        groups=list(chain.from_iterable(p.value_chunks)),
        payloads=p.payloads,
        **_file_facts(p),
    )


def parse_pool_file(
    stream: IO[bytes],
    *,
    file_name: str = "",
    max_bytes: int,
    max_items: int,
    max_problems: int = MAX_PROBLEMS,
) -> ParsedPool:
    """Parse a closed pool's keys (with payloads, in JSON Lines); raise :class:`UploadRejected`."""
    p = _parsed(
        stream,
        _KEYS,
        file_name=file_name,
        max_bytes=max_bytes,
        max_records=max_items,
        max_problems=max_problems,
    )
    return ParsedPool(
        keys=p.keys,
        payloads=p.payloads,
        **_file_facts(p),
    )


def parse_pool_run_file(
    stream: IO[bytes],
    *,
    file_name: str = "",
    max_bytes: int,
    max_items: int,
    max_problems: int = MAX_PROBLEMS,
    progress: Callable[[int, int], None] | None = None,
) -> ParsedPoolRun:
    """Parse a closed-pool run (a score and a label per line); raise :class:`UploadRejected`.

    Whether the keys are exactly the pool's is the caller's check (it knows the pool).
    """
    p = _parsed(
        stream,
        _POOL_RUN,
        file_name=file_name,
        max_bytes=max_bytes,
        max_records=max_items,
        max_problems=max_problems,
        progress=progress,
    )
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
