"""The whole service at scale, on PostgreSQL + Redis with real Celery worker processes.

Target (issue 6): a task of 100 runs x 1,000,000 predictions (synthetic, overlapping like real
submissions) and ~50,000 verified items; report ingest time per run, planning time per run, full
re-estimation time, peak worker memory, leaderboard latency, and the speed-up from 1 to 2 Celery
workers. The engine targets (issue 2) are estimate <= 2 s and plan <= 1 s at this size; the board
target (issue 5) is p95 <= 50 ms.

What it does
------------
1. **Ingest**: the synthetic runs of ``bench/engine_scale.py`` (a universe of 3 x predictions
   items, a shared core, run-specific precision, ties and constant scores), each written as a
   1,000,000-line TSV file and stored by ``leaderboard.services.ingest.submit_and_ingest``
   (parse, validate, new items, packed predictions), one team per run; a reference sample of
   1,000 true items. No message is sent during ingestion.
2. **Campaign**: one worker (``celery -A config worker --pool=solo``) plans every run; this
   process answers every pending request from the synthetic truth through the annotation
   service (``submit_judgment``, one judgment per item) until every run is final. The task's
   target (±0.008) and first-batch size (1,024) are those that leave ~50,000 verified items
   in ``engine_scale.py``. Planning and estimation times are the worker's own task times
   (Celery's ``succeeded in`` log lines); peak worker memory is the worker's ``VmHWM``.
3. **Re-estimation**: ``estimate_task`` of the finished task in this process, with the engine
   state cache empty (cold: the whole state built from the database) and warm.
4. **Board latency**: gunicorn (2 workers) serving the board page and the board API,
   sequential requests on loopback.
5. **Speed-up**: ``--speedup-runs`` more runs are ingested, the database is copied, and their
   first rounds are planned (plus the estimations that follow) by 1 worker on one copy and by 2
   workers on the other, each worker warmed by one estimation first; wall time until all of
   them have left ``queued``/``planning``.

Usage::

    DATABASE_URL=postgres://leaderboard:leaderboard@127.0.0.1:54329/bench_scale \\
        .venv/bin/python bench/service_scale.py --json bench/results/service_scale.json
    # a small dry run: --runs 6 --predictions 50000 --speedup-runs 2
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from urllib.parse import urlparse

import numpy as np
from _util import REPO, Timer, machine, open_for_benchmark, peak_rss_mib
from board_latency import free_port, sequential, start_server, wait_ready
from engine_scale import Universe, make_run

SLUG = "bench-scale"
FINAL = ("scored", "partial", "failed")
SUCCEEDED = re.compile(r"Task (evaluation\.\w+)\[[^\]]+\] succeeded in ([0-9.]+)s: (.*)$")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# -- infrastructure -------------------------------------------------------------------------
def recreate_database(url: str, template: str | None = None) -> None:
    import psycopg

    parts = urlparse(url)
    name = parts.path.lstrip("/")
    admin = parts._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        for db in {name, template} - {None}:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                [db],
            )
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))


def with_database(url: str, name: str) -> str:
    return urlparse(url)._replace(path=f"/{name}").geturl()


def start_redis(workdir: str) -> tuple[subprocess.Popen, str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [
            shutil.which("redis-server") or "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            workdir,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"redis://127.0.0.1:{port}/0"
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("redis-server did not start")


class Worker:
    """A ``celery worker --pool=solo`` process with its own queue (for its warm-up message)."""

    def __init__(self, name: str, database_url: str, log_path: str):
        self.name, self.log_path = name, log_path
        env = {**os.environ, "DATABASE_URL": database_url, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "--pool=solo",
                "--loglevel=INFO",
                "-n",
                f"{name}@%h",
                "-Q",
                f"celery,{name}",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
            ],
            cwd=REPO,
            env=env,
            stdout=open(log_path, "w"),  # noqa: SIM115 - closed on exit
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(self.log_path, errors="replace") as fh:
                if " ready." in fh.read():
                    return
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker {self.name} exited: see {self.log_path}")
            time.sleep(0.3)
        raise RuntimeError(f"worker {self.name} did not start")

    def peak_rss_mib(self) -> float:
        with open(f"/proc/{self.proc.pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
        return float("nan")

    def task_times(self) -> list[tuple[str, float, str]]:
        with open(self.log_path, errors="replace") as fh:
            return [(m[1], float(m[2]), m[3].strip()) for m in map(SUCCEEDED.search, fh) if m]

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def setup_django(database_url: str, redis_url: str) -> None:
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "ESTIMATE_DEBOUNCE_SECONDS": "1",
            # Nothing here is stuck: keep the watchdog out of the measurements.
            "PIPELINE_STUCK_SECONDS": "86400",
            "API_THROTTLE_ANON": "1000000/minute",
        }
    )
    sys.path.insert(0, REPO)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def summary(values) -> dict:
    a = np.asarray(list(values), float)
    if not a.size:
        return {"n": 0}
    return {
        "n": int(a.size),
        "mean": round(float(a.mean()), 3),
        "median": round(float(np.median(a)), 3),
        "p95": round(float(np.percentile(a, 95)), 3),
        "max": round(float(a.max()), 3),
        "total": round(float(a.sum()), 1),
    }


# -- phases ---------------------------------------------------------------------------------
def build_task(args, universe: Universe, rng) -> dict:
    from django.contrib.auth import get_user_model

    from leaderboard.services.reference import upload_reference
    from leaderboard.services.tasks import create_task

    users = get_user_model().objects
    organizer = users.create_user("scale-organizer", password="x")
    annotator = users.create_user("scale-annotator")
    task = create_task(
        slug=SLUG,
        title="Service scale benchmark",
        organizers=[organizer],
        target_half_width=args.target_half_width,
        judgments_per_item=1,
        gold_rate=0.0,
        design_options={"min_batch": args.min_batch},
        max_runs_per_team=10,
        max_runs_per_team_per_day=10,
        max_upload_bytes=1 << 40,
        max_predictions_per_run=args.predictions,
    )
    open_for_benchmark(task)
    task.annotators.add(annotator)
    true_ids = np.flatnonzero(universe.truth)
    reference = np.sort(rng.choice(true_ids, min(args.reference, true_ids.size), replace=False))
    path = os.path.join(args.tmp, "reference.tsv")
    with open(path, "w") as fh:
        fh.writelines(f"i{i}\n" for i in reference)
    with open(path, "rb") as fh:
        upload_reference(task=task, user=organizer, upload=fh, file_name="reference.tsv")
    return {"task": task, "annotator": annotator}


def ingest(
    args, task, universe: Universe, rng, first: int, count: int, extra_pool=None
) -> list[dict]:
    from django.contrib.auth import get_user_model

    from leaderboard.services.ingest import submit_and_ingest
    from leaderboard.services.teams import create_team

    rows = []
    for j in range(first, first + count):
        items, scores = make_run(
            universe, j, args.predictions, rng, extra_pool, 0.05 if extra_pool is not None else 0.0
        )
        path = os.path.join(args.tmp, f"run{j}.tsv")
        with open(path, "w") as fh:
            for start in range(0, items.size, 100_000):
                fh.write(
                    "".join(
                        f"i{i}\t{s:.4f}\n"
                        for i, s in zip(
                            items[start : start + 100_000].tolist(),
                            scores[start : start + 100_000].tolist(),
                            strict=True,
                        )
                    )
                )
        user = get_user_model().objects.create_user(f"scale-member-{j}")
        team = create_team(name=f"scale-team-{j}", members=[user])
        started = time.perf_counter()
        with open(path, "rb") as fh:
            run = submit_and_ingest(
                task=task,
                team=team,
                user=user,
                upload=fh,
                file_name=f"run{j}.tsv",
                name=f"system-{j:03d}",
            )
        seconds = time.perf_counter() - started
        os.unlink(path)
        rows.append({"run": j, "seconds": round(seconds, 2), "new_items": run.n_new_items})
        log(f"  run {j}: {seconds:.1f} s, {run.n_new_items:,} new items")
    return rows


def answer_pending(task, truth: np.ndarray, annotator) -> int:
    from annotation.models import VerificationRequest
    from annotation.services import submit_judgment

    pending = list(
        VerificationRequest.objects.filter(task=task, state="pending").values_list(
            "pk", "item__index"
        )
    )
    for pk, index in pending:
        submit_judgment(
            request_id=pk, annotator=annotator, answer="correct" if truth[index] else "incorrect"
        )
    return len(pending)


def campaign(args, task, truth, annotator, workers: list[Worker], timeout: float) -> dict:
    from celery import current_app

    from leaderboard.models import Run, Task

    for pk in Run.objects.filter(task=task, state="queued").values_list("pk", flat=True):
        current_app.send_task("evaluation.plan_run", args=[pk])
    started = time.perf_counter()
    answered, answer_seconds = 0, 0.0
    while time.perf_counter() - started < timeout:
        t = time.perf_counter()
        n = answer_pending(task, truth, annotator)
        answer_seconds += time.perf_counter() - t
        answered += n
        states = _state_counts(task)
        pending = Task.objects.filter(pk=task.pk).values_list("estimate_pending", flat=True).get()
        if set(states) <= set(FINAL) and not pending:
            break
        if not n:
            time.sleep(1.0)
        log(f"  {states} answered {answered:,}")
    return {
        "wall_seconds": round(time.perf_counter() - started, 1),
        "answers": answered,
        "answer_seconds_in_bench_process": round(answer_seconds, 1),
        "states": _state_counts(task),
    }


def _state_counts(task) -> dict:
    from django.db.models import Count

    from leaderboard.models import Run

    return dict(Run.objects.filter(task=task).values_list("state").annotate(n=Count("id")))


def worker_times(workers: list[Worker]) -> dict:
    times = [t for w in workers for t in w.task_times()]
    plans = [s for name, s, _ in times if name == "evaluation.plan_run"]
    first = [s for name, s, result in times if name == "evaluation.plan_run"]
    estimates = [s for name, s, _ in times if name == "evaluation.estimate_task"]
    return {
        "plan_run_s": summary(plans),
        "estimate_task_s": summary(estimates),
        "plan_results": sorted({r for n, _, r in times if n == "evaluation.plan_run"}),
        "first_job_s": round(first[0], 2) if first else None,
    }


def plan_and_wait(db, runs: list[int], timeout: float = 3600.0, poll: float = 0.2) -> float:
    """Send a plan message for every run of ``runs`` (in that order); return the seconds until
    none of them is ``queued`` or ``planning`` (``db``: a psycopg connection to the workers'
    database), looked at every ``poll`` seconds (the figure's resolution)."""
    from celery import current_app

    started = time.perf_counter()
    for pk in runs:
        current_app.send_task("evaluation.plan_run", args=[pk])
    while db.execute(
        "SELECT count(*) FROM leaderboard_run WHERE id = ANY(%s) AND state IN "
        "('queued', 'planning')",
        [runs],
    ).fetchone()[0]:
        if time.perf_counter() - started > timeout:
            raise RuntimeError(f"{len(runs)} runs were not planned within {timeout:.0f} s")
        time.sleep(poll)
    return time.perf_counter() - started


def speedup(args, task_pk: int, base_url: str, redis_url: str, n_workers: int) -> dict:
    import psycopg
    from celery import current_app
    from django.db import connections

    from leaderboard.models import Run

    connections.close_all()
    table = Run._meta.db_table
    db = psycopg.connect(base_url, autocommit=True)  # the database these workers use
    workers = [
        Worker(f"w{k}", base_url, os.path.join(args.tmp, f"speed{n_workers}-w{k}.log"))
        for k in range(n_workers)
    ]
    try:
        for w in workers:
            w.wait_ready()
        before = [len(w.task_times()) for w in workers]
        for w in workers:  # warm each worker's engine state cache
            current_app.send_task("evaluation.estimate_task", args=[task_pk], queue=w.name)
        deadline = time.monotonic() + 1800
        while any(len(w.task_times()) <= b for w, b in zip(workers, before, strict=True)):
            if time.monotonic() > deadline:
                raise RuntimeError("warm-up did not finish")
            time.sleep(0.5)
        queued = [
            row[0]
            for row in db.execute(
                f"SELECT id FROM {table} WHERE task_id = %s AND state = 'queued'", [task_pk]
            )
        ]
        marks = [len(w.task_times()) for w in workers]
        wall = plan_and_wait(db, queued)
        done = [t for w, m in zip(workers, marks, strict=True) for t in w.task_times()[m:]]
        return {
            "workers": n_workers,
            "runs_planned": len(queued),
            "wall_seconds": round(wall, 1),
            "jobs": summary(s for _, s, _ in done),
            "plan_results": [r for n, _, r in done if n == "evaluation.plan_run"],
            "peak_worker_rss_mib": [round(w.peak_rss_mib()) for w in workers],
        }
    finally:
        db.close()
        for w in workers:
            w.stop()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--predictions", type=int, default=1_000_000)
    ap.add_argument("--reference", type=int, default=1000)
    ap.add_argument("--target-half-width", type=float, default=0.008)
    ap.add_argument("--min-batch", type=int, default=1024)
    ap.add_argument("--speedup-runs", type=int, default=10)
    ap.add_argument("--board-requests", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args(argv)
    base_url = os.environ.get("DATABASE_URL", "")
    if not base_url.startswith(("postgres://", "postgresql://")):
        ap.error("set DATABASE_URL to a PostgreSQL database (it is dropped and re-created)")
    host = machine()
    args.tmp = tempfile.mkdtemp(prefix="service-scale-")
    redis, redis_url = start_redis(args.tmp)
    timer = Timer()
    out: dict = {
        "machine": host,
        "sizes": {
            k: getattr(args, k)
            for k in (
                "runs",
                "predictions",
                "reference",
                "target_half_width",
                "min_batch",
                "speedup_runs",
                "seed",
            )
        },
    }
    workers: list[Worker] = []
    try:
        recreate_database(base_url)
        setup_django(base_url, redis_url)
        from leaderboard import jobs
        from leaderboard.models import Item, Run, Task

        rng = np.random.default_rng(args.seed)
        universe = Universe(3 * args.predictions, int(1.2 * args.predictions), 0.30, 0.55, rng)
        made = build_task(args, universe, rng)
        task, annotator = made["task"], made["annotator"]
        real_send, jobs._send = jobs._send, (lambda *a, **k: None)
        log(f"ingesting {args.runs} runs x {args.predictions:,} predictions")
        with timer("ingest"):
            rows = ingest(args, task, universe, rng, 0, args.runs)
        jobs._send = real_send
        out["ingest"] = {
            "per_run_s": summary(r["seconds"] for r in rows),
            "first_run_s": rows[0]["seconds"],
            "runs": rows,
            "items": Item.objects.filter(task=task).count(),
        }

        log("campaign with 1 worker")
        workers = [Worker("campaign", base_url, os.path.join(args.tmp, "campaign.log"))]
        workers[0].wait_ready()
        out["campaign"] = campaign(args, task, universe.truth, annotator, workers, 4 * 3600)
        out["campaign"].update(worker_times(workers))
        out["campaign"]["verified_items"] = Item.objects.filter(
            task=task, verified_at__isnull=False
        ).count()
        out["campaign"]["peak_worker_rss_mib"] = round(workers[0].peak_rss_mib())
        workers[0].stop()
        shutil.copy(workers[0].log_path, os.path.join(args.tmp, "campaign-kept.log"))

        from evaluation.kinds.open_world.state import forget_cached_states
        from evaluation.services import estimate_task

        log("re-estimation in this process")
        forget_cached_states()
        est = {}
        for label in ("cold", "warm", "warm_again"):
            started = time.perf_counter()
            estimate_task(task.pk)
            est[label] = round(time.perf_counter() - started, 2)
        est["peak_rss_mib_bench_process"] = round(peak_rss_mib())
        out["re_estimation_s"] = est

        log("board latency")
        port = free_port()
        server = start_server(port, 2, os.path.join(args.tmp, "gunicorn.log"))
        try:
            wait_ready(port)
            out["board"] = {
                "page": sequential(port, f"/tasks/{SLUG}/", n=args.board_requests, warmup=20),
                "api": sequential(
                    port, f"/api/tasks/{SLUG}/board/", n=args.board_requests, warmup=20
                ),
            }
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(30)

        if args.speedup_runs:
            log(f"speed-up: {args.speedup_runs} more runs")
            jobs._send = lambda *a, **k: None
            extra = universe.n_items + np.arange(args.predictions)
            ingest(
                args,
                Task.objects.get(pk=task.pk),
                universe,
                rng,
                args.runs,
                args.speedup_runs,
                extra_pool=extra,
            )
            jobs._send = real_send
            copy_name = urlparse(base_url).path.lstrip("/") + "_copy"
            from django.db import connections

            connections.close_all()
            recreate_database(
                with_database(base_url, copy_name), template=urlparse(base_url).path.lstrip("/")
            )
            one = speedup(args, task.pk, base_url, redis_url, 1)
            two = speedup(args, task.pk, with_database(base_url, copy_name), redis_url, 2)
            out["speedup"] = {
                "one_worker": one,
                "two_workers": two,
                "speedup": round(one["wall_seconds"] / two["wall_seconds"], 2),
            }
        out["final_states"] = dict(_state_counts(task))
        out["runs_total"] = Run.objects.filter(task=task).count()
    finally:
        for w in workers:
            w.stop()
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
