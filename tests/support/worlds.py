"""Test worlds: a task whose items have a known truth, a reference sample of its true items, and
runs over its items. The pipeline, service, browser and integration tests build theirs here.

Each world draws from the test's own ``numpy`` generator in a fixed order (the truth, then the
reference sample, then the runs), so a test keeps its data for a given seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.utils import timezone

from leaderboard.models import Item, LeaderboardSnapshot, ReferenceItem, Run, Task, Team

from pipeline_support import add_items, add_run, make_task, make_team


@dataclass
class TruthWorld:
    task: Task
    items: list[Item]
    truth: dict[int, bool]  # item index -> the item is correct

    def indices(self, correct: bool, below: int | None = None) -> list[int]:
        """Indices of the items whose truth is ``correct`` (among the first ``below``)."""
        end = len(self.items) if below is None else below
        return [i for i in range(end) if self.truth[i] is correct]


def truth_world(
    rng: np.random.Generator,
    *,
    n_items: int,
    p_true: float,
    reference: int,
    groups: int,
    reference_among: int | None = None,
    **task_fields,
) -> TruthWorld:
    """A task (``make_task(**task_fields)``) with ``n_items`` items, each correct with
    probability ``p_true``; ``reference`` of the correct ones among the first ``reference_among``
    (default: all) form the reference sample, item ``i`` in group ``g{i % groups}``."""
    task = make_task(**task_fields)
    items = add_items(task, n_items)
    truth = {i: bool(t) for i, t in enumerate(rng.random(n_items) < p_true)}
    world = TruthWorld(task=task, items=items, truth=truth)
    sample = rng.choice(world.indices(True, below=reference_among), reference, replace=False)
    ReferenceItem.objects.bulk_create(
        [ReferenceItem(task=task, item=items[int(i)], group=f"g{int(i) % groups}") for i in sample]
    )
    return world


def demo_task_world(
    rng: np.random.Generator,
    *,
    n_items: int,
    reference: int,
    groups: int,
    target_half_width: float,
) -> TruthWorld:
    """The browser tests' open task ``demo`` ("Demo task"): ``n_items`` items, 70% of them
    correct, and a reference sample of ``reference`` in ``groups`` groups."""
    return truth_world(
        rng,
        n_items=n_items,
        p_true=0.7,
        reference=reference,
        groups=groups,
        slug="demo",
        title="Demo task",
        state=Task.State.OPEN,
        target_half_width=target_half_width,
    )


def random_runs(
    task: Task, team: Team, rng: np.random.Generator, *, n_runs: int, size: int, among: int
) -> list[Run]:
    """``n_runs`` runs ``r0``, ``r1``, … of ``size`` distinct items among the first ``among``,
    with uniform scores."""
    return [
        add_run(task, team, rng.choice(among, size, replace=False), rng.random(size), f"r{k}")
        for k in range(n_runs)
    ]


def stored_snapshot(
    task: Task,
    rows: list | None = None,
    *,
    version: int = 1,
    published: bool = True,
    **fields,
) -> LeaderboardSnapshot:
    """A snapshot of ``task`` stored with ``rows`` as given (no estimates: a test that reads them
    writes its own, as the page tests' ``write_snapshot`` does), published now unless told
    otherwise, as the board service publishes one. ``fields`` set any other column (``details``,
    ``n_labels``, ``design``, ``confidence``, ``published_at``...) over the empty bookkeeping of a
    task nothing was verified in yet."""
    stored = {
        "engine_version": "test",
        "design": "default",
        "labels_version": 0,
        "reference_version": 0,
        "n_labels": 0,
        "n_reference": 0,
        "confidence": 0.95,
        "published_at": timezone.now() if published else None,
        **fields,
    }
    return LeaderboardSnapshot.objects.create(
        task=task, version=version, rows=rows or [], published=published, **stored
    )


def two_team_board(people: dict) -> dict:
    """Task ``ner`` (organizer ``people["org"]``), teams A (``alice``) and B (``bob``), runs
    ``a1`` "a-one", ``a2`` "a-two" (team A) and ``b1`` "b-one" (team B): the board's pages' and
    API tests' world, before any snapshot."""
    task = make_task(slug="ner", title="Entity linking", state=Task.State.OPEN)
    task.organizers.add(people["org"])
    add_items(task, 6)
    team_a, team_b = make_team("Team A", people["alice"]), make_team("Team B", people["bob"])
    runs = {
        "a1": add_run(task, team_a, [0, 1, 2], name="a-one"),
        "a2": add_run(task, team_a, [2, 3], name="a-two"),
        "b1": add_run(task, team_b, [1, 2, 3, 4], name="b-one"),
    }
    return {"task": task, "team_a": team_a, "team_b": team_b, "runs": runs, **people}
