"""Speed-up from adding Celery workers, across tasks and within one task.

Planning and estimation of a task hold its engine lease, and each round depends on the earlier
ones, so within one task a second worker can only load in parallel (docs/BENCHMARKS.md). This
script measures what a second worker buys: ``--tasks`` tasks, each with ``--runs`` synthetic runs of
``--predictions`` predictions (the generator of ``bench/engine_scale.py``), are ingested with no
message sent; the database is copied once per worker count, and N workers (``--pool=solo``, the
production shape of one process per core) plan every run's first round. Wall time from the
first message to the moment no run is ``queued`` or ``planning``; the messages interleave the
tasks (the k-th run of every task, then the next); every worker starts cold (its first job on a
task builds that task's engine state) unless ``--warm``.

One task (issue 32): ``--tasks 1 --warm`` plans one task's ``--runs`` new runs, each worker's
engine state cache warmed by one estimation of the task first (as ``bench/service_scale.py``'s
speed-up did). ``--repeats`` measures every worker count that many times, alternating. Where a
plan job's time goes is read from the workers' logs: ``plan lease`` and ``plan timing`` lines
(the state loaded before the lease, waiting for it, catching up or loading under it, planning,
storing the round) and Celery's ``Retry in Ns`` lines (the back-off a busy job sleeps).

Usage::

    DATABASE_URL=postgres://leaderboard:leaderboard@127.0.0.1:54329/bench_workers \\
        .venv/bin/python bench/worker_scaling.py --json bench/results/worker_scaling.json
    # one task
    DATABASE_URL=... .venv/bin/python bench/worker_scaling.py --tasks 1 --warm --repeats 3 \\
        --json bench/results/worker_scaling-one-task.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from types import SimpleNamespace
from urllib.parse import urlparse

import numpy as np
from _util import machine, open_for_benchmark
from engine_scale import Universe
from service_scale import (
    Worker,
    ingest,
    log,
    plan_and_wait,
    recreate_database,
    setup_django,
    start_redis,
    summary,
    with_database,
)

PLAN_TIMING = re.compile(r"plan (?:timing|lease) run \d+[^:]*: (.*)$")
PHASE = re.compile(r"(\w+) ([0-9.]+) s")
RETRY = re.compile(r"evaluation\.plan_run\[[^\]]+\] retry: Retry in (\d+)s")


def build(args) -> list[int]:
    from django.contrib.auth import get_user_model

    from leaderboard import jobs
    from leaderboard.services.tasks import create_task

    organizer = get_user_model().objects.create_user("scaling-organizer")
    real_send, jobs._send = jobs._send, (lambda *a, **k: None)
    task_ids = []
    try:
        for t in range(args.tasks):
            rng = np.random.default_rng([args.seed, t])
            universe = Universe(3 * args.predictions, int(1.2 * args.predictions), 0.30, 0.55, rng)
            task = create_task(
                slug=f"scaling-{t}",
                title=f"Scaling {t}",
                organizers=[organizer],
                target_half_width=0.05,
                max_upload_bytes=1 << 40,
                max_predictions_per_run=args.predictions,
            )
            open_for_benchmark(task)
            log(f"task {t}: {args.runs} runs")
            ingest(
                SimpleNamespace(predictions=args.predictions, tmp=args.tmp),
                task,
                universe,
                rng,
                t * 1000,
                args.runs,
            )
            task_ids.append(task.pk)
    finally:
        jobs._send = real_send
    return task_ids


def warm(workers: list[Worker], task_ids: list[int]) -> None:
    """One estimation of every task on every worker's own queue: each builds its state cache."""
    from celery import current_app

    before = [len(w.task_times()) for w in workers]
    for w in workers:
        for pk in task_ids:
            current_app.send_task("evaluation.estimate_task", args=[pk], queue=w.name)
    deadline = time.monotonic() + 1800
    while any(
        len(w.task_times()) < b + len(task_ids) for w, b in zip(workers, before, strict=True)
    ):
        if time.monotonic() > deadline:
            raise RuntimeError("warm-up did not finish")
        time.sleep(0.3)


def breakdown(workers: list[Worker], skip: list[int]) -> dict:
    """Per phase of the plan jobs logged after line ``skip[k]`` of worker ``k``: their
    ``plan timing`` figures, and the back-off slept by retried jobs."""
    phases: dict[str, list[float]] = {}
    retries: list[int] = []
    for w, start in zip(workers, skip, strict=True):
        with open(w.log_path, errors="replace") as fh:
            lines = fh.readlines()[start:]
        for line in lines:
            if m := PLAN_TIMING.search(line):
                for name, seconds in PHASE.findall(m[1]):
                    phases.setdefault(name, []).append(float(seconds))
            elif m := RETRY.search(line):
                retries.append(int(m[1]))
    out = {name: summary(values) for name, values in phases.items()}
    out["retries"] = {"n": len(retries), "backoff_total_s": sum(retries)}
    return out


def log_lines(w: Worker) -> int:
    with open(w.log_path, errors="replace") as fh:
        return sum(1 for _ in fh)


def measure(args, database_url: str, n_workers: int, task_ids: list[int], tag: str) -> dict:
    import psycopg

    db = psycopg.connect(database_url, autocommit=True)
    workers = [
        Worker(
            f"s{n_workers}w{k}",
            database_url,
            os.path.join(args.tmp, f"scaling{tag}-w{k}.log"),
        )
        for k in range(n_workers)
    ]
    try:
        for w in workers:
            w.wait_ready()
        if args.warm:
            warm(workers, task_ids)
        marks = [len(w.task_times()) for w in workers]
        skip = [log_lines(w) for w in workers]
        # Submissions to different tasks interleave, as when several shared tasks are open at
        # once: the k-th run of every task, then the (k+1)-th.
        queued = [
            row[0]
            for row in db.execute(
                "SELECT id FROM leaderboard_run WHERE state = 'queued' ORDER BY "
                "row_number() OVER (PARTITION BY task_id ORDER BY id), task_id"
            )
        ]
        # Jobs of 0.1-0.3 s: look every 10 ms, not every 200 ms (the campaign's interval).
        wall = plan_and_wait(db, queued, poll=0.01)
        jobs = [t for w, m in zip(workers, marks, strict=True) for t in w.task_times()[m:]]
        return {
            "workers": n_workers,
            "runs": len(queued),
            "wall_seconds": round(wall, 2),
            "plan_jobs_s": summary(s for name, s, _ in jobs if name == "evaluation.plan_run"),
            "plan_results": sorted(r for name, _, r in jobs if name == "evaluation.plan_run"),
            "plan_phases_s": breakdown(workers, skip),
            "jobs_per_worker": [
                len(w.task_times()) - m for w, m in zip(workers, marks, strict=True)
            ],
            "peak_worker_rss_mib": [round(w.peak_rss_mib()) for w in workers],
        }
    finally:
        db.close()
        for w in workers:
            w.stop()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, default=4)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--predictions", type=int, default=200_000)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--warm", action="store_true", help="warm every worker's cache first")
    ap.add_argument("--repeats", type=int, default=1, help="alternating, per worker count")
    ap.add_argument(
        "--reuse", action="store_true", help="measure on the database a previous run built"
    )
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args(argv)
    base_url = os.environ.get("DATABASE_URL", "")
    if not base_url.startswith(("postgres://", "postgresql://")):
        ap.error("set DATABASE_URL to a PostgreSQL database (it is dropped and re-created)")
    out = {
        "machine": machine(),
        "sizes": {"tasks": args.tasks, "runs": args.runs, "predictions": args.predictions},
    }
    args.tmp = tempfile.mkdtemp(prefix="worker-scaling-")
    redis, redis_url = start_redis(args.tmp)
    try:
        if not args.reuse:
            recreate_database(base_url)
        setup_django(base_url, redis_url)
        if args.reuse:
            from leaderboard.models import Task

            task_ids = list(
                Task.objects.filter(slug__startswith="scaling-")
                .order_by("pk")
                .values_list("pk", flat=True)
            )
        else:
            task_ids = build(args)
        from django.db import connections

        connections.close_all()
        name = urlparse(base_url).path.lstrip("/")
        results = []
        for repeat in range(args.repeats):
            for n in args.workers:
                copy = with_database(base_url, f"{name}_{n}w")
                recreate_database(copy, template=name)
                log(f"{n} worker(s), repeat {repeat + 1}")
                results.append(measure(args, copy, n, task_ids, f"{n}r{repeat}"))
                log(f"  {results[-1]['wall_seconds']} s")
        out["results"] = results
        walls = {
            n: float(np.median([r["wall_seconds"] for r in results if r["workers"] == n]))
            for n in args.workers
        }
        base = walls[args.workers[0]]
        out["median_wall_seconds"] = {str(n): w for n, w in walls.items()}
        out["speedup"] = {str(n): round(base / w, 2) for n, w in walls.items()}
    finally:
        redis.terminate()
        out["logs"] = args.tmp
    print(json.dumps(out, indent=2, default=float))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2, default=float)
    return 0


if __name__ == "__main__":
    sys.exit(main())
