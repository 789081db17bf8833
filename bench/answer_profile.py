"""Where a claim's and an answer's time goes, one client in-process (issue 32, item 1).

What runs
---------
The world of ``bench/annotation_queue.py`` (its ``prepare``: a task with ``--items`` items, one
pending request per item and ``--judgments`` per item, 40 gold items at a 5 % gold rate,
``--clients`` annotators with API tokens) in a throwaway database (PostgreSQL: dropped and
re-created; SQLite: a fresh file). Then ``--pairs`` claim + answer pairs through the real URL
stack (``django.test.Client`` with the annotators' tokens, the pipeline's Celery messages stubbed
out as in the queue benchmark), the annotators taking turns so that the second judgment of an item
resolves it about half the time. For every request it records:

- each SQL statement (``connection.execute_wrapper``), classified by what it does (row locks
  ``FOR UPDATE`` by table, reads and writes by table, savepoints) and by the part of the request
  that issued it: the service (``claim_assignments`` / ``answer_assignment``) or the response's
  ``annotator_progress`` recomputation (wrapped to label its statements, not changed);
- each statement's time around the driver call (the round trip to the database included);
- the Python process's CPU time (``time.process_time``) and wall time per request.

The first ``--warmup`` pairs are left out of the figures. Printed: per request kind, the mean
statements per request by class and by part, the mean and median CPU ms and wall ms, and the SQL
time. Written to ``bench/results/answer_profile-<commit>-<database>.json`` (or ``--json``), with
one sample request's statements verbatim.

Usage::

    .venv/bin/python bench/answer_profile.py \\
        --db postgres://leaderboard:leaderboard@127.0.0.1:54329/leaderboard_i32
    .venv/bin/python bench/answer_profile.py --db sqlite:////tmp/answer_profile.sqlite3
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import re
import statistics
import sys
import time
import uuid
from collections import Counter, defaultdict

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH_DIR)
for path in (REPO, BENCH_DIR):
    if path not in sys.path:
        sys.path.insert(0, path)

TABLE = re.compile(r'(?:FROM|UPDATE|INTO|JOIN)\s+"?(\w+)"?', re.IGNORECASE)


def classify(sql: str) -> str:
    """A short label for what one statement does: verb (lock / select / ...) and its table."""
    text = sql.strip()
    head = text.split(None, 1)[0].upper()
    if head in ("SAVEPOINT", "RELEASE", "ROLLBACK", "BEGIN", "COMMIT"):
        return "transaction: " + head.lower()
    table = TABLE.search(text)
    name = table.group(1) if table else "?"
    if "FOR UPDATE" in text.upper() or "FOR NO KEY UPDATE" in text.upper():
        return f"lock FOR UPDATE: {name}"
    if head == "SELECT" and re.match(r"SELECT\s+(?:\(1\)|1)\s+AS\s+\"a\"", text, re.IGNORECASE):
        return f"exists: {name}"
    if head == "SELECT" and "COUNT(" in text.upper():
        return f"count: {name}"
    return f"{head.lower()}: {name}"


class StatementLog:
    """Records every statement of the connection (``execute_wrapper``): its SQL, its time
    (perf_counter around the driver call: the round trip to the database included) and the
    part of the request that issued it (the innermost wrapped function running, or "other")."""

    def __init__(self):
        self.part = "other (auth, view)"
        self.rows: list[tuple[str, str, float]] = []

    def __call__(self, execute, sql, params, many, context):
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.rows.append((sql, self.part, (time.perf_counter() - start) * 1000))

    def attribute(self, module, name: str, label: str) -> None:
        """Statements issued while ``module.name`` runs are attributed to ``label``."""
        original = getattr(module, name)

        def wrapped(*args, **kwargs):
            outer, self.part = self.part, label
            try:
                return original(*args, **kwargs)
            finally:
                self.part = outer

        setattr(module, name, wrapped)

    def take(self) -> list[tuple[str, str, float]]:
        rows, self.rows = self.rows, []
        return rows


def recreate(url: str) -> None:
    if url.startswith("sqlite"):
        path = url.split("sqlite:///", 1)[1]
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
    else:
        from annotation_queue import recreate_database

        recreate_database(url)


def profile(args) -> dict:
    from annotation_queue import prepare

    slug, tokens, _truth = prepare(args.items, args.judgments, args.clients)
    from django.db import connection
    from django.test import Client

    from annotation import api
    from leaderboard import jobs

    jobs._send = lambda *a, **k: None
    log = StatementLog()
    log.attribute(api, "claim_assignments", "service")
    log.attribute(api, "answer_assignment", "service")
    log.attribute(api, "annotator_progress", "response progress")
    clients = [Client(HTTP_AUTHORIZATION=f"Token {t}", HTTP_HOST="127.0.0.1") for t in tokens]
    records: dict[str, list[dict]] = defaultdict(list)
    samples: dict[str, list[str]] = {}

    profiler = cProfile.Profile() if args.cprofile else None

    def timed(kind: str, client, path: str, body: dict, index: int):
        log.take()
        profiling = profiler is not None and index >= args.warmup
        with connection.execute_wrapper(log):
            if profiling:
                profiler.enable()
            cpu, wall = time.process_time(), time.perf_counter()
            response = client.post(path, json.dumps(body), content_type="application/json")
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            if profiling:
                profiler.disable()
        assert response.status_code in (200, 201), (path, response.status_code, response.content)
        statements = log.take()
        if index >= args.warmup:
            records[kind].append(
                {
                    "cpu_ms": cpu * 1000,
                    "wall_ms": wall * 1000,
                    "sql_ms": sum(ms for _, _, ms in statements),
                    "statements": [(classify(sql), part, ms) for sql, part, ms in statements],
                }
            )
            if index == args.warmup:
                samples[kind] = [f"[{part}] {sql[:600]}" for sql, part, _ in statements]
        return response.json()

    for i in range(args.warmup + args.pairs):
        client = clients[i % len(clients)]
        claim = timed("claim", client, f"/annotate/api/tasks/{slug}/claim", {"count": 1}, i)
        if not claim["assignments"]:
            raise SystemExit("the queue ran dry: raise --items")
        lease = claim["assignments"][0]
        body = {
            "client_id": str(uuid.uuid4()),
            "token": lease["token"],
            "answer": "correct" if i % 3 else "incorrect",
            "seconds_spent": 5.0,
        }
        timed("answer", client, "/annotate/api/answers", body, i)
    if profiler is not None:
        profiler.dump_stats(args.cprofile)
        stats = pstats.Stats(profiler)
        stats.sort_stats("cumulative").print_stats(
            r"(annotation|leaderboard|site_platform|config)/", 40
        )
        stats.sort_stats("tottime").print_stats(25)
    return summarise(records, samples)


def summarise(records, samples) -> dict:
    out = {}
    for kind, rows in records.items():
        n = len(rows)
        by_class: Counter = Counter()
        by_part: Counter = Counter()
        ms_by_class: Counter = Counter()
        for row in rows:
            for label, part, ms in row["statements"]:
                by_class[(part, label)] += 1
                by_part[part] += 1
                ms_by_class[(part, label)] += ms
        out[kind] = {
            "requests": n,
            "statements_per_request": round(sum(len(r["statements"]) for r in rows) / n, 2),
            "by_part": {p: round(c / n, 2) for p, c in by_part.most_common()},
            "by_class": [
                {
                    "part": part,
                    "class": label,
                    "per_request": round(c / n, 2),
                    "ms_per_request": round(ms_by_class[(part, label)] / n, 3),
                }
                for (part, label), c in sorted(by_class.items())
            ],
            "cpu_ms": {
                "mean": round(statistics.fmean(r["cpu_ms"] for r in rows), 2),
                "median": round(statistics.median(r["cpu_ms"] for r in rows), 2),
            },
            "wall_ms": {
                "mean": round(statistics.fmean(r["wall_ms"] for r in rows), 2),
                "median": round(statistics.median(r["wall_ms"] for r in rows), 2),
            },
            "sql_ms": {
                "mean": round(statistics.fmean(r["sql_ms"] for r in rows), 2),
                "median": round(statistics.median(r["sql_ms"] for r in rows), 2),
            },
            "sample_statements": samples.get(kind, []),
        }
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="postgres://... or sqlite:////path")
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--judgments", type=int, default=2)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--pairs", type=int, default=400)
    parser.add_argument("--warmup", type=int, default=40)
    parser.add_argument("--json", default=None)
    parser.add_argument(
        "--cprofile",
        default=None,
        metavar="PATH",
        help="also profile the measured requests' Python with cProfile: stats written to PATH, "
        "the top functions printed (cumulative, project code; then own time, all code)",
    )
    args = parser.parse_args(argv)
    os.environ.update(
        {
            "DATABASE_URL": args.db,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "API_THROTTLE_USER": "1000000/minute",
        }
    )
    import _util  # sets a throwaway DJANGO_SECRET_KEY

    recreate(args.db)
    from django.conf import settings

    database = "sqlite" if args.db.startswith("sqlite") else "postgresql"
    settings.DEBUG = False
    result = {"benchmark": "answer_profile", "database": database, **vars(args)}
    result["requests"] = profile(args)
    result["machine"] = _util.machine()
    for kind, row in result["requests"].items():
        print(
            f"{kind} ({database}): {row['statements_per_request']} statements/request "
            f"{row['by_part']}; CPU ms mean {row['cpu_ms']['mean']} median "
            f"{row['cpu_ms']['median']}; wall ms median {row['wall_ms']['median']}; "
            f"SQL ms median {row['sql_ms']['median']}"
        )
        for c in row["by_class"]:
            print(
                f"    {c['part']:20} {c['class']:55} {c['per_request']:>6} "
                f"{c['ms_per_request']:>8.3f} ms"
            )
    _util.write_result(result, args.json, benchmark="answer_profile", tail=database)
    return 0


if __name__ == "__main__":
    sys.exit(main())
