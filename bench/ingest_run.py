"""Speed of run ingestion: parse + validate, then store (items, packed predictions, run queued).

Target (issue): a 1,000,000-line TSV run (keys like ``rec-123456-org|rec-123456-dup-0`` with a
score) is validated AND stored in <= 30 s.

Timed phases
------------
* ``parse_tsv`` / ``parse_gzip``: :func:`leaderboard.ingestion.parse_run_file` on the plain file and
  on its gzip variant (no database).
* ``submit_new``: :func:`leaderboard.services.ingest.submit_and_ingest` (received, then validated
  at once as the worker does) of the plain file to a fresh task: copy to storage, parse,
  1,000,000 new items, the predictions row, the run's transitions, all in one transaction.
* ``submit_known``: the gzip variant submitted by a second team to the same task: every key is
  already an item (the existing-items lookup path).

The database is the configured one (``DATABASE_URL``) if set, else a throwaway SQLite file in a
temporary directory; migrations run programmatically. The temporary task, teams and user are
deleted at the end. Celery messages are not sent (``leaderboard.jobs._send`` is stubbed).

Usage::

    .venv/bin/python bench/ingest_run.py [--lines 1000000] [--json OUT] [--profile]
    DATABASE_URL=postgres://... .venv/bin/python bench/ingest_run.py --json OUT
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sys
import tempfile
import time

import numpy as np
from _util import (
    REPO,
    Timer,
    format_hotspots,
    machine,
    open_for_benchmark,
    peak_rss_mib,
    profile_call,
)

TARGET_SECONDS = 30.0


def write_files(directory: str, n_lines: int, seed: int) -> tuple[str, str]:
    """A TSV run of ``n_lines`` febrl-like keys with 4-decimal scores, and its gzip variant."""
    rng = np.random.default_rng(seed)
    scores = rng.random(n_lines)
    plain = os.path.join(directory, "run.tsv")
    with open(plain, "w", encoding="utf-8") as fh:
        step = 100_000
        for start in range(0, n_lines, step):
            stop = min(n_lines, start + step)
            fh.write(
                "".join(f"rec-{i}-org|rec-{i}-dup-0\t{scores[i]:.4f}\n" for i in range(start, stop))
            )
    packed = plain + ".gz"
    with open(plain, "rb") as src, gzip.open(packed, "wb", compresslevel=6) as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    return plain, packed


def setup_django(tmp: str) -> str:
    """Configure and set up Django; return the database vendor."""
    sys.path.insert(0, REPO)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    if not os.environ.get("DATABASE_URL"):
        os.environ["DATABASE_URL"] = f"sqlite:///{os.path.join(tmp, 'bench.sqlite3')}"
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0, interactive=False)
    return connection.vendor


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", metavar="OUT", help="write the results as JSON to OUT")
    ap.add_argument("--profile", action="store_true", help="cProfile the first submission")
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args(argv)

    host = machine()
    timer = Timer()
    tmp = tempfile.mkdtemp(prefix="ingest-bench-")
    try:
        with timer("generate"):
            plain, packed = write_files(tmp, args.lines, args.seed)
        sizes = {"tsv": os.path.getsize(plain), "gzip": os.path.getsize(packed)}
        throwaway = not os.environ.get("DATABASE_URL")
        vendor = setup_django(tmp)

        from django.contrib.auth import get_user_model

        from leaderboard import jobs
        from leaderboard.ingestion import parse_run_file
        from leaderboard.models import Run, Task
        from leaderboard.services.ingest import submit_and_ingest
        from leaderboard.services.tasks import create_task
        from leaderboard.services.teams import create_team

        jobs._send = lambda *a, **k: None  # no Celery messages from a benchmark

        def parse(path):
            with open(path, "rb") as fh:
                return parse_run_file(
                    fh,
                    file_name=os.path.basename(path),
                    max_bytes=1 << 40,
                    max_predictions=args.lines,
                )

        with timer("parse_tsv"):
            parsed = parse(plain)
        with timer("parse_gzip"):
            parse(packed)
        assert len(parsed) == args.lines
        del parsed

        stamp = f"{os.getpid()}-{int(time.time())}"
        user = get_user_model().objects.create_user(f"bench-{stamp}")
        teams = [create_team(name=f"bench-{stamp}-{i}", members=[user]) for i in range(2)]
        task = create_task(
            slug=f"bench-ingest-{stamp}",
            title="ingestion benchmark",
            max_predictions_per_run=args.lines,
            max_upload_bytes=1 << 40,
        )
        open_for_benchmark(task)
        hotspots = {}

        def timed_submit(phase: str, path: str, team):
            """``submit_and_ingest`` of the file at ``path``, timed (profiled with --profile)."""
            with open(path, "rb") as fh, timer(phase):
                kwargs = {
                    "task": task,
                    "team": team,
                    "user": user,
                    "upload": fh,
                    "file_name": os.path.basename(path),
                }
                if not args.profile:
                    return submit_and_ingest(**kwargs)
                run, hotspots[phase], _text = profile_call(
                    submit_and_ingest, top=args.top, **kwargs
                )
                return run

        try:
            run = timed_submit("submit_new", plain, teams[0])
            assert run.n_new_items == args.lines, run.n_new_items
            again = timed_submit("submit_known", packed, teams[1])
            peak = peak_rss_mib()  # before the clean-up (deleting 1M items via the ORM is big)
            assert again.n_new_items == 0 and again.state == Run.State.QUEUED
        finally:
            if not throwaway:  # a throwaway database goes away with its directory
                Run.objects.filter(task=task).delete()
                Task.objects.filter(pk=task.pk).delete()
                for team in teams:
                    team.delete()
                user.delete()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    seconds = {k: round(v, 3) for k, v in timer.seconds.items()}
    worst = max(seconds["submit_new"], seconds["submit_known"])
    out = {
        "machine": host,
        "database": vendor,
        "lines": args.lines,
        "file_bytes": sizes,
        "seconds": seconds,
        "target_seconds": TARGET_SECONDS,
        "target_met": worst <= TARGET_SECONDS,
        "peak_rss_mib": round(peak, 1),
    }
    for phase, rows in hotspots.items():
        out[f"hotspots_{phase}"] = rows
    print(
        f"{args.lines:,} lines on {vendor}: parse {seconds['parse_tsv']:.2f} s (gzip "
        f"{seconds['parse_gzip']:.2f} s); parse + store {seconds['submit_new']:.2f} s (new "
        f"items), {seconds['submit_known']:.2f} s (known items, gzip); target "
        f"{TARGET_SECONDS:.0f} s {'met' if out['target_met'] else 'MISSED'}; peak RSS "
        f"{out['peak_rss_mib']:.0f} MiB"
    )
    for phase, rows in hotspots.items():
        print(format_hotspots(rows, f"submit_and_ingest ({phase})"))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2, default=float)
    return 0 if out["target_met"] else 1


if __name__ == "__main__":
    sys.exit(main())
