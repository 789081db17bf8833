"""Latency of the public board: page and API, for a task with 200 runs and 50 snapshots of history.

Target (issue 5): board page and board API p95 <= 50 ms for a task with 200 runs.

What is measured
----------------
A synthetic task (``bench-board``) with ``--runs`` runs in ``--teams`` teams and ``--snapshots``
snapshots: every snapshot has one row per run (precision, recall, F1 with intervals that narrow
as the versions go up, rank intervals per metric) and the matching ``Estimate`` rows, so a run
page has a 50-point history per metric. Then a real server (gunicorn, ``--workers`` sync
workers, the project's WSGI app, DEBUG off) serves it, and HTTP clients in this process time:

* ``board``: ``GET /tasks/bench-board/`` (latest published snapshot, sorted by F1, SVG plot);
* ``board_sorted``: the same page ``?sort=precision``;
* ``board_api``: ``GET /api/tasks/bench-board/board/`` (if the API has the route);
* ``snapshot_page``: an older snapshot's permalink page;
* ``snapshot_json``: the JSON download of the latest snapshot;
* ``run_page``: one run's page (signed in as a team member; 3 history charts of 50 points).

Each path gets ``--requests`` sequential requests after ``--warmup`` untimed ones; then
``--clients`` threads request the board page and the board API together. Times are wall-clock
per request at the client (connect + request + full body), reported as p50/p95/p99.

Snapshots never change, so a board's rendered body is cached (keyed by the snapshot, the sort and
the runs' current names); ``snapshot_page_cold`` opens every snapshot version once, so each of its
requests renders from the stored rows (a cache miss). ``in_process`` times the same views through
Django's test client in this process (no network, no other worker), wall and CPU time: CPU time
is what a request costs the server whatever else the machine is doing.

The database is ``DATABASE_URL`` (a PostgreSQL database is created if it does not exist), else a
throwaway SQLite file in a temporary directory. The task is rebuilt on every run.

Usage::

    .venv/bin/python bench/board_latency.py [--runs 200] [--snapshots 50] [--json OUT]
    DATABASE_URL=postgres://u:p@host:port/db .venv/bin/python bench/board_latency.py --json OUT
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
from _util import REPO, machine

from evaluation.core.measures import OPEN_MEASURES

TARGET_P95_MS = 50.0
SLUG = "bench-board"


def ensure_postgres_database(url: str) -> None:
    from urllib.parse import urlparse

    import psycopg

    parts = urlparse(url)
    name = parts.path.lstrip("/")
    admin = parts._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')


def setup_django(tmp: str) -> str:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    # One client sends thousands of requests a minute: lift the anonymous API throttle (the
    # throttle check itself still runs on every request).
    os.environ.setdefault("API_THROTTLE_ANON", "1000000/minute")
    if not os.environ.get("DATABASE_URL"):
        os.environ["DATABASE_URL"] = f"sqlite:///{os.path.join(tmp, 'board.sqlite3')}"
    url = os.environ["DATABASE_URL"]
    if url.startswith(("postgres://", "postgresql://")):
        ensure_postgres_database(url)
    sys.path.insert(0, REPO)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    return url


def populate(*, n_runs: int, n_teams: int, n_snapshots: int, seed: int) -> dict:
    """The synthetic task; returns ids the benchmark needs (a run, a member's session)."""
    from django.contrib.auth import (
        BACKEND_SESSION_KEY,
        HASH_SESSION_KEY,
        SESSION_KEY,
        get_user_model,
    )
    from django.contrib.sessions.backends.db import SessionStore
    from django.db import transaction
    from django.utils import timezone

    from leaderboard.models import Estimate, LeaderboardSnapshot, Run, Task, Team

    rng = np.random.default_rng(seed)
    old = Task.objects.filter(slug=SLUG).first()
    if old is not None:
        Run.objects.filter(task=old).delete()
        old.delete()
    Team.objects.filter(name__startswith="bench-team-").delete()
    User = get_user_model()
    member, _ = User.objects.get_or_create(username="bench-member")

    with transaction.atomic():
        task = Task.objects.create(slug=SLUG, title="Board latency benchmark", state="open")
        teams = [Team.objects.create(name=f"bench-team-{k:02d}") for k in range(n_teams)]
        teams[0].members.add(member)
        runs = Run.objects.bulk_create(
            [
                Run(
                    task=task,
                    team=teams[i % n_teams],
                    name=f"system {i:03d} (bench)",
                    state=Run.State.SCORED,
                    n_predictions=10_000,
                    n_requested=400,
                    n_verified=400,
                )
                for i in range(n_runs)
            ]
        )
        truth = {m: rng.uniform(0.3, 0.95, n_runs) for m in OPEN_MEASURES}
        now = timezone.now()
        for version in range(1, n_snapshots + 1):
            width = 0.25 / np.sqrt(version)  # intervals narrow as answers arrive
            rows, estimates = [], []
            values = {
                m: np.clip(truth[m] + rng.normal(0, width / 3, n_runs), 0, 1) for m in OPEN_MEASURES
            }
            for m in OPEN_MEASURES:
                order = np.argsort(-values[m])
                rank_of = np.empty(n_runs, int)
                rank_of[order] = np.arange(1, n_runs + 1)
                values[m + "_rank"] = rank_of
            for i, run in enumerate(runs):
                row = {
                    "run": run.pk,
                    "name": run.name,
                    "team": run.team.name,
                    "state": run.state,
                    "provisional": version < n_snapshots and i % 7 == 0,
                    "n_predictions": run.n_predictions,
                    "n_requested": 400,
                    "n_verified": 400,
                    "rank": {},
                }
                for m in OPEN_MEASURES:
                    v = float(values[m][i])
                    low, high = max(0.0, v - width * 1.1), min(1.0, v + width * 0.9)
                    row[m] = {
                        "value": v,
                        "low": low,
                        "high": high,
                        "labels_used": 40 * version,
                        "method": "wilson-cluster",
                    }
                    r = int(values[m + "_rank"][i])
                    row["rank"][m] = {"best": max(1, r - 3), "worst": min(n_runs, r + 3)}
                    estimates.append(
                        Estimate(
                            run=run,
                            metric=m,
                            value=v,
                            low=low,
                            high=high,
                            level=0.95,
                            labels_used=40 * version,
                            method="wilson-cluster",
                            computed_at=now,
                        )
                    )
                rows.append(row)
            snapshot = LeaderboardSnapshot.objects.create(
                task=task,
                version=version,
                created_at=now,
                engine_version="bench",
                design="default",
                labels_version=version * 100,
                reference_version=1,
                n_labels=400 * version,
                n_reference=200,
                confidence=0.95,
                published=True,
                published_at=now,
                rows=rows,
                details={
                    "ranking": {
                        "method": "pairwise intervals, Bonferroni",
                        "family_level": 0.95,
                        "interval_level": 0.9997,
                    }
                },
            )
            for estimate in estimates:
                estimate.snapshot = snapshot
            Estimate.objects.bulk_create(estimates, batch_size=2000)

    session = SessionStore()
    session[SESSION_KEY] = str(member.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = member.get_session_auth_hash()
    session.create()
    member_run = Run.objects.filter(task=task, team=teams[0]).order_by("id").first()
    return {"run": member_run.pk, "session": session.session_key}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(port: int, workers: int, log_path: str) -> subprocess.Popen:
    env = {**os.environ, "DJANGO_DEBUG": "0", "PYTHONUNBUFFERED": "1"}
    log = open(log_path, "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "config.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--log-level",
            "warning",
        ],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def fetch(port: int, path: str, cookie: str = "", *, timeout: float = 30) -> tuple[int, float, int]:
    start = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path, headers={"Cookie": cookie} if cookie else {})
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    return response.status, time.perf_counter() - start, len(body)


def wait_ready(port: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if fetch(port, "/")[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError("the server did not come up")


def summary(seconds: list[float]) -> dict:
    ms = np.asarray(seconds) * 1000.0
    return {
        "n": int(ms.size),
        "p50_ms": round(float(np.percentile(ms, 50)), 1),
        "p95_ms": round(float(np.percentile(ms, 95)), 1),
        "p99_ms": round(float(np.percentile(ms, 99)), 1),
        "mean_ms": round(float(ms.mean()), 1),
        "max_ms": round(float(ms.max()), 1),
    }


def sequential(port: int, path: str, *, n: int, warmup: int, cookie: str = "") -> dict:
    for _ in range(warmup):
        status, _, _ = fetch(port, path, cookie)
        if status != 200:
            return {"status": status}
    times, size = [], 0
    for _ in range(n):
        status, seconds, size = fetch(port, path, cookie)
        if status != 200:
            raise RuntimeError(f"{path}: HTTP {status}")
        times.append(seconds)
    return {**summary(times), "bytes": size}


def concurrent(port: int, paths: list[str], *, clients: int, n_per_client: int) -> dict:
    results: dict[str, list[float]] = {p: [] for p in paths}
    errors: list[str] = []
    lock = threading.Lock()

    def client(k: int) -> None:
        for i in range(n_per_client):
            path = paths[(i + k) % len(paths)]
            try:
                status, seconds, _ = fetch(port, path)
            except OSError as exc:
                errors.append(str(exc))
                continue
            if status != 200:
                errors.append(f"{path}: HTTP {status}")
            with lock:
                results[path].append(seconds)

    start = time.perf_counter()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    total = sum(len(v) for v in results.values())
    return {
        "clients": clients,
        "requests": total,
        "errors": errors[:5],
        "throughput_rps": round(total / elapsed, 1),
        "paths": {p: summary(v) for p, v in results.items() if v},
    }


def measure_in_process(paths: dict, *, n: int, member_run: int) -> dict:
    """Each path through Django's test client: wall and CPU milliseconds per request."""
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.test.utils import setup_test_environment

    setup_test_environment()
    client = Client()
    member = Client()
    member.force_login(get_user_model().objects.get(username="bench-member"))
    out = {}
    for name, path in paths.items():
        c = member if name == "run_page" else client
        if c.get(path).status_code != 200:
            continue
        wall, cpu = [], []
        for _ in range(n):
            w0, c0 = time.perf_counter(), time.process_time()
            c.get(path)
            wall.append(time.perf_counter() - w0)
            cpu.append(time.process_time() - c0)
        out[name] = {"wall": summary(wall), "cpu": summary(cpu)}
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--teams", type=int, default=20)
    parser.add_argument("--snapshots", type=int, default=50)
    parser.add_argument("--requests", type=int, default=200, help="sequential, per path")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--per-client", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", help="write the results to this file")
    args = parser.parse_args(argv)

    tmp = tempfile.mkdtemp(prefix="board-bench-")
    server = None
    try:
        db_url = setup_django(tmp)
        from django.db import connection

        started = time.perf_counter()
        ids = populate(
            n_runs=args.runs, n_teams=args.teams, n_snapshots=args.snapshots, seed=args.seed
        )
        build_seconds = time.perf_counter() - started
        connection.close()
        port = free_port()
        server = start_server(port, args.workers, os.path.join(tmp, "gunicorn.log"))
        wait_ready(port)
        cookie = f"sessionid={ids['session']}"
        old = max(1, args.snapshots // 2)
        paths = {
            "board": f"/tasks/{SLUG}/",
            "board_sorted": f"/tasks/{SLUG}/?sort=precision",
            "board_api": f"/api/tasks/{SLUG}/board/",
            "snapshot_page": f"/tasks/{SLUG}/snapshots/{old}/",
            "snapshot_json": f"/tasks/{SLUG}/snapshots/{args.snapshots}.json",
            "run_page": f"/runs/{ids['run']}/",
        }
        results = {}
        for name, path in paths.items():
            results[name] = sequential(
                port,
                path,
                n=args.requests,
                warmup=args.warmup,
                cookie=cookie if name == "run_page" else "",
            )
            print(f"{name:14s} {json.dumps(results[name])}", flush=True)
        cold = []
        for version in range(1, args.snapshots + 1):
            status, seconds, _ = fetch(port, f"/tasks/{SLUG}/snapshots/{version}/?sort=recall")
            if status == 200:
                cold.append(seconds)
        results["snapshot_page_cold"] = summary(cold)
        print(f"{'snapshot_page_cold':14s} {json.dumps(results['snapshot_page_cold'])}", flush=True)
        mixed = [paths["board"]]
        if "p95_ms" in results["board_api"]:
            mixed.append(paths["board_api"])
        else:
            mixed.append(paths["snapshot_json"])
        together = concurrent(port, mixed, clients=args.clients, n_per_client=args.per_client)
        print(f"concurrent     {json.dumps(together)}", flush=True)
        in_process = measure_in_process(paths, n=args.requests, member_run=ids["run"])
        print(f"in_process     {json.dumps(in_process)}", flush=True)
        vendor = connection.vendor
        report = {
            "benchmark": "board_latency",
            "database": vendor,
            "database_url": db_url.split("@")[-1] if "@" in db_url else "sqlite (temporary)",
            "runs": args.runs,
            "snapshots": args.snapshots,
            "teams": args.teams,
            "gunicorn_workers": args.workers,
            "build_seconds": round(build_seconds, 1),
            "target_p95_ms": TARGET_P95_MS,
            "sequential": results,
            "concurrent": together,
            "in_process": in_process,
            "load_average": os.getloadavg(),
            "target_met": all(
                results[k].get("p95_ms", 1e9) <= TARGET_P95_MS for k in ("board", "board_api")
            ),
            "machine": machine(),
        }
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(report, fh, indent=2)
        print(
            f"target p95 <= {TARGET_P95_MS} ms for board and board API on {vendor}: "
            f"{'met' if report['target_met'] else 'NOT met'}"
        )
        return 0
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
