"""Parsing closed pools (keys, payloads) and closed-pool runs (a score and a label per line)."""

from __future__ import annotations

import gzip
import io

import numpy as np
import pytest

from leaderboard.ingestion import UploadRejected, parse_pool_file, parse_pool_run_file, parser


def run_file(data: bytes, name: str = "run.tsv"):
    return parse_pool_run_file(io.BytesIO(data), file_name=name, max_bytes=10**7, max_items=10**6)


def problems_of(data: bytes, name: str = "run.tsv") -> list[tuple[int | None, str]]:
    with pytest.raises(UploadRejected) as refused:
        run_file(data, name)
    return [(p.line, p.message) for p in refused.value.problems]


@pytest.fixture(params=[True, False], ids=["fast", "careful"])
def either_path(request, monkeypatch):
    """Both TSV paths of the parser must accept and refuse the same lines."""
    monkeypatch.setattr(parser, "_FAST_PATH", request.param)


def test_a_pool_run_gives_scores_and_labels_in_file_order(either_path):
    lines = "".join(f"k{i}\t{i / 1000:g}\t{i % 3 == 0:d}\n" for i in range(1000))
    parsed = run_file(gzip.compress(lines.encode()), "run.tsv.gz")
    assert parsed.keys == [f"k{i}" for i in range(1000)]
    np.testing.assert_array_equal(parsed.scores, np.arange(1000) / 1000)
    np.testing.assert_array_equal(parsed.labels, (np.arange(1000) % 3 == 0).astype(np.uint8))
    assert parsed.labels.dtype == np.uint8 and parsed.compressed


def test_json_lines_pool_runs():
    parsed = run_file(
        b'{"key": "a", "score": 0.25, "label": 1}\n{"key": "b", "score": 1, "label": 0}\n',
        "r.jsonl",
    )
    assert parsed.keys == ["a", "b"]
    assert parsed.scores.tolist() == [0.25, 1.0] and parsed.labels.tolist() == [1, 0]


def test_every_bad_line_of_a_pool_run_is_named(either_path):
    data = (
        b"a\t0.5\t1\n"
        b"b\t0.2\t2\n"
        b"c\t1.5\t0\n"
        b"d\t0.1\n"
        b"e\n"
        b"f\t0.1\t1\t3\n"
        b"a\t0.3\t1\n"
        b"\xff\t1\t1\n"
        b"g\tx\t1\n"
    )
    assert problems_of(data) == [
        (2, "label '2' is not 0 or 1"),
        (3, "score '1.5' is outside [0, 1]"),
        (4, "2 tab-separated columns; expected key<TAB>score<TAB>label"),
        (5, "score and label missing: expected key<TAB>score<TAB>label"),
        (6, "4 tab-separated columns; expected key<TAB>score<TAB>label"),
        (7, "duplicate key 'a' (first on line 1)"),
        (8, "not valid UTF-8: byte 0xFF at byte 1 of the line (offset 50 of the file)"),
        (9, "score 'x' is not a number"),
    ]


def test_bad_json_pool_run_lines():
    data = (
        b'{"key": "a", "score": 0.2}\n'
        b'{"key": "b", "score": 0.2, "label": true}\n'
        b'{"key": "c", "score": 0.2, "label": 1, "payload": {}}\n'
    )
    assert problems_of(data, "run.jsonl") == [
        (1, '"label" missing'),
        (2, '"label" must be 0 or 1, not a boolean'),
        (3, 'unknown field "payload" (allowed: key, score, label)'),
    ]


def test_pool_files_take_keys_and_payloads(either_path):
    tsv = parse_pool_file(io.BytesIO(b"a\nb\n"), max_bytes=10**6, max_items=10)
    assert (tsv.keys, tsv.payloads) == (["a", "b"], {})
    jsonl = parse_pool_file(
        io.BytesIO(b'{"key": "a", "payload": {"t": 1}}\n{"key": "b"}\n'),
        max_bytes=10**6,
        max_items=10,
    )
    assert (jsonl.keys, jsonl.payloads) == (["a", "b"], {"a": {"t": 1}})
    with pytest.raises(UploadRejected) as refused:
        parse_pool_file(io.BytesIO(b"a\nb\tc\n"), max_bytes=10**6, max_items=10)
    assert [str(p) for p in refused.value.problems] == [
        "line 2: 2 tab-separated columns; expected one key per line"
    ]
