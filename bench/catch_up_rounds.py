"""What a plan job pays to bring its task's state up to date as the task's rounds accumulate.

Every plan job reads the task's stored rounds twice: loading its state before the engine lease
(``prepare``) and catching up under it (``catch_up``), and replays those it has not seen. This
script takes a task of ``bench/worker_scaling.py`` (10 runs x 1,000,000 predictions, every run's
first round planned), adds ``--rounds`` more stored rounds (copies of each run's first round's
levels, no new items: the reads are measured, not the replay's arithmetic), warms the engine's
state cache, then ``--repeats`` times stores one more round and times ``load_task_state`` and
``catch_up`` on a state loaded before it.

Usage (the database is copied from the one ``worker_scaling.py --tasks 1`` built)::

    DATABASE_URL=postgres://leaderboard:leaderboard@127.0.0.1:54329/bench_twoworkers \\
        .venv/bin/python bench/catch_up_rounds.py --rounds 2000 [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from urllib.parse import urlparse

from _util import machine
from service_scale import recreate_database, setup_django, start_redis, with_database


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args(argv)
    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith(("postgres://", "postgresql://")):
        ap.error("set DATABASE_URL to the database bench/worker_scaling.py built")
    copy = with_database(base, urlparse(base).path.lstrip("/") + "_rounds")
    recreate_database(copy, template=urlparse(base).path.lstrip("/"))
    redis, redis_url = start_redis(tempfile.mkdtemp(prefix="catch-up-rounds-"))
    try:
        setup_django(copy, redis_url)
        out = {"machine": machine(), "rounds_added": args.rounds, **measure(args)}
    finally:
        redis.terminate()
    print(json.dumps(out, indent=2))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2)
    return 0


def measure(args: argparse.Namespace) -> dict:
    from evaluation.kinds.open_world.state import catch_up, load_task_state
    from evaluation.models import PlanRound
    from evaluation.services import plan_run
    from leaderboard.models import Run, Task

    task = Task.objects.get(slug__startswith="scaling-")
    for run in Run.objects.filter(task=task, state=Run.State.QUEUED).order_by("pk"):
        plan_run(run.pk)
    firsts = list(PlanRound.objects.filter(task=task, round=1).order_by("pk"))

    def more(number: int) -> list[PlanRound]:
        return [
            PlanRound(
                task_id=task.pk,
                run_id=first.run_id,
                round=number,
                status="sample",
                seed=number,
                levels=first.levels,
                fraction=1.0,
                n_items=0,
                expected_labels=0.0,
                details={},
                labels_version=first.labels_version,
                engine_version=first.engine_version,
                judgments=first.judgments,
                max_judgments=first.max_judgments,
                bands={},
                patterns=[],
            )
            for first in firsts
        ]

    number = 1
    while PlanRound.objects.filter(task=task).count() < len(firsts) + args.rounds:
        number += 1
        PlanRound.objects.bulk_create(more(number))
    stored = PlanRound.objects.filter(task=task).count()
    load_task_state(task)  # the process's cache holds the state with every round replayed
    loads, catch_ups = [], []
    for _ in range(args.repeats):
        started = time.perf_counter()
        loaded = load_task_state(task)
        loads.append(time.perf_counter() - started)
        number += 1
        PlanRound.objects.bulk_create(more(number)[:1])  # another job's round meanwhile
        started = time.perf_counter()
        catch_up(loaded)
        catch_ups.append(time.perf_counter() - started)
    return {
        "stored_rounds": stored,
        "load_task_state_s": {"median": statistics.median(loads), "all": loads},
        "catch_up_one_round_s": {"median": statistics.median(catch_ups), "all": catch_ups},
    }


if __name__ == "__main__":
    sys.exit(main())
