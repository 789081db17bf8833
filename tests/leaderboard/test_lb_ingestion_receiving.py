"""Receiving an upload in the web request: one pass that hashes it and bounds its sizes."""

from __future__ import annotations

import gzip
import hashlib
import io
import zlib

import pytest

from leaderboard.ingestion import Receiver, UploadRejected


def received(data: bytes, max_bytes: int, size: int = 1000) -> tuple[Receiver, bytes]:
    receiver = Receiver(io.BytesIO(data), max_bytes=max_bytes)
    out = b"".join(iter(lambda: receiver.read(size), b""))
    receiver.finish()
    return receiver, out


def test_passes_the_bytes_through_and_hashes_them():
    data = b"a\t0.5\n" * 1000
    receiver, out = received(data, max_bytes=len(data))
    assert out == data and receiver.n_bytes == len(data) and receiver.compressed is False
    assert receiver.sha256 == hashlib.sha256(data).hexdigest()
    tiny, out = received(b"a", max_bytes=10)  # shorter than the gzip magic
    assert out == b"a" and tiny.compressed is False and tiny.n_bytes == 1


def test_plain_file_over_the_limit():
    with pytest.raises(UploadRejected) as info:
        received(b"x" * 101, max_bytes=100, size=10)
    assert info.value.code == "too_large"
    assert str(info.value.problems[0]) == (
        "the file is larger than the limit of 100 bytes; reading stopped"
    )


def test_a_gzip_bomb_stops_at_the_limit_after_little_work():
    bomb = gzip.compress(b"\0" * (200 * 2**20), compresslevel=9)  # 200 MiB in ~200 KB
    receiver = Receiver(io.BytesIO(bomb), max_bytes=2**20)
    with pytest.raises(UploadRejected) as info:
        while receiver.read(64 * 1024):
            pass
    assert info.value.problems[0].message == (
        "the file is larger than the limit of 1 MiB once decompressed; reading stopped"
    )
    assert receiver.n_decompressed <= 3 * 2**20 and receiver.n_bytes < len(bomb)


def test_every_gzip_member_is_counted_and_corrupt_data_is_left_to_the_parser():
    member = gzip.compress(b"k\t0.5\n" * 100)
    receiver, _ = received(member * 3, max_bytes=10_000, size=7)
    assert receiver.compressed and receiver.n_decompressed == 1800
    with pytest.raises(UploadRejected):
        received(member * 3, max_bytes=1000)
    corrupt = member[:20] + b"\xff" * 50 + member[70:]
    receiver, out = received(corrupt, max_bytes=10_000)
    assert out == corrupt  # stored as sent; the parser words the problem
    with pytest.raises(zlib.error):
        zlib.decompress(corrupt, 16 + zlib.MAX_WBITS)


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_the_content_hash_reads_the_file_as_the_parser_does(size):
    """Decompressed, CRLF as LF, the last line's end added: the same run in any of these files
    is one content (a duplicate); its bytes keep their own hash."""
    content = b"a\t0.5\nb\t0.25\n"
    expected = hashlib.sha256(content).hexdigest()
    same = [
        content,
        content.replace(b"\n", b"\r\n"),
        content[:-1],  # no line end after the last line
        content[:-1] + b"\r",  # a last CR (the parser drops it)
        gzip.compress(content.replace(b"\n", b"\r\n")),
        gzip.compress(content[:5]) + gzip.compress(content[5:]),  # two gzip members
    ]
    for data in same:
        receiver, _ = received(data, max_bytes=1000, size=size)
        assert receiver.content_sha256 == expected, data
        assert receiver.sha256 == hashlib.sha256(data).hexdigest()
    other = [b"a\t0.5\r\nb\t0.25\n\n", b"a\t0.5\rb\t0.25\n", b"b\t0.25\na\t0.5\n", b""]
    for data in other:
        receiver, _ = received(data, max_bytes=1000, size=size)
        assert receiver.content_sha256 != expected, data
    empty, _ = received(b"", max_bytes=1000, size=size)
    assert empty.content_sha256 == hashlib.sha256(b"").hexdigest()


def test_gzip_data_that_does_not_inflate_is_hashed_as_received():
    corrupt = gzip.compress(b"a\t0.5\n" * 100)[:-30] + b"\xff" * 30
    receiver, _ = received(corrupt, max_bytes=10_000)
    assert receiver.content_sha256 == receiver.sha256 == hashlib.sha256(corrupt).hexdigest()
    truncated = gzip.compress(b"a\t0.5\n" * 100)[:20]
    receiver, _ = received(truncated, max_bytes=10_000)
    assert receiver.content_sha256 == hashlib.sha256(truncated).hexdigest()


def lines_received(data: bytes, size: int, **caps) -> Receiver:
    receiver = Receiver(io.BytesIO(data), max_bytes=10**9, **caps)
    while receiver.read(size):
        pass
    receiver.finish()
    return receiver


@pytest.mark.parametrize("size", [1, 3, 7, 1000])
def test_lines_are_counted_across_blocks_with_or_without_a_last_newline(size):
    assert lines_received(b"a\nbb\n\nccc\n", size, max_lines=4).n_lines == 4
    assert lines_received(b"a\nbb\n\nccc", size, max_lines=4).n_lines == 4
    assert lines_received(b"", size, max_lines=4).n_lines == 0
    with pytest.raises(UploadRejected) as info:
        lines_received(b"a\nbb\n\nccc\nd", size, max_lines=4)
    assert info.value.code == "too_large"
    assert info.value.problems[0].message == (
        "the file has more than the limit of 4 lines; reading stopped"
    )


@pytest.mark.parametrize("size", [1, 4, 1000])
def test_a_line_longer_than_the_cap_is_refused_with_its_number(size):
    assert lines_received(b"abcd\nefgh\nijkl", size, max_line_bytes=4).n_lines == 3
    for data, line in [
        (b"abcd\nefghi\nijkl\n", 2),
        (b"abcde\n", 1),
        (b"ab\ncd\nefghi", 3),  # the last line, without its newline
    ]:
        with pytest.raises(UploadRejected) as info:
            lines_received(data, size, max_line_bytes=4)
        problem = info.value.problems[0]
        assert (info.value.code, problem.line) == ("too_large", line), data
        assert str(problem).startswith(f"line {line}: is longer than the limit of 4 bytes")


def test_the_line_caps_count_gzip_data_decompressed_and_stop_early():
    # One 64 MiB line gzipped to ~64 KiB: refused after about a block, never held whole.
    line = gzip.compress(b"x" * (64 * 2**20), compresslevel=9)
    receiver = Receiver(io.BytesIO(line), max_bytes=10**9, max_line_bytes=2**20)
    with pytest.raises(UploadRejected) as info:
        while receiver.read(64 * 1024):
            pass
    assert info.value.problems[0].line == 1
    assert receiver.n_decompressed <= 3 * 2**20
    many = gzip.compress(b"k\n" * 1000)
    with pytest.raises(UploadRejected):
        lines_received(many, 100, max_lines=999)
    assert lines_received(many, 100, max_lines=1000).n_lines == 1000
