"""Storing a planned round's draws, for every kind of task: each drawn item's ``Draw`` with its
inclusion probability, and a verification request for it in the annotators' queue."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from annotation.services import request_verification
from leaderboard.models import Item, Task

from ..models import Draw, PlanRound


def item_pks(task_id: int, indices: Sequence[int]) -> dict[int, int]:
    """The ``Item`` primary key of every engine index in ``indices`` (of task ``task_id``)."""
    if not len(indices):
        return {}
    return dict(Item.objects.filter(task_id=task_id, index__in=indices).values_list("index", "pk"))


def queue_drawn_items(
    task: Task,
    plan_round: PlanRound,
    items: np.ndarray,
    inclusion: np.ndarray,
    pks: dict[int, int],
    *,
    judgments: int,
    run_items: Iterable[tuple[int, np.ndarray]],
) -> None:
    """Store a ``Draw`` per item of ``items`` (engine indices, with ``inclusion`` aligned) and
    ask ``judgments`` judgments of each, in the pipeline's order (``plan_round``'s); the teams
    of ``run_items`` (per run: its team, the items it predicts) never verify their own items."""
    Draw.objects.bulk_create(
        [
            Draw(plan_round=plan_round, item_id=pks[int(i)], inclusion=float(p))
            for i, p in zip(items, inclusion, strict=True)
        ],
        batch_size=2000,
    )
    request_verification(
        task=task,
        item_ids=[pks[int(i)] for i in items],
        judgments=judgments,
        priority=plan_round.pk,
        run_items=run_items,
    )
