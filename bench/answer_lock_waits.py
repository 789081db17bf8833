"""Lock waits and CPU during ``bench/annotation_queue.py`` at saturation (issue 32, item 1).

Runs ``bench/annotation_queue.py`` (its arguments after ``--``) and, while it runs, samples every
``--interval-ms`` (50 ms):

- PostgreSQL's ``pg_stat_activity`` of the benchmark's database (from a connection to the
  ``postgres`` database, since the benchmark drops and re-creates its own): every backend that is
  active, what it waits on (``wait_event_type`` / ``wait_event``), the statement's first words,
  and, for a backend waiting on a lock, the lock it waits for (``pg_locks``, not granted: the
  relation's oid, resolved to a name after the run, and the lock type: ``tuple`` /
  ``transactionid``, i.e. a row lock held by another transaction until its commit);
- once a second, the CPU time (``/proc/<pid>/stat`` utime + stime) of the gunicorn processes
  serving the benchmark and of every PostgreSQL process, and the machine's (``/proc/stat``); the
  PostgreSQL figure includes the benchmark's set-up (migrations, items, requests), the gunicorn
  one does not (the server starts after it).

A sample is a snapshot, so ``n`` samples of a backend waiting on a lock are about ``n`` times 50 ms
of waiting (a Monte-Carlo estimate: waits shorter than 50 ms are seen in proportion to their
length). Printed and written to ``bench/results/answer_lock_waits-<commit>.json`` (or
``--json``): the benchmark's own result, the lock waits grouped by lock and by the statement
that waits, the mean number of backends active and waiting, and CPU ms per answer by process
group.

Usage::

    .venv/bin/python bench/answer_lock_waits.py \\
        --db postgres://leaderboard:leaderboard@127.0.0.1:54329/leaderboard_i32 [-- --items 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from urllib.parse import urlparse

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH_DIR)
if BENCH_DIR not in sys.path:
    sys.path.insert(0, BENCH_DIR)

CLK_TCK = os.sysconf("SC_CLK_TCK")

ACTIVITY = """
SELECT a.pid, a.state, a.wait_event_type, a.wait_event, left(a.query, 160),
       l.locktype, l.relation, l.mode
FROM pg_stat_activity a
LEFT JOIN pg_locks l ON l.pid = a.pid AND NOT l.granted
WHERE a.datname = %s AND a.pid <> pg_backend_pid()
"""


def statement_kind(sql: str) -> str:
    """The statement's verb and table, e.g. ``SELECT ... FOR UPDATE leaderboard_task``."""
    if not sql:
        return "-"
    head = sql.split(None, 1)[0].upper()
    table = re.search(r'(?:FROM|UPDATE|INTO)\s+"?(\w+)"?', sql, re.IGNORECASE)
    name = table.group(1) if table else ""
    if "FOR UPDATE" in sql.upper():
        head += " FOR UPDATE"
    elif head == "SELECT" and "COUNT(" in sql.upper():
        head = "SELECT COUNT"
    return f"{head} {name}".strip()


def process_cpu() -> dict[int, tuple[str, float]]:
    """Every process's group (gunicorn benchmark server, postgres, other) and CPU seconds."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if "annotation_queue:application" in cmd:
            group = "gunicorn (web workers)"
        elif cmd.startswith("postgres") or "/postgres" in cmd.split(" ")[0]:
            group = "postgresql"
        elif "annotation_queue.py" in cmd:
            group = "benchmark clients"
        else:
            continue
        out[int(pid)] = (group, (int(fields[11]) + int(fields[12])) / CLK_TCK)
    return out


def machine_busy() -> tuple[float, float]:
    with open("/proc/stat") as fh:
        values = [int(v) for v in fh.readline().split()[1:]]
    idle = values[3] + values[4]
    return (sum(values) - idle) / CLK_TCK, sum(values) / CLK_TCK


class Sampler(threading.Thread):
    def __init__(self, admin_url: str, dbname: str, interval: float):
        super().__init__(daemon=True)
        self.admin_url, self.dbname, self.interval = admin_url, dbname, interval
        self.stop = threading.Event()
        self.samples = 0
        self.busy_samples = 0
        self.active = 0
        self.waiting_lock = 0
        self.waits: Counter = Counter()  # (wait type, event, locktype, relation oid, statement)
        self.first_cpu: dict[int, tuple[str, float]] = {}
        self.last_cpu: dict[int, tuple[str, float]] = {}
        self.machine_first = self.machine_last = (0.0, 0.0)

    def run(self):
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            self.machine_first = machine_busy()
            self.first_cpu = process_cpu()
            while not self.stop.is_set():
                rows = conn.execute(ACTIVITY, (self.dbname,)).fetchall()
                self.samples += 1
                active = [r for r in rows if r[1] == "active"]
                self.active += len(active)
                if active:
                    self.busy_samples += 1
                for _pid, _state, wtype, wevent, query, locktype, relation, _mode in active:
                    if wtype is None:
                        key = ("on CPU (no wait event)", "", "", None, statement_kind(query))
                    else:
                        key = (wtype, wevent, locktype or "", relation, statement_kind(query))
                    if wtype == "Lock":
                        self.waiting_lock += 1
                    self.waits[key] += 1
                if self.samples % 20 == 0:  # /proc is scanned once a second: it costs CPU too
                    self.last_cpu.update(process_cpu())
                    self.machine_last = machine_busy()
                time.sleep(self.interval)
            self.machine_last = machine_busy()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--interval-ms", type=float, default=50.0)
    parser.add_argument("--json", default=None)
    parser.add_argument("bench_args", nargs="*")
    args = parser.parse_args(argv)
    import _util  # noqa: F401  (a throwaway DJANGO_SECRET_KEY for the benchmark's processes)

    parsed = urlparse(args.db)
    dbname = parsed.path.lstrip("/")
    admin = parsed._replace(path="/postgres").geturl()
    result_file = f"/tmp/answer_lock_waits-{os.getpid()}.json"
    sampler = Sampler(admin, dbname, args.interval_ms / 1000)
    sampler.start()
    started = time.perf_counter()
    code = subprocess.call(
        [
            sys.executable,
            os.path.join(BENCH_DIR, "annotation_queue.py"),
            "--db",
            args.db,
            "--json",
            result_file,
            *args.bench_args,
        ]
    )
    wall = time.perf_counter() - started
    sampler.stop.set()
    sampler.join()
    with open(result_file) as fh:
        bench = json.load(fh)
    os.remove(result_file)

    import psycopg

    names = {}
    with psycopg.connect(args.db, autocommit=True) as conn:
        for key in sampler.waits:
            if key[3] is not None and key[3] not in names:
                row = conn.execute("SELECT %s::regclass::text", (key[3],)).fetchone()
                names[key[3]] = row[0] if row else str(key[3])

    answers = bench["answers"]
    cpu: Counter = Counter()
    for pid, (group, last) in sampler.last_cpu.items():
        first = sampler.first_cpu.get(pid, (group, 0.0))[1]
        cpu[group] += last - first
    busy = sampler.machine_last[0] - sampler.machine_first[0]
    total = sampler.machine_last[1] - sampler.machine_first[1]
    interval = args.interval_ms
    waits = [
        {
            "wait": f"{w[0]} {w[1]}".strip(),
            "lock": f"{w[2]} {names.get(w[3], '')}".strip(),
            "statement": w[4],
            "samples": n,
            "backends_mean": round(n / sampler.samples, 2),
            "approx_backend_seconds": round(n * interval / 1000, 1),
        }
        for w, n in sampler.waits.most_common()
    ]
    from _util import machine

    result = {
        "benchmark": "answer_lock_waits",
        "bench_args": args.bench_args,
        "interval_ms": interval,
        "samples": sampler.samples,
        "wall_seconds_with_setup": round(wall, 1),
        "active_backends_mean": round(sampler.active / sampler.samples, 2),
        "lock_waiting_backends_mean": round(sampler.waiting_lock / sampler.samples, 2),
        "waits": waits,
        "cpu_seconds": {g: round(s, 1) for g, s in cpu.items()},
        "cpu_ms_per_answer": {g: round(s * 1000 / answers, 2) for g, s in cpu.items()},
        "machine_busy_seconds": round(busy, 1),
        "machine_cpu_seconds": round(total, 1),
        "queue_benchmark": bench,
        "machine": machine(),
    }
    print(
        f"{sampler.samples} samples; active backends mean {result['active_backends_mean']}, "
        f"waiting on a lock mean {result['lock_waiting_backends_mean']}"
    )
    for w in waits[:20]:
        print(
            f"  {w['samples']:>6} samples ({w['backends_mean']:>5} backends)  {w['wait']:28} "
            f"{w['lock']:40} {w['statement']}"
        )
    print(f"CPU ms per answer: {result['cpu_ms_per_answer']} (answers {answers})")
    print(f"machine busy {busy:.1f} s of {total:.1f} s CPU-time (setup included)")
    out = args.json or os.path.join(
        BENCH_DIR, "results", f"answer_lock_waits-{result['machine'].get('commit') or 'dev'}.json"
    )
    with open(out, "w") as fh:
        json.dump(result, fh, indent=2)
    print(f"written to {out}")
    return code


if __name__ == "__main__":
    sys.exit(main())
