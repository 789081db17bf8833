"""A file in the wrong format told from its head: each format refused with its hint (by the
sniffer, the parser of every upload kind and the web request's receiver, alike), and the
look-alikes that are valid files accepted."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pytest

from leaderboard.ingestion import (
    SNIFF_BYTES,
    Receiver,
    UploadRejected,
    parse_candidate_file,
    parse_pool_file,
    parse_pool_run_file,
    parse_reference_file,
    parse_run_file,
    sniff_head,
)
from leaderboard.ingestion.sniffing import UTF16_HINT, UTF32_HINT

SYSTEM = Path(__file__).resolve().parents[1] / "data" / "febrl4_slice" / "systems" / "ecm_given.tsv"
TSV = SYSTEM.read_text()  # 272 real predictions, key<TAB>score
CSV_WITH_HEADER = "key,score\n" + TSV.replace("\t", ",")  # the file: 273 lines
CSV_HINT = "this looks like CSV (comma-separated): separate key and score with a tab"
HEADER_FIX = ", and remove the header line"


def sniffed(data: bytes | str, kind: str = "run", name: str = "run.tsv", complete: bool = True):
    """The sniffer's verdict as ``(line, message)``, or ``None``."""
    if isinstance(data, str):
        data = data.encode()
    problem = sniff_head(data, kind=kind, file_name=name, complete=complete)
    return None if problem is None else (problem.line, problem.message)


def parse_problems(data: bytes | str, name: str = "run.tsv") -> tuple[str, list[tuple]]:
    if isinstance(data, str):
        data = data.encode()
    with pytest.raises(UploadRejected) as info:
        parse_run_file(io.BytesIO(data), file_name=name, max_bytes=1 << 24, max_predictions=10**5)
    return info.value.code, [(p.line, p.message) for p in info.value.problems]


# -- each wrong format, with its hint ----------------------------------------------------------
@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (CSV_WITH_HEADER, (1, CSV_HINT + HEADER_FIX)),
        (TSV.replace("\t", ","), (1, CSV_HINT)),
        ('"key","score"\n"a,b",0.9\n"c",0.1\n', (1, CSV_HINT + HEADER_FIX)),  # quoted
        (
            TSV.replace("\t", ";").replace(".", ","),  # Excel in a decimal-comma locale
            (1, "this looks like CSV (semicolon-separated): separate key and score with a tab"),
        ),
        ("rec-1,0.9", (1, CSV_HINT)),  # one line, no newline
        ("key,score\n", (1, CSV_HINT + HEADER_FIX)),  # a header alone
        ("key\tscore\n" + TSV, (1, "this looks like a header line (key, score): remove it")),
        (
            "ID\tProbability\r\na\t0.5\r\n",
            (1, "this looks like a header line (ID, Probability): remove it"),
        ),
        ("id\tp\na\t0.5\nb\t1\n", (1, "this looks like a header line (id, p): remove it")),
        (
            TSV.replace("\t", " "),
            (1, "a space separates the columns: separate key and score with a tab"),
        ),
        (
            "key score\nrec-1 0.5\n",
            (1, "a space separates the columns: separate key and score with a tab" + HEADER_FIX),
        ),
        ("\ufeffkey,score\na,0.5\n", (1, CSV_HINT + HEADER_FIX)),  # after a UTF-8 BOM
    ],
)
def test_each_wrong_format_gets_its_hint(data, expected):
    assert sniffed(data) == expected
    # The parser leads with the same hint, alone, and reads no further.
    assert parse_problems(data) == ("wrong_format", [expected])


@pytest.mark.parametrize(
    ("encoding", "hint"),
    [
        ("utf-16", UTF16_HINT),  # with its byte order mark, as Excel's "Unicode text"
        ("utf-16-le", UTF16_HINT),  # no mark: told by every second byte being NUL
        ("utf-16-be", UTF16_HINT),
        ("utf-32", UTF32_HINT),
        ("utf-32-le", UTF32_HINT),
        ("utf-32-be", UTF32_HINT),
    ],
)
def test_wide_encodings_get_one_hint_not_a_control_character_per_line(encoding, hint):
    data = CSV_WITH_HEADER.encode(encoding)
    assert sniffed(data) == (None, hint)
    assert parse_problems(data) == ("wrong_format", [(None, hint)])
    assert parse_problems(TSV.encode(encoding)) == ("wrong_format", [(None, hint)])


def test_wide_text_with_non_latin_keys_is_still_told():
    # Cyrillic letters have no NUL byte in UTF-16, but the tabs, digits and newlines do.
    text = "".join(f"ключ-{i}\t0.{i % 10}\n" for i in range(40))
    assert sniffed(text.encode("utf-16-le")) == (None, UTF16_HINT)
    assert sniffed(text.encode("utf-16-be")) == (None, UTF16_HINT)


def test_gzipped_files_are_sniffed_decompressed():
    assert parse_problems(gzip.compress(CSV_WITH_HEADER.encode()), "run.tsv.gz") == (
        "wrong_format",
        [(1, CSV_HINT + HEADER_FIX)],
    )
    assert parse_problems(gzip.compress(TSV.encode("utf-16"))) == (
        "wrong_format",
        [(None, UTF16_HINT)],
    )


def test_the_summary_is_the_hint():
    with pytest.raises(UploadRejected) as info:
        parse_run_file(io.BytesIO(CSV_WITH_HEADER.encode()), max_bytes=1 << 20, max_predictions=999)
    assert info.value.summary == f"line 1: {CSV_HINT}{HEADER_FIX}"
    assert info.value.total == 1


# -- the look-alikes that are valid ------------------------------------------------------------
@pytest.mark.parametrize(
    ("data", "name"),
    [
        (TSV, "run.tsv"),
        ("a,b\t0.9\nc,d\t0.8\n", "run.tsv"),  # commas in keys, a tab before the score
        ("rec-1,rec-2\nrec-3,rec-4\n", "run.tsv"),  # pair keys, no score
        ("Smith, John\nDoe, Jane, Jr\n", "run.tsv"),  # commas in keys, no score
        ('{"key": "a,b", "score": 0.9}\n{"key": "c;d", "score": 0.1}\n', "run.jsonl"),
        ('{"key": "a,b", "score": 0.9}\n', "run.txt"),  # JSON by its content
        ("clé avec espace\t0.5\nNew York\t0.25\n", "run.tsv"),  # spaces in keys, tabs between
        ("item 1\nitem 2\n", "run.tsv"),  # spaces, keys only: integers end keys
        ("New York\nParis\n", "run.tsv"),
        ("a\tx\n", "run.tsv"),  # a bad score on line 1: the line's problem, not a header
        ("faulty-0\tnan\nb\t0.5\n", "run.tsv"),  # nan is a bad score, not a column name
        ("key-1\t0.5\nkey\t0.5\n", "run.tsv"),  # a key "key" below line 1
        ("", "run.tsv"),
        ("\n\n", "run.tsv"),
        ("\x0b\na", "run.tsv"),  # a first line of white space only (a vertical tab): no fields
        ("a,b\rc\nd,e\n", "run.tsv"),  # a lone carriage return inside a comma-separated field
        ("rec-1\t0.5", "run.tsv"),  # one line, no newline
        ("PK\x03\x04,1\n,2\n", "run.tsv"),  # an archive: the parser names it
    ],
)
def test_look_alikes_pass_the_sniffer(data, name):
    assert sniffed(data, name=name) is None


def test_valid_look_alikes_parse():
    assert parse_run_file(
        io.BytesIO(b"a,b\t0.9\nc,d\t0.8\n"), max_bytes=1 << 20, max_predictions=9
    ).keys == ["a,b", "c,d"]
    assert parse_run_file(
        io.BytesIO(b"rec-1,rec-2\nrec-3,rec-4\n"), max_bytes=1 << 20, max_predictions=9
    ).keys == ["rec-1,rec-2", "rec-3,rec-4"]
    assert (
        len(parse_run_file(io.BytesIO(TSV.encode()), max_bytes=1 << 20, max_predictions=999)) == 272
    )


def test_only_the_complete_lines_of_the_head_are_read():
    # A valid head and CSV after it: the head passes; the lines are the parser's to judge.
    lines = TSV.splitlines(keepends=True)
    head = "".join(lines * 80)[:SNIFF_BYTES]
    assert len(head.encode()) == SNIFF_BYTES
    assert sniffed(head + "junk,0.5\n" * 10) is None
    # A line cut by the head's end is not read: "x,0" is not a CSV line to judge by.
    assert sniffed("a,0.5\nb,0.25\nx", complete=False) == (1, CSV_HINT)
    assert sniffed("a\t0.5\nb,0", complete=False) is None
    assert sniffed("a\t0.5\nb,0", complete=True) is None  # a tab: the parser's per-line problem


# -- the other upload kinds --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("parse", "kind", "data", "expected"),
    [
        (
            parse_reference_file,
            "reference",
            "key,group\nrec-1,doc-1\nrec-2,doc-1\n",
            (
                1,
                "this looks like CSV (comma-separated): separate key and group with a tab"
                + HEADER_FIX,
            ),
        ),
        (
            parse_reference_file,
            "reference",
            "key\tgroup\nrec-1\tdoc-1\n",
            (1, "this looks like a header line (key, group): remove it"),
        ),
        (
            parse_candidate_file,
            "candidates",
            "rec-1,doc-1\nrec-2,doc-2\n",
            (1, "this looks like CSV (comma-separated): separate key and document with a tab"),
        ),
        (
            parse_candidate_file,
            "candidates",
            "rec-1 doc-1\nrec-2 doc-2\n",
            (1, "a space separates the columns: separate key and document with a tab"),
        ),
        (
            parse_pool_file,
            "pool",
            "key\np1\np2\n",
            (1, "this looks like a header line (key): remove it"),
        ),
        (
            parse_pool_run_file,
            "pool_run",
            "p1,0.9,1\np2,0.1,0\n",
            (1, "this looks like CSV (comma-separated): separate key, score and label with tabs"),
        ),
        (
            parse_pool_run_file,
            "pool_run",
            "p1 0.9 1\np2 0.1 0\n",
            (1, "spaces separate the columns: separate key, score and label with tabs"),
        ),
        (parse_pool_file, "pool", "p1\np2\n".encode("utf-16"), (None, UTF16_HINT)),
    ],
)
def test_every_upload_kind_is_sniffed(parse, kind, data, expected):
    data = data.encode() if isinstance(data, str) else data
    assert sniffed(data, kind=kind) == expected
    with pytest.raises(UploadRejected) as info:
        parse(io.BytesIO(data), file_name="f.tsv", max_bytes=1 << 20, max_items=99)
    assert info.value.code == "wrong_format"
    assert [(p.line, p.message) for p in info.value.problems] == [expected]


@pytest.mark.parametrize(
    ("kind", "data"),
    [
        ("reference", "rec-1,doc-1\nrec-2,doc-1\n"),  # keys with commas, no group: valid
        ("pool", "Smith, John\nDoe, Jane\n"),
        ("pool", "a b\nc d\n"),
        ("reference", "a b\tdoc\n"),
    ],
)
def test_text_layouts_refuse_only_on_clear_evidence(kind, data):
    assert sniffed(data, kind=kind) is None


# -- the receiver: the web request's pass over a run -------------------------------------------
def received(data: bytes, kind: str | None = "run", name: str = "run.tsv") -> Receiver:
    receiver = Receiver(io.BytesIO(data), max_bytes=1 << 30, kind=kind, file_name=name)
    while receiver.read(4096):
        pass
    receiver.finish()
    return receiver


def test_the_receiver_refuses_as_soon_as_the_head_is_in():
    data = CSV_WITH_HEADER.encode() * 200  # ~1.8 MB
    with pytest.raises(UploadRejected) as info:
        received(data)
    exc = info.value
    assert (exc.code, exc.summary) == ("wrong_format", f"line 1: {CSV_HINT}{HEADER_FIX}")
    assert exc.n_bytes <= SNIFF_BYTES + 4096  # it stopped reading there


@pytest.mark.parametrize(
    "data",
    [
        CSV_WITH_HEADER.encode(),  # shorter than the head: judged by finish()
        gzip.compress(CSV_WITH_HEADER.encode() * 50, mtime=0),
        TSV.encode("utf-16"),
        b"a,0.5",
    ],
)
def test_the_receiver_and_the_parser_agree(data):
    with pytest.raises(UploadRejected) as at_upload:
        received(data)
    with pytest.raises(UploadRejected) as parsed:
        parse_run_file(io.BytesIO(data), max_bytes=1 << 30, max_predictions=10**6)
    assert at_upload.value.problems == parsed.value.problems
    assert at_upload.value.code == parsed.value.code == "wrong_format"


@pytest.mark.parametrize(
    ("data", "kind", "name"),
    [
        (TSV.encode(), "run", "run.tsv"),
        (gzip.compress(TSV.encode(), mtime=0), "run", "run.tsv.gz"),
        (b'{"key": "a,b", "score": 0.9}\n', "run", "run.jsonl"),
        (b"", "run", "run.tsv"),
        (b"p1\t0.9\t1\n", "pool_run", "run.tsv"),
        (CSV_WITH_HEADER.encode(), None, "run.tsv"),  # no kind: only sizes are checked
        (
            gzip.compress(CSV_WITH_HEADER.encode(), mtime=0)[:40],
            "run",
            "run.tsv",
        ),  # truncated: parser's
    ],
)
def test_the_receiver_passes_valid_files(data, kind, name):
    assert received(data, kind=kind, name=name).n_bytes == len(data)


# -- past the head: the problem of each line says which separator it used ---------------------
def test_a_line_with_a_glued_score_says_so():
    good = "".join(f"key-{i}\t0.5\n" for i in range(2000))  # a valid head: the sniffer passes
    code, problems = parse_problems(good + "late-1,0.25\nlate-2 0.75\nlate-3\n")
    all_or_none = "score missing: line 1 has one, so every line needs one (scores are all-or-none)"
    assert code == "rejected" and problems == [
        (2001, f"{all_or_none} (a comma separates the key from its value on this line: use a tab)"),
        (2002, f"{all_or_none} (a space separates the key from its value on this line: use a tab)"),
        (2003, all_or_none),
    ]
    with pytest.raises(UploadRejected) as info:
        parse_candidate_file(
            io.BytesIO("".join(f"c{i}\td\n" for i in range(2000)).encode() + b"c-x;0.5\n"),
            max_bytes=1 << 20,
            max_items=10**4,
        )
    assert [(p.line, p.message) for p in info.value.problems] == [
        (
            2001,
            "document missing: expected key<TAB>document (a semicolon separates the key from its "
            "value on this line: use a tab)",
        )
    ]
