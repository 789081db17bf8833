"""Two big uploads must not stall the site (issue 13, finding 2).

Target: while two 5,000,000-line runs are uploaded at the same time, a client reading the board
sees p95 <= 100 ms and no failed request; every web process stays <= 300 MB resident (peak); both
runs are accepted (validated by the worker, ``queued``).

What it does
------------
1. A fresh PostgreSQL database (``DATABASE_URL``, dropped and re-created), a private Redis (broker
   and cache), a received-files directory (``MEDIA_ROOT``) in a temporary directory; an open task
   with the default limits (512 MiB, 5,000,000 predictions), two teams with a token each.
2. The production serving setup: ``gunicorn -w 2 -k gthread --threads 16`` (the command in README
   and ``manage.py demo``) and one Celery worker (``--pool=solo``).
3. Two runs written by ``bench/ingest_run.py``'s generator (``rec-N-org|rec-N-dup-0<TAB>score``):
   team A uploads the plain TSV, team B the gzip of a second file, at the same moment, through
   the participant client's streaming upload (``leaderboard_cli.client.Client.upload``).
4. Meanwhile one client reads the board page and the board API in turn, one request at a time,
   from before the uploads start until both runs have been validated by the worker; and
   ``--slow-clients`` connections (4) trickle their request headers one byte a second all along.
5. The resident memory of every gunicorn process (master and workers, ``VmHWM`` and sampled
   ``VmRSS``) and of the worker.

Usage::

    DATABASE_URL=postgres://leaderboard:leaderboard@127.0.0.1:54329/leaderboard_uploads \\
        .venv/bin/python bench/upload_stall.py --json bench/results/upload_stall-postgresql.json
    # smaller: --lines 500000
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from _util import REPO, machine, open_for_benchmark
from board_latency import fetch, free_port, summary
from ingest_run import write_files
from service_scale import Worker, log, recreate_database, start_redis

from evaluation.core.measures import OPEN_MEASURES

SLUG = "bench-uploads"
BOARD_P95_MS = 100.0
WEB_RSS_MIB = 300.0
WEB_WORKERS, WEB_THREADS = 2, 16  # as evaluation/management/commands/_demo_processes.py


def setup_django(database_url: str, redis_url: str, media: str) -> None:
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "MEDIA_ROOT": media,
            "DJANGO_DEBUG": "0",
            "PIPELINE_STUCK_SECONDS": "86400",
            "API_THROTTLE_ANON": "1000000/minute",
            "API_THROTTLE_USER": "1000000/minute",
        }
    )
    sys.path.insert(0, REPO)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def build_world() -> dict:
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from leaderboard.services.tasks import create_task
    from leaderboard.services.teams import create_team

    task = open_for_benchmark(create_task(slug=SLUG, title="Upload stall benchmark"))
    tokens, teams = {}, {}
    for name in ("A", "B"):
        user = get_user_model().objects.create_user(f"bench-{name}")
        teams[name] = create_team(name=f"team-{name}", members=[user])
        tokens[name] = Token.objects.create(user=user).key
    publish_board(task, teams["A"])
    return {
        "task": task,
        "tokens": tokens,
        "limit_bytes": task.max_upload_bytes,
        "limit_predictions": task.max_predictions_per_run,
    }


def publish_board(task, team) -> None:
    """A published snapshot with one scored run, so that the board has something to show."""
    from django.utils import timezone

    from leaderboard.models import Estimate, LeaderboardSnapshot, Run

    run = Run.objects.create(
        task=task,
        team=team,
        name="baseline",
        state=Run.State.SCORED,
        n_predictions=10,
        n_requested=8,
        n_verified=8,
    )
    estimate = {"value": 0.618, "low": 0.568, "high": 0.668, "labels_used": 8, "method": "wilson"}
    snapshot = LeaderboardSnapshot.objects.create(
        task=task,
        version=1,
        engine_version="bench",
        design="default",
        labels_version=8,
        reference_version=0,
        n_labels=8,
        n_reference=0,
        confidence=0.95,
        published=True,
        published_at=timezone.now(),
        rows=[
            {
                "run": run.pk,
                "name": "baseline",
                "team": team.name,
                "state": "scored",
                "provisional": False,
                "n_predictions": 10,
                "n_requested": 8,
                "n_verified": 8,
                "precision": estimate,
                "recall": estimate,
                "f1": estimate,
            }
        ],
    )
    Estimate.objects.bulk_create(
        [
            Estimate(
                snapshot=snapshot,
                run=run,
                metric=m,
                value=0.618,
                low=0.568,
                high=0.668,
                level=0.95,
                labels_used=8,
                method="wilson",
            )
            for m in OPEN_MEASURES
        ]
    )


def start_web(port: int, log_path: str) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "config.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(WEB_WORKERS),
            "--worker-class",
            "gthread",
            "--threads",
            str(WEB_THREADS),
            "--log-level",
            "warning",
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=open(log_path, "w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _status(pid: int) -> dict[str, float]:
    found = {}
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                key = line.split(":", 1)[0]
                if key in ("VmHWM", "VmRSS"):
                    found[key] = int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return found


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(p) for p in fh.read().split()]
    except OSError:
        return []


class MemoryWatch(threading.Thread):
    """Samples the resident memory of the gunicorn master and its workers (any that appear)."""

    def __init__(self, master: int):
        super().__init__(daemon=True)
        self.master = master
        self.peak: dict[int, float] = {}
        self.stop = threading.Event()

    def sample(self) -> None:
        for pid in [self.master, *_children(self.master)]:
            status = _status(pid)
            if status:
                seen = max(status.get("VmHWM", 0.0), status.get("VmRSS", 0.0))
                self.peak[pid] = max(self.peak.get(pid, 0.0), seen)

    def run(self) -> None:
        while not self.stop.is_set():
            self.sample()
            time.sleep(0.2)


class BoardReader(threading.Thread):
    """One client reading the board page and the board API in turn until told to stop."""

    def __init__(self, port: int):
        super().__init__(daemon=True)
        self.port = port
        self.paths = [f"/tasks/{SLUG}/", f"/api/tasks/{SLUG}/board/"]
        self.times: list[float] = []
        self.started: list[float] = []
        self.failures: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        i = 0
        while not self.stop.is_set():
            path = self.paths[i % len(self.paths)]
            i += 1
            at = time.perf_counter()
            try:
                status, seconds, _ = fetch(self.port, path)
            except OSError as exc:
                self.failures.append(f"{path}: {exc}")
                continue
            if status != 200:
                self.failures.append(f"{path}: HTTP {status}")
            self.times.append(seconds)
            self.started.append(at)
            time.sleep(0.02)


class SlowClients(threading.Thread):
    """Connections that send a request's headers one byte a second and never finish (what held
    both sync workers of the demo for ~33 s): each may hold one thread, never a whole worker."""

    def __init__(self, port: int, n: int):
        super().__init__(daemon=True)
        self.port, self.n = port, n
        self.stop = threading.Event()

    def run(self) -> None:
        import socket

        sockets = [socket.create_connection(("127.0.0.1", self.port)) for _ in range(self.n)]
        request = f"GET /tasks/{SLUG}/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + "a" * 10_000
        try:
            for ch in request.encode():
                if self.stop.is_set():
                    return
                for sock in sockets:
                    with contextlib.suppress(OSError):
                        sock.send(bytes([ch]))
                self.stop.wait(1.0)
        finally:
            for sock in sockets:
                sock.close()


def upload(port: int, token: str, path: str, name: str, out: dict) -> None:
    from leaderboard_cli.client import ApiError, Client

    start = time.perf_counter()
    try:
        run = Client(f"http://127.0.0.1:{port}", token, timeout=600).upload(
            f"/api/tasks/{SLUG}/runs/", path, {"name": name}
        )
        out.update(status=202, run=run["id"], state=run["state"])
    except ApiError as exc:
        out.update(status=exc.status, error=exc.message)
    except Exception as exc:
        out.update(status=None, error=repr(exc))
    out["seconds"] = round(time.perf_counter() - start, 2)


def wait_validated(run_ids: list[int], timeout: float) -> dict:
    from leaderboard.models import Run, RunEvent

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = dict(Run.objects.filter(pk__in=run_ids).values_list("pk", "state"))
        if all(s not in ("received", "validating") for s in states.values()):
            break
        time.sleep(1.0)
    result = {}
    for run in Run.objects.filter(pk__in=run_ids):
        events = {e.state: e.at for e in RunEvent.objects.filter(run=run)}
        done = events.get("queued") or events.get("rejected")
        result[run.pk] = {
            "state": run.state,
            "n_predictions": run.n_predictions,
            "file_bytes": run.file_bytes,
            "reason": run.reason,
            "validation_seconds": (
                round((done - events["validating"]).total_seconds(), 1)
                if done and "validating" in events
                else None
            ),
            "received_to_queued_seconds": (
                round((done - events["received"]).total_seconds(), 1) if done else None
            ),
        }
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=5_000_000)
    parser.add_argument(
        "--timeout",
        type=float,
        default=900.0,
        help="seconds to wait for the worker to validate both runs",
    )
    parser.add_argument(
        "--slow-clients",
        type=int,
        default=4,
        help="connections that trickle their headers during the whole run",
    )
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args(argv)
    database_url = os.environ.get("DATABASE_URL", "")
    if not database_url.startswith("postgres"):
        parser.error("set DATABASE_URL to a PostgreSQL database (it is dropped and re-created)")

    tmp = tempfile.mkdtemp(prefix="upload-stall-")
    redis = web = worker = None
    try:
        log(f"writing two runs of {args.lines:,} lines in {tmp}")
        plain_a, _ = write_files(os.path.join(tmp, ""), args.lines, seed=1)
        os.makedirs(os.path.join(tmp, "b"))
        plain_b, gz_b = write_files(os.path.join(tmp, "b"), args.lines, seed=2)
        os.remove(plain_b)
        files = {"A": plain_a, "B": gz_b}
        sizes = {k: os.path.getsize(p) for k, p in files.items()}
        with gzip.open(gz_b, "rb") as fh:
            decompressed_b = sum(len(c) for c in iter(lambda: fh.read(1 << 20), b""))
        recreate_database(database_url)
        redis, redis_url = start_redis(tmp)
        media = os.path.join(tmp, "media")
        setup_django(database_url, redis_url, media)
        world = build_world()
        worker = Worker("ingest", database_url, os.path.join(tmp, "worker.log"))
        port = free_port()
        web = start_web(port, os.path.join(tmp, "gunicorn.log"))
        worker.wait_ready()
        deadline = time.monotonic() + 60
        while True:
            try:
                if fetch(port, "/")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("gunicorn did not come up")
            time.sleep(0.2)
        for _ in range(10):  # warm: templates, connections, the cached board
            for path in (f"/tasks/{SLUG}/", f"/api/tasks/{SLUG}/board/"):
                fetch(port, path)
        memory = MemoryWatch(web.pid)
        memory.start()
        slow = SlowClients(port, args.slow_clients)
        slow.start()
        reader = BoardReader(port)
        reader.start()
        time.sleep(2.0)  # a baseline before the uploads
        log(
            f"uploading {sizes['A'] / 2**20:.0f} MiB (plain) and {sizes['B'] / 2**20:.0f} MiB "
            f"(gzip of {decompressed_b / 2**20:.0f} MiB) at once"
        )
        results = {"A": {}, "B": {}}
        started = time.perf_counter()
        threads = [
            threading.Thread(
                target=upload, args=(port, world["tokens"][k], files[k], f"big-{k}", results[k])
            )
            for k in ("A", "B")
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        uploads_seconds = time.perf_counter() - started
        log(f"uploads answered: {results}")
        run_ids = [r["run"] for r in results.values() if r.get("run")]
        log("waiting for the worker to validate both runs")
        runs = wait_validated(run_ids, args.timeout)
        all_seconds = time.perf_counter() - started
        reader.stop.set()
        reader.join()
        slow.stop.set()
        memory.sample()
        memory.stop.set()
        memory.join()
        board_all = summary(reader.times)
        while_uploading = [
            t
            for t, at in zip(reader.times, reader.started, strict=True)
            if started <= at <= started + uploads_seconds
        ]
        board_uploads = summary(while_uploading) if while_uploading else {}
        web_peaks = {str(pid): round(mib, 1) for pid, mib in sorted(memory.peak.items())}
        requests_failed = reader.failures + [
            f"upload {k}: {r.get('status')} {r.get('error')}"
            for k, r in results.items()
            if r.get("status") != 202
        ]
        ok = {
            "board_p95_le_100ms": board_all["p95_ms"] <= BOARD_P95_MS,
            "no_request_failed": not requests_failed,
            "web_rss_le_300mib": max(memory.peak.values()) <= WEB_RSS_MIB,
            "both_runs_accepted": (
                len(runs) == 2
                and all(
                    r["state"] not in ("received", "validating", "rejected", "failed")
                    and r["n_predictions"] == args.lines
                    for r in runs.values()
                )
            ),
        }
        report = {
            "benchmark": "upload_stall",
            "machine": machine(),
            "setup": {
                "database": "postgresql",
                "broker_and_cache": "redis",
                "server": f"gunicorn -w {WEB_WORKERS} -k gthread --threads {WEB_THREADS}",
                "worker": "celery --pool=solo (1 process)",
                "lines": args.lines,
                "slow_clients": args.slow_clients,
                "files": {
                    "A": {"bytes": sizes["A"], "gzip": False},
                    "B": {"bytes": sizes["B"], "gzip": True, "decompressed_bytes": decompressed_b},
                },
                "task_limits": {
                    "bytes": world["limit_bytes"],
                    "predictions": world["limit_predictions"],
                },
            },
            "uploads": results,
            "uploads_wall_seconds": round(uploads_seconds, 2),
            "runs": runs,
            "until_both_validated_seconds": round(all_seconds, 1),
            "board_during_uploads": board_uploads,
            "board_until_validated": board_all,
            "failed_requests": requests_failed[:20],
            "web_peak_rss_mib": web_peaks,
            "worker_peak_rss_mib": round(worker.peak_rss_mib(), 1),
            "targets": {"board_p95_ms": BOARD_P95_MS, "web_rss_mib": WEB_RSS_MIB},
            "ok": ok,
        }
        text = json.dumps(report, indent=2, default=str)
        print(text)
        if args.json:
            with open(args.json, "w") as fh:
                fh.write(text + "\n")
        return 0 if all(ok.values()) else 1
    finally:
        for proc in (web,):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, 15)
                proc.wait(30)
        if worker is not None:
            worker.stop()
        if redis is not None:
            redis.terminate()
            redis.wait(10)
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
