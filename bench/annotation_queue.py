"""Latency and throughput of the annotation queue's JSON API under concurrent annotators.

Target (issue 4): claim + answer p95 <= 100 ms with 32 concurrent clients on loopback against
PostgreSQL.

What runs
---------
1. A throwaway PostgreSQL database (``--db``, dropped and re-created, then migrated) gets a task
   with ``--items`` items (each with a small record-pair payload), one pending verification
   request per item (``--judgments`` per item, gold rate 5 % over 40 gold items), ``--clients``
   annotators and their API tokens.
2. A real server: ``gunicorn -w WORKERS -k gthread --threads THREADS`` on 127.0.0.1, serving this
   module's ``application`` (the project's WSGI app with the pipeline's Celery messages stubbed
   out, since no worker runs here: ``enqueue_estimate`` still does its debounce update on the
   task row, as in production).
3. ``--clients`` threads, each with its own keep-alive HTTP connection and token, loop: claim one
   item (``POST /annotate/api/tasks/<slug>/claim``), answer it (``POST /annotate/api/answers``,
   the item's true label 93 % of the time, "can't tell" 2 %), optionally pausing ``--think-ms``
   (uniform 0 to twice that) as a person reading the next item would, until the queue is empty. Each
   request's latency is measured from send to complete response. All clients send their first
   claim at the same instant unless ``--stagger`` delays each first claim like a pause between
   items.

Printed: p50/p95/p99/max latency of claims and answers (and of the claim + answer pair, also
without each client's first item: its first claim opens a server thread's connection), answers
per second over the whole run, empty claims, and that no request is left unresolved. Written to
``bench/results/annotation_queue-<commit>-postgresql.json`` (or ``--json``).

``--runs N`` repeats the whole benchmark N times (each run its own process, its own fresh
database and server, one after the other) and prints each run's answers/s and their spread:
min, median, max and the share of runs below 0.8x the median (issue 32's "no collapse": one run
in four once fell to half speed). Each run's JSON is written beside the summary
(``...-runs<N>.json``, its ``runs`` list), ``-run<k>`` added to the name.

Usage::

    .venv/bin/python bench/annotation_queue.py [--clients 32] [--items 2000] [--judgments 2]
        [--workers 4] [--threads 8] [--port 8765] [--runs 1] [--think-ms 0] [--stagger]
        [--db postgres://leaderboard:leaderboard@127.0.0.1:54329/leaderboard_bench_annq]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from urllib.parse import urlparse

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH_DIR)
if REPO not in sys.path:
    sys.path.insert(0, REPO)

if os.environ.get("ANNOTATION_BENCH_SERVER"):
    # Imported by gunicorn: the project's WSGI app, with no broker to send messages to.
    from config.wsgi import application  # noqa: F401
    from leaderboard import jobs

    jobs._send = lambda *args, **kwargs: None

TARGET_P95_MS = 100.0
DEFAULT_DB = "postgres://leaderboard:leaderboard@127.0.0.1:54329/leaderboard_bench_annq"


def recreate_database(url: str) -> None:
    import psycopg

    parsed = urlparse(url)
    name = parsed.path.lstrip("/")
    admin = parsed._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def prepare(n_items: int, judgments: int, n_clients: int) -> tuple[str, list[str], dict]:
    """Migrate, then create the task, items, requests, gold items, annotators and tokens."""
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, skip_checks=True)
    from django.contrib.auth import get_user_model

    from annotation.models import GoldItem
    from annotation.services import request_verification
    from leaderboard.models import Item, Task
    from leaderboard.services.tokens import create_token

    task = Task.objects.create(
        slug="bench-queue",
        title="Queue benchmark",
        judgments_per_item=judgments,
        gold_rate=0.05,
        gold_min_answers=10**6,
        question="Same paper?",
    )
    total = n_items + 40
    items = Item.objects.bulk_create(
        [
            Item(
                task=task,
                key=f"k{i}",
                index=i,
                payload={
                    "left": {"title": f"Paper {i}", "year": 2000 + i % 20},
                    "right": {"title": f"Paper {i}.", "year": 2000 + i % 20},
                },
            )
            for i in range(total)
        ],
        batch_size=2000,
    )
    Task.objects.filter(pk=task.pk).update(n_items=total)
    truth = {f"Paper {i}": i % 3 == 0 for i in range(total)}
    request_verification(task=task, item_ids=[it.pk for it in items[:n_items]], priority=1)
    GoldItem.objects.bulk_create(
        [GoldItem(task=task, item=it, answer=it.index % 3 == 0) for it in items[n_items:]]
    )
    tokens = []
    for i in range(n_clients):
        user = get_user_model().objects.create(username=f"bench-annotator-{i}")
        task.annotators.add(user)
        tokens.append(create_token(user=user).key)
    return task.slug, tokens, truth


def start_server(port: int, workers: int, threads: int, env: dict) -> subprocess.Popen:
    cmd = [
        os.path.join(os.path.dirname(sys.executable), "gunicorn"),
        "--chdir",
        BENCH_DIR,
        "--pythonpath",
        REPO,
        "-w",
        str(workers),
        "-k",
        "gthread",
        "--threads",
        str(threads),
        "-b",
        f"127.0.0.1:{port}",
        "--log-level",
        "warning",
        "--timeout",
        "120",
        "annotation_queue:application",
    ]
    server = subprocess.Popen(
        cmd, env={**env, "ANNOTATION_BENCH_SERVER": "1"}, start_new_session=True
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/annotate/api/tasks/none/progress")
            conn.getresponse().read()
            return server
        except OSError:
            time.sleep(0.3)
    server.terminate()
    raise SystemExit("the server did not start")


class Client(threading.Thread):
    def __init__(self, port, slug, token, truth, seed, start_barrier, think_ms, stagger=False):
        super().__init__(daemon=True)
        self.think = think_ms / 1000.0
        self.stagger = stagger
        self.port, self.slug, self.token, self.truth = port, slug, token, truth
        self.rng = random.Random(seed)
        self.barrier = start_barrier
        self.claims, self.answers, self.pairs = [], [], []
        self.empty = self.reconnects = 0
        self.errors = []

    def call(self, path, body):
        data = json.dumps(body)
        headers = {"Authorization": f"Token {self.token}", "Content-Type": "application/json"}
        start = time.perf_counter()
        try:
            self.conn.request("POST", path, body=data, headers=headers)
            response = self.conn.getresponse()
        except (ConnectionError, http.client.HTTPException):
            # The server closed an idle keep-alive connection: reconnect and send again (safe:
            # claims hold what they got, answers are idempotent by client id).
            self.reconnects += 1
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            start = time.perf_counter()
            self.conn.request("POST", path, body=data, headers=headers)
            response = self.conn.getresponse()
        payload = response.read()
        elapsed = (time.perf_counter() - start) * 1000
        if response.status >= 400:
            self.errors.append(f"{path}: {response.status} {payload[:200]!r}")
        return response.status, (json.loads(payload) if payload else None), elapsed

    def run(self):
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        self.barrier.wait()
        if self.stagger and self.think:
            # Annotators do not all open the page in the same millisecond: each first claim
            # comes after a pause drawn like the pauses between items.
            time.sleep(self.rng.uniform(0, 2 * self.think))
        idle = 0
        while not self.errors:
            status, claim, t_claim = self.call(
                f"/annotate/api/tasks/{self.slug}/claim", {"count": 1}
            )
            self.claims.append(t_claim)
            if status != 200:
                return
            if not claim["assignments"]:
                self.empty += 1
                if claim["progress"]["remaining"] == 0:
                    return
                idle += 1
                time.sleep(min(0.5, 0.01 * 2 ** min(idle, 6)))
                continue
            idle = 0
            lease = claim["assignments"][0]
            title = lease["display"]["rows"][0]["left"] if "rows" in lease["display"] else None
            right = self.truth.get(title, False)
            roll = self.rng.random()
            answer = (
                "cannot_tell"
                if roll < 0.02
                else ("correct" if right else "incorrect")
                if roll < 0.95
                else ("incorrect" if right else "correct")
            )
            status, _, t_answer = self.call(
                "/annotate/api/answers",
                {
                    "client_id": str(uuid.uuid4()),
                    "token": lease["token"],
                    "answer": answer,
                    "seconds_spent": round(self.rng.uniform(1, 20), 2),
                },
            )
            self.answers.append(t_answer)
            self.pairs.append(t_claim + t_answer)
            if self.think:
                time.sleep(self.rng.uniform(0, 2 * self.think))  # reading the next item


def percentiles(values) -> dict:
    if not values:
        return {}
    ordered = sorted(values)

    def pct(p):
        return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]

    return {
        "n": len(values),
        "p50": round(pct(50), 1),
        "p95": round(pct(95), 1),
        "p99": round(pct(99), 1),
        "max": round(ordered[-1], 1),
        "mean": round(statistics.fmean(values), 1),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--judgments", type=int, default=2)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument(
        "--think-ms",
        type=float,
        default=0.0,
        help="mean pause between an answer and the next claim (uniform 0 to "
        "twice this); 0: clients hammer the server back to back",
    )
    parser.add_argument(
        "--stagger",
        action="store_true",
        help="with --think-ms: each client's first claim after a pause drawn like the others "
        "(not all 32 at the same instant)",
    )
    parser.add_argument("--db", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DB))
    parser.add_argument("--json", default=None, help="where to write the results")
    parser.add_argument(
        "--runs", type=int, default=1, help="repeat the benchmark this many times (the spread)"
    )
    args = parser.parse_args(argv)
    if args.runs > 1:
        return repeat(args, list(argv if argv is not None else sys.argv[1:]))

    # Before Django starts and before the server's environment is made: sets a throwaway
    # DJANGO_SECRET_KEY.
    from _util import machine
    from cpu_split import CpuWindow

    env = {
        **os.environ,
        "DATABASE_URL": args.db,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "API_THROTTLE_USER": "1000000/minute",
    }
    os.environ.update(env)

    load_before = os.getloadavg()
    recreate_database(args.db)
    slug, tokens, truth = prepare(args.items, args.judgments, args.clients)
    server = start_server(args.port, args.workers, args.threads, env)
    try:
        barrier = threading.Barrier(args.clients + 1)
        clients = [
            Client(args.port, slug, tokens[i], truth, i, barrier, args.think_ms, args.stagger)
            for i in range(args.clients)
        ]
        for c in clients:
            c.start()
        cpu = CpuWindow(server.pid)
        barrier.wait()
        started = time.perf_counter()
        cpu.start()
        for c in clients:
            c.join()
        wall = time.perf_counter() - started
        cpu_seconds = cpu.stop()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)

    from annotation.models import GoldAnswer, Judgment, VerificationRequest

    errors = [e for c in clients for e in c.errors]
    answers = [t for c in clients for t in c.answers]
    result = {
        "benchmark": "annotation_queue",
        "database": "postgresql",
        "clients": args.clients,
        "items": args.items,
        "judgments_per_item": args.judgments,
        "think_ms": args.think_ms,
        "server": f"gunicorn -w {args.workers} -k gthread --threads {args.threads}",
        "wall_seconds": round(wall, 2),
        "answers": len(answers),
        "answers_per_second": round(len(answers) / wall, 1),
        "empty_claims": sum(c.empty for c in clients),
        "reconnects": sum(c.reconnects for c in clients),
        "claim_ms": percentiles([t for c in clients for t in c.claims]),
        "answer_ms": percentiles(answers),
        "claim_plus_answer_ms": percentiles([t for c in clients for t in c.pairs]),
        # Without each client's first item (its first claim opens the server thread's database
        # connection, and without --stagger all clients send it at the same instant).
        "claim_plus_answer_after_first_ms": percentiles([t for c in clients for t in c.pairs[1:]]),
        "stagger": args.stagger,
        # CPU seconds over the timed window: this client, the server's processes, PostgreSQL
        # (all its databases), the machine's busy and stolen time (bench/cpu_split.py).
        "cpu_seconds": cpu_seconds,
        "stored_judgments": Judgment.objects.count(),
        "stored_gold_answers": GoldAnswer.objects.count(),
        "unresolved_requests": VerificationRequest.objects.filter(state="pending").count(),
        "errors": errors[:20],
        "target_p95_ms": TARGET_P95_MS,
        "load_average_before_after": [load_before, os.getloadavg()],
        "machine": machine(),
    }
    print(
        f"{args.clients} clients (think {args.think_ms:g} ms), {args.items} items x "
        f"{args.judgments} judgments, {result['server']}, PostgreSQL on loopback"
    )
    print(f"{'':22}{'n':>7}{'p50':>9}{'p95':>9}{'p99':>9}{'max':>9}  (ms)")
    for name in (
        "claim_ms",
        "answer_ms",
        "claim_plus_answer_ms",
        "claim_plus_answer_after_first_ms",
    ):
        row = result[name]
        print(f"{name:22}{row['n']:>7}{row['p50']:>9}{row['p95']:>9}{row['p99']:>9}{row['max']:>9}")
    print(
        f"answers/s: {result['answers_per_second']} ({result['answers']} answers in "
        f"{result['wall_seconds']} s); unresolved requests: "
        f"{result['unresolved_requests']}; errors: {len(errors)}"
    )
    print("cpu s: " + ", ".join(f"{k} {v}" for k, v in cpu_seconds.items() if k != "wall"))
    out = args.json or os.path.join(
        BENCH_DIR,
        "results",
        f"annotation_queue-{result['machine'].get('commit') or 'dev'}-postgresql"
        f"-think{args.think_ms:g}.json",
    )
    with open(out, "w") as fh:
        json.dump(result, fh, indent=2)
    print(f"written to {out}")
    return 1 if errors else 0


def spread(rates: list[float]) -> dict:
    """Min, median and max of the runs' answers/s, and the share of runs below 0.8x the median."""
    median = statistics.median(rates)
    below = [r for r in rates if r < COLLAPSE_SHARE * median]
    return {
        "answers_per_second": rates,
        "min": min(rates),
        "median": median,
        "max": max(rates),
        "min_over_median": round(min(rates) / median, 3) if median else None,
        "runs_below_0.8x_median": len(below),
        "share_below_0.8x_median": round(len(below) / len(rates), 3),
    }


COLLAPSE_SHARE = 0.8


def repeat(args, argv: list[str]) -> int:
    """Run the benchmark ``args.runs`` times, each in its own process, and summarise the spread."""
    from _util import machine

    commit = machine().get("commit") or "dev"
    summary_path = args.json or os.path.join(
        BENCH_DIR,
        "results",
        f"annotation_queue-{commit}-postgresql-think{args.think_ms:g}-runs{args.runs}.json",
    )
    stem = summary_path.removesuffix(".json")
    once = _without_options(argv, ("--runs", "--json"))
    runs, failed = [], 0
    for k in range(1, args.runs + 1):
        out = f"{stem}-run{k}.json"
        print(f"--- run {k} of {args.runs}", flush=True)
        code = subprocess.call([sys.executable, os.path.abspath(__file__), *once, "--json", out])
        failed += code != 0
        with open(out) as fh:
            runs.append(json.load(fh))
    rates = [r["answers_per_second"] for r in runs]
    result = {
        "benchmark": "annotation_queue --runs",
        "runs": [os.path.basename(f"{stem}-run{k}.json") for k in range(1, args.runs + 1)],
        "spread": spread(rates),
        "answer_p50_ms": [r["answer_ms"]["p50"] for r in runs],
        "claim_plus_answer_p95_ms": [r["claim_plus_answer_ms"]["p95"] for r in runs],
        "load_average_before_after": [r["load_average_before_after"] for r in runs],
        "failed_runs": failed,
    }
    s = result["spread"]
    print(
        f"answers/s over {args.runs} runs: {', '.join(f'{r:g}' for r in rates)}; min {s['min']:g}, "
        f"median {s['median']:g}, max {s['max']:g}; min/median {s['min_over_median']}; "
        f"below 0.8x median: {s['runs_below_0.8x_median']} of {args.runs}"
    )
    with open(summary_path, "w") as fh:
        json.dump(result, fh, indent=2)
    print(f"written to {summary_path}")
    return 1 if failed else 0


def _without_options(argv: list[str], names: tuple[str, ...]) -> list[str]:
    """``argv`` without the options ``names`` (``--name value`` or ``--name=value``)."""
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in names:
            skip = True
        elif not arg.startswith(tuple(f"{n}=" for n in names)):
            kept.append(arg)
    return kept


if __name__ == "__main__":
    sys.exit(main())
