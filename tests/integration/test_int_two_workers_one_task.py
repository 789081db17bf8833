"""Two real workers planning one task's runs at once (issue 32).

Each loads the task's state before it takes the engine lease and, under it, catches up with the
rounds the other stored meanwhile (``evaluation.kinds.open_world.state.catch_up``). What must
hold: every run gets exactly its one first round, and the core, re-planning every stored round in
order from the database (``engine_audit.replay_task``), draws exactly the items that were stored,
so the record is as reproducible as when one worker planned everything.
"""

from __future__ import annotations

import numpy as np
import pytest
from django.db.models import Count

from evaluation.models import PlanRound
from leaderboard.jobs import enqueue_plan
from leaderboard.models import Run

from engine_audit import replay_task
from pipeline_support import make_team
from worlds import random_runs, truth_world

pytestmark = [
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(240),
]

N_ITEMS = 3000
N_RUNS = 12


def test_two_workers_plan_one_task_and_the_record_replays(celery_worker_factory, wait_for):
    rng = np.random.default_rng(17)
    base = truth_world(
        rng,
        n_items=N_ITEMS,
        p_true=0.7,
        reference=60,
        groups=12,
        slug="two-workers",
        target_half_width=0.1,
    )
    task = base.task
    runs = random_runs(task, make_team("pair"), rng, n_runs=N_RUNS, size=1500, among=N_ITEMS)
    workers = [celery_worker_factory(), celery_worker_factory()]
    for run in runs:
        enqueue_plan(run.pk)
    wait_for(
        lambda: not Run.objects.filter(task=task, state__in=["queued", "planning"]).exists(),
        timeout=180,
        message="every run's first round",
    )
    rounds = PlanRound.objects.filter(task=task)
    assert rounds.count() == N_RUNS
    assert set(rounds.values("run").annotate(n=Count("id")).values_list("n", flat=True)) == {1}
    assert rounds.filter(n_items__gt=0).count() == N_RUNS
    # The core re-plans every stored round from the database and asserts it draws what was stored.
    task.refresh_from_db()
    replay_task(task, version=task.labels_version)
    logs = [w.log_tail(2000) for w in workers]
    assert all("plan lease run" in log for log in logs), "a worker planned nothing"
