"""Conflict rows per verification request (issue 32, item 4), one process, no worker.

What runs
---------
A throwaway database (``--db``: PostgreSQL dropped and re-created, or a fresh SQLite file),
migrated. A task with ``--items`` items and ``--runs`` runs, one team of one participant each,
each run predicting a random ``--overlap`` share of the items (seeded); ``--annotators``
annotators who are in no team (the service benchmark's set-up), and ``--annotating-teams`` of
the teams whose participant also annotates the task. Then ``--requests`` requests are opened as
the planner opens them (``request_verification`` with the runs' items in memory, in one
transaction), and the ``RequestConflict`` rows are counted: per request, and in all. Finally
one team's participant joins the task as an annotator, and the rows that join records (and the
time it takes) are counted too.

Printed and written to ``bench/results/conflict_rows-<commit>-<database>.json`` (or ``--json``).

Usage::

    .venv/bin/python bench/conflict_rows.py --db sqlite:////tmp/conflict_rows.sqlite3
    .venv/bin/python bench/conflict_rows.py \\
        --db postgres://leaderboard:leaderboard@127.0.0.1:54329/leaderboard_conflict_rows
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH_DIR)
for path in (REPO, BENCH_DIR):
    if path not in sys.path:
        sys.path.insert(0, path)


def build(args) -> dict:
    """The task, its items, teams, runs and annotators; returns what the measurement needs."""
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from leaderboard.models import Item, Run, RunPredictions, Task, Team

    call_command("migrate", verbosity=0, skip_checks=True)
    users = get_user_model().objects
    task = Task.objects.create(
        slug="bench-conflicts", title="Conflict rows", annotators_may_compete=True
    )
    items = Item.objects.bulk_create(
        [Item(task=task, key=f"k{i}", index=i) for i in range(args.items)], batch_size=2000
    )
    Task.objects.filter(pk=task.pk).update(n_items=args.items)
    rng = np.random.default_rng(args.seed)
    run_items, participants = [], []
    for j in range(args.runs):
        person = users.create_user(f"participant-{j}")
        team = Team.objects.create(name=f"team-{j}")
        team.members.add(person)
        predicted = np.flatnonzero(rng.random(args.items) < args.overlap).astype(np.int64)
        run = Run.objects.create(
            task=task, team=team, name=f"run-{j}", n_predictions=predicted.size
        )
        RunPredictions.objects.create(
            run=run, items=predicted.tobytes(), scores=np.ones(predicted.size).tobytes()
        )
        run_items.append((team.pk, predicted))
        participants.append(person)
    for i in range(args.annotators):
        task.annotators.add(users.create_user(f"annotator-{i}"))
    task.annotators.add(*participants[: args.annotating_teams])
    return {"task": task, "items": items, "run_items": run_items, "participants": participants}


def measure(args, world: dict) -> dict:
    from django.db import transaction

    from annotation.models import RequestConflict
    from annotation.services import request_verification

    task, items = world["task"], world["items"]
    before = RequestConflict.objects.count()  # the annotating teams' joins (no request yet: 0)
    chosen = np.random.default_rng(args.seed + 1).choice(len(items), args.requests, replace=False)
    started = time.perf_counter()
    with transaction.atomic():
        opened = request_verification(
            task=task, item_ids=[items[i].pk for i in chosen], run_items=world["run_items"]
        )
    open_seconds = time.perf_counter() - started
    rows = RequestConflict.objects.count() - before
    # A participant who joins the task afterwards: their team's rows are recorded then.
    joiner = world["participants"][args.annotating_teams]
    started = time.perf_counter()
    task.annotators.add(joiner)
    join_seconds = time.perf_counter() - started
    joined_rows = RequestConflict.objects.count() - before - rows
    predicted = sum(int(np.isin(chosen, p).sum()) for _, p in world["run_items"])
    return {
        "requests": opened,
        "conflict_rows": rows,
        "conflict_rows_per_request": round(rows / opened, 3),
        "predicting_team_pairs_per_request": round(predicted / opened, 3),
        "open_seconds": round(open_seconds, 3),
        "rows_recorded_when_a_participant_joins": joined_rows,
        "join_seconds": round(join_seconds, 3),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="postgres://... or sqlite:////path")
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--overlap", type=float, default=0.34)
    parser.add_argument("--requests", type=int, default=5_000)
    parser.add_argument("--annotators", type=int, default=1)
    parser.add_argument("--annotating-teams", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    os.environ.update({"DATABASE_URL": args.db, "DJANGO_SETTINGS_MODULE": "config.settings"})
    import _util  # sets a throwaway DJANGO_SECRET_KEY
    from answer_profile import recreate

    recreate(args.db)
    database = "sqlite" if args.db.startswith("sqlite") else "postgresql"
    result = {"benchmark": "conflict_rows", "database": database, **vars(args)}
    result.update(measure(args, build(args)))
    result["machine"] = _util.machine()
    print(
        f"{result['requests']} requests, {args.runs} runs (one team each, {args.overlap:g} of "
        f"the items each), {args.annotating_teams} teams with an annotator: "
        f"{result['conflict_rows']} conflict rows, {result['conflict_rows_per_request']} per "
        f"request ({result['predicting_team_pairs_per_request']} predicting teams per request); "
        f"a participant joining the task records {result['rows_recorded_when_a_participant_joins']}"
        f" rows in {result['join_seconds']} s"
    )
    _util.write_result(result, args.json, benchmark="conflict_rows", tail=database)
    return 0


if __name__ == "__main__":
    sys.exit(main())
