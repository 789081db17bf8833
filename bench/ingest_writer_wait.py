"""How long other writers wait on SQLite while a maximum-size run is ingested (issue 29, N9), or a
closed pool of that size is loaded.

Target: while a worker validates and stores a run of the task's maximum size (5,000,000
predictions by default), another process's writes (a sign-in's ``last_login``, in its own
transaction, as the web process writes them) wait at most about a second, and none fails.

What it does
------------
1. A throwaway SQLite file (the embedded default's settings: ``timeout`` 20 s, transactions
   ``IMMEDIATE``), migrated; an open task at the default limits, two teams.
2. A second process (``--probe``) writes one row every 50 ms (``UPDATE auth_user SET
   last_login``, one transaction each) and reads one row every 50 ms in between, timing each,
   from before the first ingestion until after the last.
3. In this process, as the worker does (:func:`leaderboard.services.ingest.submit_and_ingest`):
   ``new``, a run of ``--lines`` keys none of which is an item yet (the task's first run), then
   ``known``, the gzip of a second run over the same keys from the other team (every key known);
   then ``pool``, a closed pool of ``--lines`` keys (the first run's keys, one per line) received
   and loaded as an organizer's upload is (:func:`annotation.services.load_organizer_upload`,
   the worker's job). ``--phases`` runs some of them.
4. The probe's longest write wait, its 99th percentile and the failed writes (``database is
   locked`` after the 20 s timeout), per phase; the same for reads. And the ingestion's own
   write transactions (``BEGIN IMMEDIATE`` to ``COMMIT``, which is how long SQLite's write lock
   is held): how many and the longest, the other writers' wait without the machine's noise.

Usage::

    .venv/bin/python bench/ingest_writer_wait.py --json bench/results/ingest_writer_wait-X.json
    # smaller: --lines 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from _util import REPO, machine, open_for_benchmark, peak_rss_mib

TARGET_WAIT_SECONDS = 1.0
PROBE_PERIOD = 0.05


def setup_django(database: str) -> None:
    sys.path.insert(0, REPO)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    os.environ["DATABASE_URL"] = f"sqlite:///{database}"
    import django

    django.setup()


def probe(database: str, user_id: int, out_path: str, stop_path: str) -> None:
    """Write and read, one at a time, timing each, until ``stop_path`` exists."""
    setup_django(database)
    from django.contrib.auth import get_user_model
    from django.db import OperationalError, transaction
    from django.utils import timezone

    users = get_user_model().objects
    samples: list[tuple[float, str, float, bool]] = []  # (started, kind, seconds, ok)
    while not os.path.exists(stop_path):
        for kind in ("write", "read"):
            started = time.time()
            ok = True
            try:
                if kind == "write":
                    with transaction.atomic():
                        users.filter(pk=user_id).update(last_login=timezone.now())
                else:
                    users.filter(pk=user_id).values_list("last_login", flat=True).get()
            except OperationalError:
                ok = False
            samples.append((started, kind, time.time() - started, ok))
            time.sleep(PROBE_PERIOD)
    with open(out_path, "w") as fh:
        json.dump(samples, fh)


class TransactionClock:
    """Times this process's write transactions on ``connection`` (begin to commit or rollback)."""

    def __init__(self, connection):
        self.seconds: list[float] = []
        self._began = 0.0
        begin, commit, rollback = (
            connection._start_transaction_under_autocommit,
            connection._commit,
            connection._rollback,
        )

        def timed_begin():
            begin()
            self._began = time.perf_counter()

        def timed_end(end):
            def ended():
                try:
                    return end()
                finally:
                    if self._began:
                        self.seconds.append(time.perf_counter() - self._began)
                        self._began = 0.0

            return ended

        connection._start_transaction_under_autocommit = timed_begin
        connection._commit = timed_end(commit)
        connection._rollback = timed_end(rollback)

    def take(self) -> dict:
        in_order, self.seconds = self.seconds, []
        seconds = sorted(in_order)
        return {
            "n": len(seconds),
            "last_s": round(in_order[-1], 3) if in_order else None,  # the run queued
            "longest_s": round(seconds[-1], 3) if seconds else None,
            "second_longest_s": round(seconds[-2], 3) if len(seconds) > 1 else None,
            "median_s": round(seconds[len(seconds) // 2], 3) if seconds else None,
        }


def summarise(samples: list, start: float, stop: float) -> dict:
    """Waits of the probe's operations that overlap ``[start, stop]``."""
    out = {}
    for kind in ("write", "read"):
        during = [
            (s, ok) for at, k, s, ok in samples if k == kind and at <= stop and at + s >= start
        ]
        waits = sorted(s for s, _ in during)
        failed = sum(1 for _, ok in during if not ok)
        if not waits:
            out[kind] = {"n": 0}
            continue
        out[kind] = {
            "n": len(waits),
            "max_s": round(waits[-1], 3),
            "p99_s": round(waits[min(len(waits) - 1, int(0.99 * len(waits)))], 3),
            "p50_s": round(waits[len(waits) // 2], 4),
            "over_1s": sum(1 for w in waits if w > 1.0),
            "failed": failed,
        }
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=5_000_000)
    ap.add_argument("--json", metavar="OUT", help="write the results as JSON to OUT")
    ap.add_argument("--phases", default="new,known,pool", help="comma-separated, in this order")
    ap.add_argument(
        "--probe", nargs=4, metavar=("DB", "USER", "OUT", "STOP"), help=argparse.SUPPRESS
    )
    args = ap.parse_args(argv)
    if args.probe:
        db, user, out, stop = args.probe
        probe(db, int(user), out, stop)
        return 0

    from ingest_run import write_files

    tmp = tempfile.mkdtemp(prefix="ingest-wait-")
    proc = None
    try:
        plain, _ = write_files(tmp, args.lines, seed=1)
        os.makedirs(os.path.join(tmp, "b"))
        _, packed = write_files(os.path.join(tmp, "b"), args.lines, seed=2)
        database = os.path.join(tmp, "bench.sqlite3")
        os.environ["MEDIA_ROOT"] = os.path.join(tmp, "media")
        setup_django(database)
        from django.contrib.auth import get_user_model
        from django.core.management import call_command
        from django.db import connection

        from annotation.services import load_organizer_upload
        from leaderboard import jobs
        from leaderboard.models import OrganizerUpload, Run, Task
        from leaderboard.services.ingest import submit_and_ingest
        from leaderboard.services.organizer_uploads import receive_upload
        from leaderboard.services.tasks import create_task
        from leaderboard.services.teams import create_team

        call_command("migrate", verbosity=0, interactive=False)
        jobs._send = lambda *a, **k: None  # no Celery messages from a benchmark
        user = get_user_model().objects.create_user("bench-ingest")
        bystander = get_user_model().objects.create_user("bench-bystander")
        teams = [create_team(name=f"bench-team-{i}", members=[user]) for i in range(2)]
        task = open_for_benchmark(create_task(slug="bench-ingest-wait", title="Ingestion wait"))
        probe_out, stop = os.path.join(tmp, "probe.json"), os.path.join(tmp, "stop")
        proc = subprocess.Popen(
            [sys.executable, __file__, "--probe", database, str(bystander.pk), probe_out, stop],
            cwd=REPO,
        )
        time.sleep(3.0)  # the probe's Django set-up, then a quiet baseline
        phases = {}
        clock = TransactionClock(connection)
        wanted = args.phases.split(",")
        for phase, path, team in (("new", plain, teams[0]), ("known", packed, teams[1])):
            if phase not in wanted:
                continue
            clock.take()
            started = time.time()
            with open(path, "rb") as fh:
                run = submit_and_ingest(
                    task=task, team=team, user=user, upload=fh, file_name=os.path.basename(path)
                )
            assert run.state == Run.State.QUEUED and run.n_predictions == args.lines, run.reason
            phases[phase] = {
                "start": started,
                "stop": time.time(),
                "n_new_items": run.n_new_items,
                "transactions": clock.take(),
            }
            time.sleep(1.0)
        if "pool" in wanted:
            pool_file = os.path.join(tmp, "pool.tsv")
            with open(plain, "rb") as src, open(pool_file, "wb") as dst:
                dst.writelines(line.split(b"\t", 1)[0] + b"\n" for line in src)
            pool_task = create_task(
                slug="bench-pool-wait",
                title="Pool wait",
                kind=Task.Kind.CLOSED_POOL,
            )
            organizer = get_user_model().objects.create_user("bench-organizer")
            clock.take()
            started = time.time()
            with open(pool_file, "rb") as fh:
                upload = receive_upload(
                    task=pool_task, user=organizer, kind="pool", upload=fh, file_name="pool.tsv"
                )
            assert load_organizer_upload(upload.pk) == OrganizerUpload.State.LOADED
            pool_task.refresh_from_db()
            assert pool_task.has_pool and pool_task.n_items == args.lines
            phases["pool"] = {
                "start": started,
                "stop": time.time(),
                "n_new_items": pool_task.n_items,
                "transactions": clock.take(),
            }
            time.sleep(1.0)
        open(stop, "w").close()
        proc.wait(60)
        with open(probe_out) as fh:
            samples = json.load(fh)
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
        shutil.rmtree(tmp, ignore_errors=True)

    out = {
        "benchmark": "ingest_writer_wait",
        "machine": machine(),
        "database": "sqlite (timeout 20 s, IMMEDIATE transactions)",
        "lines": args.lines,
        "target_wait_seconds": TARGET_WAIT_SECONDS,
        "peak_rss_mib": round(peak_rss_mib(), 1),
        "phases": {},
    }
    for phase, p in phases.items():
        out["phases"][phase] = {
            "seconds": round(p["stop"] - p["start"], 1),
            "n_new_items": p["n_new_items"],
            "ingestion_transactions": p["transactions"],
            **summarise(samples, p["start"], p["stop"]),
        }
    worst = max(p["write"].get("max_s", 0.0) for p in out["phases"].values())
    failed = sum(p["write"].get("failed", 0) for p in out["phases"].values())
    out["target_met"] = worst <= TARGET_WAIT_SECONDS and not failed
    print(json.dumps(out, indent=2))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2)
    return 0 if out["target_met"] else 1


if __name__ == "__main__":
    sys.exit(main())
