"""Run and reference file parsing: every rejection with its line and message, formats, gzip."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import zlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from leaderboard.ingestion import (
    Problem,
    UploadRejected,
    human_bytes,
    parse_reference_file,
    parse_run_file,
    parser,
    reading,
)

LIMITS = {"max_bytes": 10 * 1024 * 1024, "max_predictions": 1000}


def parse(data: bytes | str, name: str = "run.tsv", **limits):
    if isinstance(data, str):
        data = data.encode()
    return parse_run_file(io.BytesIO(data), file_name=name, **{**LIMITS, **limits})


def rejected(data: bytes | str, name: str = "run.tsv", **limits) -> UploadRejected:
    with pytest.raises(UploadRejected) as info:
        parse(data, name, **limits)
    return info.value


def problems(data: bytes | str, name: str = "run.tsv", **limits) -> list[tuple]:
    return [(p.line, p.message) for p in rejected(data, name, **limits).problems]


def reference(data: bytes | str, name: str = "reference.tsv", max_items: int = 1000):
    if isinstance(data, str):
        data = data.encode()
    return parse_reference_file(
        io.BytesIO(data), file_name=name, max_bytes=1 << 20, max_items=max_items
    )


# -- accepted files -------------------------------------------------------------------------------
def test_tsv_with_scores():
    data = b"a\t0.5\nb\t1\nc\t0\n"
    run = parse(data)
    assert run.keys == ["a", "b", "c"]
    assert run.scores.dtype == np.float64
    assert run.scores.tolist() == [0.5, 1.0, 0.0]
    assert (run.format, run.compressed, run.n_bytes) == ("tsv", False, len(data))
    assert run.sha256 == hashlib.sha256(data).hexdigest()
    assert run.payloads == {}
    assert len(run) == 3


def test_tsv_without_scores_scores_one():
    run = parse("x\ny\n")
    assert run.keys == ["x", "y"] and run.scores.tolist() == [1.0, 1.0]


def test_crlf_no_final_newline_and_trailing_blank_lines_are_fine():
    assert parse(b"a\t0.1\r\nb\t0.2").keys == ["a", "b"]
    assert parse("a\t0.1\nb\t0.2\n\n  \n\n").keys == ["a", "b"]


def test_keys_are_taken_verbatim_spaces_and_unicode_included():
    run = parse("rec-1-org|rec-1-dup-0\t0.25\nclé avec espace\t1e-1\n")
    assert run.keys == ["rec-1-org|rec-1-dup-0", "clé avec espace"]
    assert run.scores.tolist() == [0.25, 0.1]


def test_bom_is_accepted_on_line_one():
    assert parse(b"\xef\xbb\xbfa\t0.5\nb\t0.5\n").keys == ["a", "b"]


def test_jsonl_with_payloads_and_scores():
    lines = [
        {"key": "a", "score": 0.25, "payload": {"left": "x", "right": [1, 2]}},
        {"key": "b", "score": 1},
        {"key": "c", "score": 0.0, "payload": None},
    ]
    run = parse("\n".join(json.dumps(o) for o in lines) + "\n", "run.jsonl")
    assert run.format == "jsonl"
    assert run.keys == ["a", "b", "c"]
    assert run.scores.tolist() == [0.25, 1.0, 0.0]
    assert run.payloads == {"a": {"left": "x", "right": [1, 2]}}


def test_jsonl_without_scores():
    run = parse('{"key": "a"}\n{"key": "b", "payload": 3}\n', "r.ndjson")
    assert run.scores.tolist() == [1.0, 1.0] and run.payloads == {"b": 3}


@pytest.mark.parametrize("name", ["", "upload", "run.dat"])
def test_format_from_first_character_when_the_name_does_not_say(name):
    assert parse('{"key": "a", "score": 0.5}\n', name).format == "jsonl"
    assert parse("a\t0.5\n", name).format == "tsv"


@pytest.mark.parametrize("name", ["run.tsv", "RUN.TXT", "run.tsv.gz", "data.bin"])
def test_gzip_is_detected_by_its_magic_bytes_whatever_the_name(name):
    data = b"a\t0.5\nb\t0.75\n"
    packed = gzip.compress(data)
    run = parse(packed, name)
    assert run.keys == ["a", "b"] and run.compressed
    assert run.n_bytes == len(packed)
    assert run.sha256 == hashlib.sha256(packed).hexdigest()


def test_gzipped_jsonl_by_name():
    run = parse(gzip.compress(b'{"key": "a", "score": 0.5}\n'), "run.jsonl.gz")
    assert run.format == "jsonl" and run.compressed


def test_a_file_bigger_than_the_read_size_is_read_in_blocks(monkeypatch):
    monkeypatch.setattr(reading, "READ_SIZE", 7)
    text = "".join(f"key-{i}\t0.{i % 10}\n" for i in range(50))
    run = parse(text)
    assert run.keys == [f"key-{i}" for i in range(50)]
    found = problems(text + "key-3\t0.1\n")
    assert found == [(51, "duplicate key 'key-3' (first on line 4)")]


# -- rejected lines -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("\t0.5", "empty key"),
        ("   \t0.5", "empty key"),
        ("k" * 513 + "\t0.5", "key is longer than 512 characters (513)"),
        ("a\x01b\t0.5", "key contains the control character U+0001 at position 2"),
        ("a\x7f\t0.5", "key contains the control character U+007F at position 2"),
        ("a\u0085\t0.5", "key contains the control character U+0085 at position 2"),
        ("a\rb\t0.5", "key contains the control character U+000D at position 2"),
        (
            "\ufeffa\t0.5",
            "key contains a byte order mark (U+FEFF), allowed only at the very start of the file",
        ),
        ("a\tabc", "score 'abc' is not a number"),
        ("a\t", "empty score"),
        ("a\t1_0", "score '1_0' is not a number"),
        ("a\t\u0660.\u0665", "score '\u0660.\u0665' is not a number"),  # Arabic-Indic 0.5
        ("a\tnan", "score 'nan' is not a number (NaN)"),
        ("a\t-inf", "score '-inf' is infinite"),
        ("a\t1.5", "score '1.5' is outside [0, 1]"),
        ("a\t-0.1", "score '-0.1' is outside [0, 1]"),
        ("a\t0.5\textra", "3 tab-separated columns; expected key or key<TAB>score"),
    ],
)
def test_tsv_line_problems(line, message):
    assert problems(f"ok\t0.5\n{line}\nok2\t0.5\n") == [(2, message)]


def test_a_512_character_key_is_fine():
    assert parse("k" * 512 + "\t0.5\n").keys == ["k" * 512]


def test_bad_utf8_says_the_line_and_the_byte():
    assert problems(b"a\t0.5\nb\xff\t0.5\n") == [
        (2, "not valid UTF-8: byte 0xFF at byte 2 of the line (offset 7 of the file)")
    ]


def test_bom_after_line_one_is_refused():
    assert problems(b"a\t0.5\n\xef\xbb\xbfb\t0.5\n") == [
        (2, "key contains a byte order mark (U+FEFF), allowed only at the very start of the file")
    ]


def test_interior_blank_lines_are_refused():
    assert problems("a\t0.5\n\n \nb\t0.5\n\n") == [
        (2, "blank line (only the end of the file may have blank lines)"),
        (3, "blank line (only the end of the file may have blank lines)"),
    ]


def test_blank_lines_between_blocks(monkeypatch):
    monkeypatch.setattr(reading, "READ_SIZE", 6)  # blocks: "a\t0.5\n", "\n", "b\t0.5\n"
    assert problems("a\t0.5\n\nb\t0.5\n") == [
        (2, "blank line (only the end of the file may have blank lines)")
    ]
    assert parse("a\t0.5\nb\t0.5\n\n\n").keys == ["a", "b"]


def test_duplicate_key_names_the_first_line():
    assert problems("a\t0.5\nb\t0.5\na\t0.1\nb\t0.2\n") == [
        (3, "duplicate key 'a' (first on line 1)"),
        (4, "duplicate key 'b' (first on line 2)"),
    ]


def test_scores_are_all_or_none():
    assert problems("a\t0.5\nb\t0.5\nc\n") == [
        (3, "score missing: line 1 has one, so every line needs one (scores are all-or-none)")
    ]
    assert problems("a\nb\t0.5\n") == [
        (2, "unexpected score: line 1 has none, so no line may have one (scores are all-or-none)")
    ]
    assert problems('{"key": "a"}\n{"key": "b", "score": 0.5}\n', "r.jsonl")[0][0] == 2


def test_tsv_named_file_with_json_content():
    assert problems('{"key": "a", "score": 0.5}\n') == [
        (1, "this looks like JSON, but the file name says TSV: name a JSON Lines file .jsonl")
    ]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"key": "b", "score": 0.5', "invalid JSON: Expecting ',' delimiter at column 26"),
        ("[1, 2]", "expected a JSON object {...}, got an array"),
        ('"b"', "expected a JSON object {...}, got the string 'b'"),
        ("3", "expected a JSON object {...}, got a number"),
        ('{"score": 0.5}', 'missing "key"'),
        ('{"key": 7, "score": 0.5}', '"key" must be a string, not a number'),
        ('{"key": null}', '"key" must be a string, not null'),
        (
            '{"key": "b", "score": 0.5, "rank": 1, "label": true}',
            'unknown fields "label", "rank" (allowed: key, score, payload)',
        ),
        ('{"key": "b", "scores": 0.5}', 'unknown field "scores" (allowed: key, score, payload)'),
        ('{"key": "b", "score": "0.5"}', "\"score\" must be a number, not the string '0.5'"),
        ('{"key": "b", "score": true}', '"score" must be a number, not a boolean'),
        ('{"key": "b", "score": null}', '"score" must be a number, not null'),
        ('{"key": "b", "score": NaN}', "score nan is not a number (NaN)"),
        ('{"key": "b", "score": Infinity}', "score inf is infinite"),
        ('{"key": "b", "score": 2}', "score 2 is outside [0, 1]"),
        ('{"key": "b", "score": 1' + "0" * 400 + "}", "score 1" + "0" * 400 + " is outside [0, 1]"),
        ('{"key": "", "score": 0.5}', "empty key"),
        (
            '{"key": "b\\tc", "score": 0.5}',
            "key contains the control character U+0009 at position 2",
        ),
    ],
)
def test_jsonl_line_problems(line, message):
    text = f'{{"key": "a", "score": 0.5}}\n{line}\n{{"key": "z", "score": 0.5}}\n'
    assert problems(text, "run.jsonl") == [(2, message)]


def test_a_json_array_file_gets_a_hint():
    found = problems('[\n{"key": "a"}\n]\n', "run.json")
    assert found[0] == (
        1,
        "invalid JSON: Expecting value at column 2 (give one JSON object per line, not an array)",
    )


def test_json_nested_too_deeply():
    line = '{"key": "a", "payload": ' + "[" * 100_000 + "]" * 100_000 + "}"
    ((number, message),) = problems(line + "\n", "run.jsonl")
    assert number == 1 and message.startswith("invalid JSON")


# -- rejected files -------------------------------------------------------------------------------
def test_empty_files():
    assert problems(b"") == [(None, "the file is empty")]
    assert problems(gzip.compress(b"")) == [(None, "the file is empty")]
    assert problems(b"\n \n\n") == [(None, "the file has no predictions (only blank lines)")]
    assert problems(b"\xef\xbb\xbf") == [(None, "the file has no predictions (only blank lines)")]


def test_over_the_size_limit():
    exc = rejected("a\t0.5\n" * 400, max_bytes=1024)
    assert exc.code == "too_large"
    assert [(p.line, p.message) for p in exc.problems] == [
        (None, "the file is larger than the limit of 1 KiB; reading stopped")
    ]


def test_a_zip_bomb_stops_once_the_decompressed_limit_is_passed(monkeypatch):
    monkeypatch.setattr(reading, "READ_SIZE", 64 * 1024)
    member = gzip.compress(b"k\t0.5\n" * 5_000_000, compresslevel=9)  # 30 MB -> ~45 KB
    bomb = member * 10  # 300 MB in ten gzip members
    exc = rejected(bomb, max_bytes=1024 * 1024, max_predictions=10**8)
    assert exc.code == "too_large"
    assert exc.problems[0].message == (
        "the file is larger than the limit of 1 MiB once decompressed; reading stopped"
    )
    assert exc.n_bytes < len(bomb) / 4  # stopped long before reading all of it


def test_more_predictions_than_allowed():
    assert problems("a\nb\nc\nd\ne\n", max_predictions=3) == [
        (None, "the file has more than 3 predictions (the limit); reading stopped at line 4")
    ]


@pytest.mark.parametrize(
    ("cut", "message"),
    [
        (-5, "the gzip data is truncated (the file ends before the end of the compressed stream)"),
        (12, "the gzip data is truncated (the file ends before the end of the compressed stream)"),
    ],
)
def test_truncated_gzip(cut, message):
    packed = gzip.compress(b"a\t0.5\n" * 100)
    assert problems(packed[:cut]) == [(None, message)]


def test_corrupt_gzip():
    packed = bytearray(gzip.compress(b"a\t0.5\nb\t0.25\n" * 50))
    packed[20:30] = b"\x00" * 10
    ((line, message),) = problems(bytes(packed))
    assert line is None and message.startswith("the gzip data is corrupt")
    ((line, message),) = problems(b"\x1f\x8bnot gzip at all")
    assert message.startswith("the gzip data is corrupt")


@pytest.mark.parametrize(
    ("head", "what"),
    [
        (b"PK\x03\x04rest", "a zip archive"),
        (b"BZh91AY&SYrest", "bzip2 data"),
        (b"\xfd7zXZ\x00rest", "xz data"),
    ],
)
def test_archives_are_named(head, what):
    assert problems(head) == [
        (None, f"the file is {what}; upload plain text (.tsv or .jsonl), optionally gzipped (.gz)")
    ]


def test_a_key_that_starts_like_bzip2_is_just_a_key():
    assert parse("BZh91 is a key\t0.5\n").keys == ["BZh91 is a key"]


def test_an_overlong_line_is_skipped_and_reported(monkeypatch):
    monkeypatch.setattr(parser, "MAX_LINE_BYTES", 100)
    monkeypatch.setattr(reading, "READ_SIZE", 16)
    found = problems("a\t0.5\n" + "x" * 500 + "\t0.5\nb\tbad\n")
    assert found == [(2, "the line is longer than 100 bytes"), (3, "score 'bad' is not a number")]


def test_problems_are_capped_but_counted():
    exc = rejected("".join(f"k{i}\tbad\n" for i in range(120)))
    assert len(exc.problems) == 50 and exc.total == 120
    assert exc.problems[0] == Problem(1, "score 'bad' is not a number")
    assert (
        str(exc)
        == exc.summary
        == ("rejected: 120 problems (first: line 1: score 'bad' is not a number)")
    )
    assert (
        rejected("a\tx\n").summary == "rejected: 1 problem (first: line 1: score 'x' is not a "
        "number)"
    )


def test_capped_problems_stay_in_line_order_with_duplicates():
    text = "".join(f"k{i}\t0.5\n" for i in range(30)) + "k0\t0.5\n" + "z\tbad\n" * 60
    exc = rejected(text, max_problems=5)
    assert exc.total == 61  # lines with a bad score are not taken, so "z" is never a duplicate
    assert [p.line for p in exc.problems] == [31, 32, 33, 34, 35]
    assert exc.problems[0].message == "duplicate key 'k0' (first on line 1)"


def test_problem_dict_and_text():
    assert Problem(3, "x").as_dict() == {"line": 3, "message": "x"}
    assert str(Problem(3, "x")) == "line 3: x" and str(Problem(None, "y")) == "y"


def test_human_bytes():
    assert human_bytes(512) == "512 bytes"
    assert human_bytes(1536) == "1.5 KiB"
    assert human_bytes(512 * 1024 * 1024) == "512 MiB"
    assert human_bytes(3 * 1024**3) == "3 GiB"


def test_text_streams_are_a_programming_error():
    with pytest.raises(TypeError):
        parse_run_file(io.StringIO("a\t0.5\n"), max_bytes=100, max_predictions=10)


# -- reference files ------------------------------------------------------------------------------
def test_reference_tsv_and_jsonl():
    ref = reference("a\tdoc1\nb\nc\tdoc2\n")
    assert ref.keys == ["a", "b", "c"] and ref.groups == ["doc1", "", "doc2"]
    ref = reference('{"key": "a", "group": "d", "payload": {"x": 1}}\n{"key": "b"}\n', "ref.jsonl")
    assert ref.groups == ["d", ""] and ref.payloads == {"a": {"x": 1}}


def test_reference_problems():
    with pytest.raises(UploadRejected) as info:
        reference("a\tg\na\th\nb\t" + "g" * 201 + "\nc\tg\x02\n\n")
    assert [(p.line, p.message) for p in info.value.problems] == [
        (2, "duplicate key 'a' (first on line 1)"),
        (3, "group is longer than 200 characters (201)"),
        (4, "group contains the control character U+0002 at position 2"),
    ]
    with pytest.raises(UploadRejected) as info:
        reference('{"key": "a", "group": 3}\n{"key": "b", "score": 1}\n', "ref.jsonl")
    assert [(p.line, p.message) for p in info.value.problems] == [
        (1, '"group" must be a string, not a number'),
        (2, 'unknown field "score" (allowed: key, group, payload)'),
    ]
    with pytest.raises(UploadRejected) as info:
        reference("\n")
    assert info.value.problems == [Problem(None, "the file has no items (only blank lines)")]
    with pytest.raises(UploadRejected) as info:
        reference("a\nb\nc\n", max_items=2)
    assert info.value.problems[0].message.startswith("the file has more than 2 items")


# -- properties -----------------------------------------------------------------------------------
_PIECES = st.sampled_from(
    [
        "a",
        "b",
        "k1",
        "rec-1|x",
        "é",
        "0.5",
        "1",
        "0",
        "nan",
        "-1",
        "1e-3",
        "\t",
        "\t",
        "\n",
        "\n",
        "\r\n",
        " ",
        "",
        "\x00",
        "\x85",
        "\ufeff",
        "{",
        "}",
        '"key"',
        ":",
        "_",
        "\u0663",
    ]
)


def _both_ways(data: bytes, kind: str, monkeypatch):
    """Parse with the fast path on and off; return comparable outcomes."""
    outcomes = []
    for fast in (True, False):
        monkeypatch.setattr(parser, "_FAST_PATH", fast)
        try:
            if kind == "run":
                run = parse(data, "run.tsv")
                outcomes.append(("ok", run.keys, run.scores.tolist()))
            else:
                ref = reference(data)
                outcomes.append(("ok", ref.keys, ref.groups))
        except UploadRejected as exc:
            outcomes.append(("rejected", [p.as_dict() for p in exc.problems], exc.total))
    return outcomes


@given(st.lists(_PIECES, max_size=60), st.sampled_from(["run", "reference"]), st.integers(4, 64))
def test_fast_and_careful_paths_agree(monkeypatch, pieces, kind, read_size):
    monkeypatch.setattr(reading, "READ_SIZE", read_size)
    fast, careful = _both_ways("".join(pieces).encode(), kind, monkeypatch)
    assert fast == careful


@given(
    st.binary(max_size=400), st.sampled_from(["run.tsv", "run.jsonl", "", "x.gz"]), st.booleans()
)
def test_arbitrary_bytes_only_ever_raise_upload_rejected(monkeypatch, data, name, packed):
    monkeypatch.setattr(reading, "READ_SIZE", 32)  # many blocks, lines across reads
    if packed:
        data = gzip.compress(data)[: max(2, len(data))]
    try:
        run = parse(data, name)
    except UploadRejected as exc:
        assert exc.total >= len(exc.problems) >= 1
        assert all(isinstance(p.line, (int, type(None))) for p in exc.problems)
        return
    assert len(run.keys) == len(set(run.keys)) == run.scores.size
    assert ((run.scores >= 0) & (run.scores <= 1)).all()


_KEYS = st.text(
    st.characters(
        blacklist_categories=("Cc", "Cs", "Zl", "Zp"), blacklist_characters="\ufeff\t\n\r"
    ),
    min_size=1,
    max_size=40,
).filter(lambda k: not k.isspace())


@given(
    st.dictionaries(_KEYS, st.floats(0, 1), min_size=1, max_size=40),
    st.sampled_from(["tsv", "jsonl"]),
    st.booleans(),
    st.integers(3, 200),
)
def test_valid_files_round_trip(monkeypatch, records, fmt, packed, read_size):
    monkeypatch.setattr(reading, "READ_SIZE", read_size)
    if fmt == "tsv":
        text = "".join(f"{k}\t{v!r}\n" for k, v in records.items())
    else:
        text = "".join(json.dumps({"key": k, "score": v}) + "\n" for k, v in records.items())
    data = text.encode()
    if packed:
        data = gzip.compress(data)
    run = parse(data, f"run.{fmt}", max_bytes=1 << 20)
    assert run.keys == list(records)
    assert run.scores.tolist() == list(records.values())
    assert run.format == fmt and run.compressed == packed


def test_zlib_errors_are_reported_not_raised():
    stream = zlib.compressobj(wbits=31)
    data = stream.compress(b"a\t0.5\n" * 10) + stream.flush()
    broken = data[:10] + bytes(b ^ 0xFF for b in data[10:20]) + data[20:]
    ((line, message),) = problems(broken)
    assert line is None and message.startswith("the gzip data is")
