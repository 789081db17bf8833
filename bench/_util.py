"""Helpers shared by the speed benchmarks in ``bench/`` (timing, peak memory, profiles)."""

from __future__ import annotations

import cProfile
import io
import os
import platform
import pstats
import resource
import secrets
import sys
import time
from contextlib import contextmanager, suppress

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

# The benchmarks build throwaway databases and servers of their own: a random secret key unless
# one is given (the settings refuse to start without one outside the demo and the tests).
os.environ.setdefault("DJANGO_SECRET_KEY", "bench-" + secrets.token_urlsafe(32))


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far, in MiB (``ru_maxrss`` is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def code_version() -> dict:
    """Commit of the repository and whether the engine's files differ from it."""
    import subprocess

    def git(*args):
        try:
            return subprocess.run(
                ["git", "-C", REPO, *args], capture_output=True, text=True, timeout=10
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    return {
        "commit": git("rev-parse", "--short", "HEAD"),
        "evaluation_dirty": bool(git("status", "--porcelain", "evaluation/core")),
    }


def machine() -> dict:
    """A short description of the machine the figures were taken on."""
    import numpy
    import scipy

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem_gib = None
    with suppress(ValueError, OSError):
        mem_gib = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "mem_gib": mem_gib,
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        **code_version(),
    }


class Timer:
    """``with timer("phase"):`` accumulates wall-clock seconds per phase name."""

    def __init__(self):
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start


def profile_call(fn, *args, top: int = 20, **kwargs):
    """Run ``fn`` under cProfile; return ``(result, rows, text)`` with the top hotspots.

    ``rows`` lists ``{"where": "file:line(function)", "calls", "tottime", "cumtime"}`` sorted by
    own time (tottime), paths shortened to the repository.
    """
    prof = cProfile.Profile()
    prof.enable()
    try:
        result = fn(*args, **kwargs)
    finally:
        prof.disable()
    stats = pstats.Stats(prof)
    rows = []
    for (path, line, func), (_cc, ncalls, tottime, cumtime, _callers) in stats.stats.items():
        where = f"{_short(path)}:{line}({func})"
        rows.append(
            {
                "where": where,
                "calls": ncalls,
                "tottime": round(tottime, 4),
                "cumtime": round(cumtime, 4),
            }
        )
    rows.sort(key=lambda r: r["tottime"], reverse=True)
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(top)
    return result, rows[:top], buf.getvalue()


def _short(path: str) -> str:
    if path.startswith(REPO + os.sep):
        return os.path.relpath(path, REPO)
    marker = "site-packages" + os.sep
    if marker in path:
        return path.split(marker, 1)[1]
    return path


def format_hotspots(rows, title: str) -> str:
    lines = [
        f"-- {title}: top functions by own time --",
        f"{'tottime':>8} {'cumtime':>8} {'calls':>7}  where",
    ]
    for r in rows:
        lines.append(f"{r['tottime']:8.3f} {r['cumtime']:8.3f} {r['calls']:7d}  {r['where']}")
    return "\n".join(lines)


def open_for_benchmark(task):
    """Open ``task`` past its readiness checklist: a benchmark times uploads and the pipeline,
    not a task's set-up (``create_task`` makes drafts; opening checks the list)."""
    from leaderboard.models import Task

    Task.objects.filter(pk=task.pk).update(state=Task.State.OPEN)
    task.state = Task.State.OPEN
    return task


def write_result(result: dict, path: str | None, *, benchmark: str, tail: str) -> str:
    """Write ``result`` as JSON to ``path``, or by default to
    ``bench/results/<benchmark>-<commit>-<tail>.json``; prints and returns where."""
    import json

    if path is None:
        commit = result.get("machine", {}).get("commit") or "dev"
        results = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
        path = os.path.join(results, f"{benchmark}-{commit}-{tail}.json")
    with open(path, "w") as fh:
        json.dump(result, fh, indent=2)
    print(f"written to {path}")
    return path
