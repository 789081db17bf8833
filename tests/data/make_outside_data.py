"""Derive the small data sets of the outside check (tests/integration/test_int_outside_checks.py)
from the benchmark data, on records and items no other test reads.

Usage::

    python tests/data/make_outside_data.py SOURCE_DIR DEST_DIR [--seed 28]

e.g. ``python tests/data/make_outside_data.py /work/shared/data tests/data/outside``.
``SOURCE_DIR`` holds ``febrl4/`` and ``closed-pool/dblp-acm/`` (/work/shared/data/README.md).
Writes, replacing what is there (``DEST_DIR/README.md`` is not touched):

``febrl4/`` (an open-world task's reference sample built from documents)
    Twenty documents (``batch-01`` ... ``batch-20``), each three febrl4 source records drawn
    with ``--seed`` among records 400 to 4999 (``tests/data/febrl4_slice`` keeps records 0 to
    399). A document's candidates are every pair the blocking rule ``rule_nameaddr50_surname``
    proposes for its records, and each record's true pair (the organizer's condition: a
    document's candidates hold all its true items). ``candidates.tsv``: ``key<TAB>document``;
    ``truth.tsv``: the true candidates (only the simulated annotators read it); ``gold.tsv``:
    twelve candidates of the last four documents with their answers (``key<TAB>correct`` or
    ``incorrect``); ``run.tsv``: the ``nb_dob`` system's predictions on those records.
``dblp-acm/`` (a closed pool)
    ``pool.tsv``: the pool's 20 positive items and 180 others drawn with ``--seed``, in the
    pool file's order; ``run.tsv``: ``logreg-c1``'s ``key<TAB>score<TAB>label`` for exactly
    those items; ``truth.tsv``: the positives.
"""

from __future__ import annotations

import argparse
import gzip
import random
from pathlib import Path

BLOCKING = "rule_nameaddr50_surname"
RUN_SYSTEM = "nb_dob"
POOL_SYSTEM = "logreg-c1"
DOCUMENTS, RECORDS_PER_DOCUMENT, FIRST_RECORD, LAST_RECORD = 20, 3, 400, 4999
GOLD_DOCUMENTS, GOLD_ITEMS = 4, 12
POOL_OTHERS = 180


def left_record(key: str) -> int:
    """``N`` of an febrl4 key ``rec-N-org|...``."""
    return int(key.split("|", 1)[0].split("-")[1])


def keys_of(path: Path) -> list[str]:
    return [line.split("\t", 1)[0] for line in path.read_text().splitlines() if line.strip()]


def write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines))


def febrl4(source: Path, dest: Path, rng: random.Random) -> None:
    records = rng.sample(range(FIRST_RECORD, LAST_RECORD + 1), DOCUMENTS * RECORDS_PER_DOCUMENT)
    document = {n: f"batch-{i // RECORDS_PER_DOCUMENT + 1:02}" for i, n in enumerate(records)}
    truth = [k for k in keys_of(source / "truth.tsv") if left_record(k) in document]
    proposed = keys_of(source / "systems" / f"{BLOCKING}.tsv")
    candidates = sorted(
        {k for k in proposed if left_record(k) in document} | set(truth),
        key=lambda k: (document[left_record(k)], k),
    )
    true = set(truth)
    write(dest / "candidates.tsv", [f"{k}\t{document[left_record(k)]}" for k in candidates])
    write(dest / "truth.tsv", sorted(true))
    last = {f"batch-{d:02}" for d in range(DOCUMENTS - GOLD_DOCUMENTS + 1, DOCUMENTS + 1)}
    pool = [k for k in candidates if document[left_record(k)] in last]
    gold = sorted(rng.sample(pool, GOLD_ITEMS))
    write(dest / "gold.tsv", [f"{k}\t{'correct' if k in true else 'incorrect'}" for k in gold])
    run = (source / "systems" / f"{RUN_SYSTEM}.tsv").read_text().splitlines()
    write(dest / "run.tsv", [line for line in run if line and left_record(line) in document])


def dblp_acm(source: Path, dest: Path, rng: random.Random) -> None:
    items = keys_of(source / "items.tsv")
    positives = set(keys_of(source / "truth.tsv"))
    others = rng.sample([k for k in items if k not in positives], POOL_OTHERS)
    chosen = positives | set(others)
    write(dest / "pool.tsv", [k for k in items if k in chosen])
    write(dest / "truth.tsv", [k for k in items if k in positives])
    with gzip.open(source / "systems" / f"{POOL_SYSTEM}.tsv.gz", "rt") as lines:
        run = [line.rstrip("\n") for line in lines if line.split("\t", 1)[0] in chosen]
    write(dest / "run.tsv", run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("dest", type=Path)
    parser.add_argument("--seed", type=int, default=28)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    febrl4(args.source / "febrl4", args.dest / "febrl4", rng)
    dblp_acm(args.source / "closed-pool" / "dblp-acm", args.dest / "dblp-acm", rng)


if __name__ == "__main__":
    main()
