"""Test support: a closed-pool task in the database, its pool uploaded and runs submitted.

The pool and runs are :func:`closed_pools.synthetic_pool`'s (rare positives); every item has a
payload (what annotators see). Used by the pipeline service tests (in-process) and the
integration test (a real worker).
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
from closed_pools import synthetic_pool

from evaluation.core.closed_pool import measure_value
from evaluation.core.measures import OPEN_MEASURES
from leaderboard.models import Run, Task
from leaderboard.services.ingest import submit_and_ingest
from leaderboard.services.pool import upload_pool
from leaderboard.services.tasks import create_task
from leaderboard.services.teams import create_team

from pipeline_support import PipelineDriver, annotator, answer_all, open_unchecked

RUNS = ("a-good", "b-broad", "d-random")


@dataclass
class PoolWorld:
    task: Task
    truth: np.ndarray  # per pool index: positive or not
    runs: list[Run]
    systems: dict[str, tuple[np.ndarray, np.ndarray]]
    annotator: object

    @property
    def answers(self) -> dict[int, bool]:
        """Item index -> the true answer (for ``pipeline_support.answer_all``)."""
        return {i: bool(t) for i, t in enumerate(self.truth)}

    def true_value(self, run: Run, measure: str) -> float:
        _, predictions = self.systems[run.name]
        tp = np.count_nonzero(self.truth & predictions)
        fn = np.count_nonzero(self.truth & ~predictions)
        return float(
            measure_value(measure, tp, fn, pp=np.count_nonzero(predictions), n=self.truth.size)
        )


def _named(text: str, name: str) -> io.BytesIO:
    stream = io.BytesIO(text.encode())
    stream.name = name
    return stream


def pool_world(
    *,
    n: int = 400,
    positives: int = 12,
    seed: int = 0,
    measures: tuple[str, ...] = OPEN_MEASURES,
    submit: bool = True,
    task_seed: int = 20251124,
    **settings,
) -> PoolWorld:
    """A closed-pool task with ``n`` items (keys ``k0``...), payloads, an annotator, and (if
    ``submit``) the runs of :data:`RUNS` submitted and validated, one team each."""
    truth, systems = synthetic_pool(n=n, positives=positives, seed=seed)
    settings.setdefault("gold_rate", 0.0)
    task = create_task(
        slug="pool",
        title="Closed pool",
        kind=Task.Kind.CLOSED_POOL,
        measures=list(measures),
        question="Do the two records describe the same entity?",
        **settings,
    )
    # A fixed sampling seed (a task's own is random): the draws, and so every statistical
    # assertion on them, are the same on every run of the tests.
    Task.objects.filter(pk=task.pk).update(seed=task_seed)
    task.seed = task_seed
    keys = "".join(f"k{i}\n" for i in range(n))
    payloads = "".join(f'{{"key": "k{i}", "payload": {{"text": "pair {i}"}}}}\n' for i in range(n))
    upload_pool(
        task=task,
        user="tests",
        upload=_named(keys, "items.tsv"),
        payloads=_named(payloads, "items.jsonl"),
    )
    person = annotator(task)
    open_unchecked(task)
    runs = []
    if submit:
        for name in RUNS:
            runs.append(submit_pool_run(task, name, systems[name]))
    return PoolWorld(task, truth, runs, systems, person)


def pool_run_text(system: tuple[np.ndarray, np.ndarray]) -> str:
    scores, predictions = system
    return "".join(
        f"k{i}\t{s:.6g}\t{int(p)}\n"
        for i, (s, p) in enumerate(zip(scores, predictions, strict=True))
    )


def submit_pool_run(task: Task, name: str, system: tuple[np.ndarray, np.ndarray]) -> Run:
    """Submit ``system`` as run ``name`` of a new team of one participant; validated at once."""
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user(f"member-{name}")
    team = create_team(name=f"team-{name}", members=[user])
    return submit_and_ingest(
        task=task,
        team=team,
        user=user,
        upload=_named(pool_run_text(system), f"{name}.tsv"),
        file_name=f"{name}.tsv",
        name=name,
    )


FINAL = {Run.State.SCORED, Run.State.PARTIAL, Run.State.FAILED}


def settle(driver: PipelineDriver, world, limit: int = 300) -> int:
    """Run the pipeline and answer what it asks until every run is final; returns answers."""
    answered = 0
    for _ in range(limit):
        driver.drain()
        if {r.state for r in Run.objects.filter(task=world.task)} <= FINAL:
            return answered
        n = answer_all(world.task, world.answers, world.annotator)
        assert n, "runs are not final and nothing is asked"
        answered += n
    raise AssertionError("the pipeline did not settle")
