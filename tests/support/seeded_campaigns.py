"""Seeded campaigns whose answers depend on the queue's serving order, shared by their tests
and by ``bench/serving_order_study.py``, which plays them over many seeds with the round's
requests served shuffled and in the items' order (issue 29, N4).

Each returns what its test asserts on; ``seed=0`` is the test's own campaign."""

from __future__ import annotations

import random
from dataclasses import dataclass
from io import StringIO

import numpy as np
from django.core.management import call_command

from annotation.services import load_gold
from evaluation.core.measures import OPEN_MEASURES
from leaderboard.models import LeaderboardSnapshot, Run, Task

from pipeline_support import annotator, answer_what_is_served
from pool_pipeline import PoolWorld, pool_world

FINAL_RUN_STATES = {Run.State.SCORED, Run.State.PARTIAL}
# What ``make run`` lets the simulated annotators answer (``demo --answer 150``).
DEMO_ANSWERS = 150


@dataclass(frozen=True)
class Interval:
    run: str
    metric: str
    value: float
    low: float
    high: float
    true: float

    @property
    def covers(self) -> bool:
        return self.low - 1e-9 <= self.true <= self.high + 1e-9


def snapshot_intervals(snapshot, true_scores: dict[str, dict[str, float]]) -> list[Interval]:
    """Every interval ``snapshot`` shows (cells without a value left out), with its run's true
    score (``true_scores[run name][metric]``)."""
    return [
        Interval(row["name"], metric, cell["value"], cell["low"], cell["high"], truth[metric])
        for row in snapshot.rows
        for metric, truth in [(m, true_scores[row["name"]]) for m in OPEN_MEASURES]
        for cell in [row[metric]]
        if cell["value"] is not None
    ]


@dataclass(frozen=True)
class DemoCampaign:
    task: Task
    shown: LeaderboardSnapshot  # after the demo's DEMO_ANSWERS answers
    last: LeaderboardSnapshot  # once every run is final
    passes: int


def demo_campaign(driver, *, seed: int = 0) -> DemoCampaign:
    """The demo as ``make run`` drives it in-process: ``demo``, then simulated annotators (wrong
    5% of the time) answer ``DEMO_ANSWERS``, then on until every run is final. ``seed`` 0 is the
    demo's own (its task seed, simulated answers seeded 1, 2, ... by pass); another shifts both."""
    from evaluation.management.commands.demo import (
        DATA_DIR,
        SIMULATED_ANNOTATORS,
        TASK_SEED,
        TASK_SLUG,
    )

    call_command("demo", "--no-serve", stdout=StringIO(), stderr=StringIO())
    task = Task.objects.get(slug=TASK_SLUG)
    if seed:
        # Nothing is planned yet (the driver holds the messages): the draws follow this seed.
        Task.objects.filter(pk=task.pk).update(seed=TASK_SEED + seed)

    def answer(passes: int, limit: int | None) -> int:
        args = ["--limit", str(limit)] if limit is not None else []
        out = StringIO()
        call_command(
            "simulate_annotators",
            TASK_SLUG,
            "--truth",
            str(DATA_DIR / "truth.tsv"),
            "--accuracy",
            "0.95",
            "--seed",
            str(passes + 1000 * seed),
            "--annotators",
            str(SIMULATED_ANNOTATORS),
            *args,
            stdout=out,
        )
        return int(out.getvalue().split()[1])

    given, passes = 0, 0
    while given < DEMO_ANSWERS:
        driver.drain()
        passes += 1
        answered = answer(passes, DEMO_ANSWERS - given)
        assert answered or passes < 50, "the demo's queue ran dry"
        given += answered
    driver.drain()
    shown = LeaderboardSnapshot.objects.filter(task=task).order_by("-version").first()
    final = {"scored", "partial", "failed"}
    for _ in range(60):
        if set(Run.objects.filter(task=task).values_list("state", flat=True)) <= final:
            break
        passes += 1
        answer(passes, None)
        driver.drain()
    else:
        raise AssertionError("the demo's runs did not finish")
    last = LeaderboardSnapshot.objects.filter(task=task).order_by("-version").first()
    return DemoCampaign(task, shown, last, passes)


def demo_true_scores() -> dict[str, dict[str, float]]:
    """Precision, recall and F1 of each demo run on the slice."""
    from evaluation.management.commands.demo import DATA_DIR, RUNS

    truth = {line.strip() for line in (DATA_DIR / "truth.tsv").open() if line.strip()}
    scores = {}
    for _, _, system, name in RUNS:
        keys = [
            line.split("\t")[0]
            for line in (DATA_DIR / "systems" / f"{system}.tsv").open()
            if line.strip()
        ]
        hits = sum(k in truth for k in keys)
        precision, recall = hits / len(keys), hits / len(truth)
        f1 = 2 * precision * recall / (precision + recall)
        scores[name] = {"precision": precision, "recall": recall, "f1": f1}
    return scores


@dataclass(frozen=True)
class PoolCampaign:
    world: PoolWorld
    runs: list[Run]
    snapshot: LeaderboardSnapshot


def fallible_pool_campaign(driver, *, seed: int = 0) -> PoolCampaign:
    """A closed pool of 400 items (16 positives) answered through the queue by four annotators
    right 90% of the time, gold at 10%, until every run is final. ``seed`` shifts the task's
    sampling seed and the answers' rng (0: the test's own)."""
    world = pool_world(
        target_half_width=0.2, gold_rate=0.1, positives=16, task_seed=20251124 + seed
    )
    task, truth = world.task, world.truth
    # Gold: some of the pool's positives and negatives (a closed pool's items are all scored).
    positives, negatives = np.flatnonzero(truth), np.flatnonzero(~truth)
    gold = [*positives[:5], *negatives[:25]]
    load_gold(
        task=task,
        lines=[f"k{i}\t{'correct' if truth[i] else 'incorrect'}" for i in gold],
    )
    people = [(world.annotator, 0.9)] + [(annotator(task, f"ann-{k}"), 0.9) for k in range(3)]
    keys = {f"k{i}" for i in positives}
    answer_until_final(task, driver, people, keys, random.Random(3 + 1000 * seed))
    runs = list(Run.objects.filter(task=task).order_by("id"))
    snapshot = LeaderboardSnapshot.objects.filter(task=task).order_by("-version").first()
    return PoolCampaign(world, runs, snapshot)


def answer_until_final(task: Task, driver, people, keys: set[str], rng, passes: int = 60) -> None:
    """Run the pipeline and let ``people`` answer what is served (right about ``keys``, the true
    items, with their accuracy) until every run of ``task`` is final, or ``passes`` are done."""
    for _ in range(passes):
        driver.drain()
        if {r.state for r in Run.objects.filter(task=task)} <= FINAL_RUN_STATES:
            return
        if not answer_what_is_served(task, people, keys, rng):
            driver.drain()


def pool_intervals(campaign: PoolCampaign) -> list[Interval]:
    """The final snapshot's nine intervals with their runs' true values."""
    truths = {
        run.name: {m: campaign.world.true_value(run, m) for m in OPEN_MEASURES}
        for run in campaign.runs
    }
    return snapshot_intervals(campaign.snapshot, truths)
