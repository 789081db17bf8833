"""Derive the small febrl4 test slice from the full febrl4 data set.

Usage::

    python tests/data/make_febrl4_slice.py SOURCE_DIR DEST_DIR [--max-record N]

e.g. ``python tests/data/make_febrl4_slice.py /work/shared/data/febrl4 tests/data/febrl4_slice``.

An febrl4 key is ``rec-N-org|rec-M-dup-K`` (left record | right record). The slice
keeps a key exactly when the left record number ``N`` is smaller than ``--max-record``
(default 400), in ``truth.tsv``, in every ``systems/*.tsv`` and in ``items.jsonl``.
Kept lines are copied byte for byte (original score text, original order). A system
left without predictions is dropped. ``DEST_DIR/README.md`` is not touched. Stale
``*.tsv`` files in ``DEST_DIR/systems`` are removed first so that a rerun reproduces
the slice exactly.
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def left_record_number(key: str) -> int:
    """Return ``N`` of a key ``rec-N-org|...``; raise ValueError on any other shape."""
    left, sep, _ = key.partition("|")
    parts = left.split("-")
    if not sep or len(parts) != 3 or parts[0] != "rec" or parts[2] != "org":
        raise ValueError(f"unexpected febrl4 key {key!r}")
    return int(parts[1])


def filter_tsv(src: str, dst: str, max_record: int) -> tuple[int, int]:
    """Copy the lines of ``src`` whose key is kept; return (kept, total) line counts."""
    with open(src, "rb") as f:
        lines = f.read().splitlines(keepends=True)
    kept = [
        line
        for line in lines
        if left_record_number(line.decode("utf-8").rstrip("\r\n").split("\t")[0]) < max_record
    ]
    if kept:
        with open(dst, "wb") as f:
            f.writelines(kept)
    return len(kept), len(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", help="full febrl4 data set directory")
    parser.add_argument("dest", help="output directory (created if needed)")
    parser.add_argument(
        "--max-record",
        type=int,
        default=400,
        help="keep keys whose left record number is below this (default 400)",
    )
    args = parser.parse_args(argv)
    src, dst, max_record = args.source, args.dest, args.max_record

    os.makedirs(os.path.join(dst, "systems"), exist_ok=True)
    for entry in os.listdir(os.path.join(dst, "systems")):
        if entry.endswith(".tsv"):
            os.remove(os.path.join(dst, "systems", entry))

    kept, total = filter_tsv(
        os.path.join(src, "truth.tsv"), os.path.join(dst, "truth.tsv"), max_record
    )
    print(f"truth.tsv: {kept} of {total} lines")

    n_systems = n_dropped = 0
    for entry in sorted(os.listdir(os.path.join(src, "systems"))):
        if not entry.endswith(".tsv"):
            continue
        kept, total = filter_tsv(
            os.path.join(src, "systems", entry), os.path.join(dst, "systems", entry), max_record
        )
        if kept:
            n_systems += 1
        else:
            n_dropped += 1
            print(f"systems/{entry}: empty after filtering, dropped")
    print(f"systems: {n_systems} kept, {n_dropped} dropped")

    n_items = n_total = 0
    with (
        open(os.path.join(src, "items.jsonl"), "rb") as fin,
        open(os.path.join(dst, "items.jsonl"), "wb") as fout,
    ):
        for line in fin:
            n_total += 1
            if left_record_number(json.loads(line)["key"]) < max_record:
                fout.write(line)
                n_items += 1
    print(f"items.jsonl: {n_items} of {n_total} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
