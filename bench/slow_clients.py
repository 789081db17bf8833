"""Slow clients must not stall the web server `make run` starts (issue 29, F14).

The outside probe held about 64 connections open, each sending one header line a second, and an
anonymous request waited 147 s for its answer: gunicorn's ``gthread`` worker gives a connection
one of its threads as soon as its first bytes arrive, and the thread then waits for the rest of
the request's head, so 64 slow heads held the 2 x 16 threads.

What it does
------------
1. A throwaway SQLite database (migrated) in a temporary directory, DEBUG off.
2. The web server exactly as ``manage.py demo`` (``make run``) starts it: the command of
   ``evaluation/management/commands/_demo_processes.py::web_command`` (``--worker-class`` swaps
   its worker class, e.g. ``gthread`` for the setup before the fix).
3. ``--slow`` connections that send a request line, then one header line every ``--interval``
   seconds and never finish their head (a connection the server closes is opened again, as an
   attacker would).
4. Meanwhile one client requests the home page anonymously every ``--probe-every`` seconds (one
   request at a time, 300 s client timeout) for ``--duration`` seconds; each request's wall time
   is its latency.

Target: while the slow connections are held, the home page answers with p95 <= 1 s and nothing
fails.

Usage::

    .venv/bin/python bench/slow_clients.py --json bench/results/slow_clients-after.json
    .venv/bin/python bench/slow_clients.py --worker-class gthread \\
        --json bench/results/slow_clients-before.json
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

from _util import REPO, code_version, machine
from board_latency import fetch, free_port, summary, wait_ready

TARGET_P95_S = 1.0


def prepare_database(tmp: str) -> dict[str, str]:
    """The environment of the server: a migrated SQLite file, DEBUG off."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": f"sqlite:///{os.path.join(tmp, 'slow.sqlite3')}",
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": os.environ.get("DJANGO_SECRET_KEY") or "bench-" + os.urandom(16).hex(),
        "MEDIA_ROOT": os.path.join(tmp, "media"),
        "PYTHONUNBUFFERED": "1",
    }
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--verbosity", "0"], cwd=REPO, env=env, check=True
    )
    return env


def server_command(port: int, worker_class: str | None) -> list[str]:
    """The demo's web command, with its worker class swapped when asked."""
    sys.path.insert(0, REPO)
    from evaluation.management.commands._demo_processes import web_command

    argv = web_command("127.0.0.1", port)
    if worker_class:
        argv[argv.index("--worker-class") + 1] = worker_class
    return argv


class SlowClient(threading.Thread):
    """One connection that sends its request head a line at a time and never completes it."""

    def __init__(self, port: int, interval: float, stop: threading.Event, number: int):
        super().__init__(daemon=True)
        self.port, self.interval, self.stop, self.number = port, interval, stop, number
        self.connections = 0
        self.lines = 0

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=5) as sock:
                    self.connections += 1
                    sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                    line = 0
                    while not self.stop.wait(self.interval):
                        line += 1
                        sock.sendall(f"X-Slow-{self.number}-{line}: {line}\r\n".encode())
                        self.lines += 1
            except OSError:
                self.stop.wait(0.1)  # closed by the server: open another, as an attacker would


def probe(port: int, *, duration: float, every: float) -> dict:
    """Anonymous home-page requests, one at a time, for ``duration`` seconds."""
    latencies, failures, statuses = [], 0, {}
    deadline = time.monotonic() + duration
    while time.monotonic() < deadline:
        started = time.perf_counter()
        try:
            status, seconds, _ = fetch(port, "/", timeout=300)
            statuses[status] = statuses.get(status, 0) + 1
            latencies.append(seconds)
            if status != 200:
                failures += 1
        except OSError:
            failures += 1
            latencies.append(time.perf_counter() - started)
        time.sleep(max(0.0, every - (time.perf_counter() - started)))
    return {**summary(latencies), "failures": failures, "statuses": statuses}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slow", type=int, default=64, help="slow connections")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between lines")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of probing")
    parser.add_argument("--probe-every", type=float, default=0.5)
    parser.add_argument("--worker-class", help="swap the demo command's gunicorn worker class")
    parser.add_argument("--json", help="write the results to this file")
    args = parser.parse_args(argv)

    tmp = tempfile.mkdtemp(prefix="slow-clients-")
    env = prepare_database(tmp)
    port = free_port()
    command = server_command(port, args.worker_class)
    log = open(os.path.join(tmp, "web.log"), "w")  # noqa: SIM115 - closed with the process
    server = subprocess.Popen(
        command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    stop = threading.Event()
    clients = [SlowClient(port, args.interval, stop, i) for i in range(args.slow)]
    try:
        wait_ready(port)
        for _ in range(4):  # each worker's first request imports the views: not timed
            fetch(port, "/")
        quiet = probe(port, duration=3.0, every=args.probe_every)
        print(f"without slow clients: {json.dumps(quiet)}", flush=True)
        for client in clients:
            client.start()
        time.sleep(2 * args.interval)  # every slow head under way
        held = probe(port, duration=args.duration, every=args.probe_every)
        print(f"with {args.slow} slow clients: {json.dumps(held)}", flush=True)
    finally:
        stop.set()
        os.killpg(server.pid, 15)
        server.wait(timeout=30)
        log.close()
    report = {
        "benchmark": "slow_clients",
        "command": " ".join(command[1:]),
        "slow_connections": args.slow,
        "line_interval_s": args.interval,
        "duration_s": args.duration,
        "without_slow_clients": quiet,
        "with_slow_clients": held,
        "slow_connections_opened": sum(c.connections for c in clients),
        "slow_lines_sent": sum(c.lines for c in clients),
        "target_p95_s": TARGET_P95_S,
        "target_met": held["failures"] == 0 and held["p95_ms"] <= TARGET_P95_S * 1000,
        "load_average": os.getloadavg(),
        "code": code_version(),
        "machine": machine(),
    }
    print(
        f"slow connections opened {report['slow_connections_opened']}, "
        f"target p95 <= {TARGET_P95_S} s and no failure: "
        f"{'met' if report['target_met'] else 'NOT met'}"
    )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
