"""Planning a closed-pool task's rounds: one adaptive round over the pool serves every run.

A run's plan job (``plan_run``, engine lock held) asks whether the run still needs labels: its
measures' half-widths against the task's target, the label budget, the round limit. If it does
and no answers are still out, the design (:class:`~evaluation.core.closed_pool.AdaptivePoolDesign`)
chooses the next round for the whole pool, weighing each run by how far it is from the target;
the round is stored (a :class:`PlanRound` attributed to the run, a :class:`Draw` per item with
its inclusion probability, the task's full inclusion vector) and its items are queued for
annotators exactly as an open task's are. Before a new round, every verified item whose answers
are not a clear "no" is asked again (the design's looks,
:func:`evaluation.core.closed_pool.label_noise.looks_due`), as far as the budget allows. While
answers are out, the run waits: estimation moves it on when they are in
(:mod:`.estimation`).
"""

from __future__ import annotations

import logging

import numpy as np
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.services import ask_again, register_run_conflicts
from evaluation.core import ENGINE_VERSION
from leaderboard.jobs import enqueue_estimate
from leaderboard.models import Run
from leaderboard.selectors import label_spend
from leaderboard.services.lifecycle import transition_run

from ...locks import assert_lock_held
from ...models import PlanRound, PoolSamplingRecord
from ..rounds import item_pks, queue_drawn_items
from ..values import half_width_text, stored_value
from .state import LoadedPool, load_pool_state

log = logging.getLogger(__name__)


def run_half_widths(loaded: LoadedPool, index: int) -> dict[str, float]:
    """Half-width of each of the task's measures for run ``index`` at the task's confidence."""
    task = loaded.task
    estimates = loaded.design.estimate(loaded.state, level=task.confidence, measures=task.measures)[
        index
    ]
    return {m: float(estimates[m].half_width) for m in task.measures}


def plan_locked(run: Run, token: str) -> str:
    """Plan the next round for ``run`` of a closed-pool task (the caller holds the engine lock).

    Returns ``"waiting"``, ``"sample"``, ``"estimating"`` or ``"skipped"`` (see
    :func:`evaluation.services.plan_run`).
    """
    task = run.task
    loaded = load_pool_state(task)
    index = loaded.run_index[run.pk]
    if run.state == Run.State.QUEUED:
        with transaction.atomic():
            transition_run(run, Run.State.PLANNING, "planning the first round")
            # Items queued before the run came: its team must not verify those it predicts
            # positive (a closed-pool run is served by rounds other jobs plan, too).
            register_run_conflicts(run=run)
    pending = loaded.pending()
    if pending.size:
        if run.state != Run.State.AWAITING_LABELS:
            reason = f"waiting for answers on {pending.size} items of the pool's current round"
            transition_run(run, Run.State.AWAITING_LABELS, reason)
        return "waiting"
    looks = _affordable_looks(loaded)
    if looks.size:
        with transaction.atomic():
            assert_lock_held(task.pk, token)
            asked = _ask_looks(loaded, looks)
            if asked:
                reason = f"{asked} verified pool items whose answers are not a clear no asked again"
            else:
                # Every look was answered while this plan read the answers: the estimation
                # those answers enqueued plans again with them.
                reason = "answers came in while the next looks were chosen: planning again"
                enqueue_estimate(task.pk)
            transition_run(run, Run.State.AWAITING_LABELS, reason)
        return "sample" if asked else "waiting"
    widths = run_half_widths(loaded, index)
    widest = max(widths.values())
    target = task.target_half_width
    round_no = run.rounds + 1
    stop = _stop(loaded, widest, target, round_no)
    if stop is None:
        take = _affordable(loaded)
        rng = np.random.default_rng([task.seed, run.pk, round_no])
        items = loaded.design.plan(loaded.state, index, budget=take, rng=rng)
        # Items drawn before and still unanswered (nobody at work can answer them) stay queued.
        items = items[~np.isin(items, loaded.drawn)]
        stop = None if items.size else "exhausted"
    if stop is not None:
        with transaction.atomic():
            assert_lock_held(task.pk, token)
            transition_run(
                run, Run.State.ESTIMATING, "final estimation", outcome=stop, rounds=run.rounds
            )
            enqueue_estimate(task.pk)
        return "estimating"
    try:
        with transaction.atomic():
            assert_lock_held(task.pk, token)
            _store_round(run, loaded, items, round_no, widths)
            transition_run(
                run,
                Run.State.AWAITING_LABELS,
                f"round {round_no}: {items.size} pool items sent for verification "
                f"(widest interval ±{half_width_text(widest)} now, target ±{target:g})",
                rounds=round_no,
                outcome="sample",
                n_requested=run.n_requested + int(items.size),
            )
    except IntegrityError:
        # Another worker stored this round first (a redelivered message): nothing to do.
        log.info("round %s of closed-pool run %s already stored", round_no, run.pk)
        return "skipped"
    return "sample"


def _stop(loaded: LoadedPool, widest: float, target: float, round_no: int) -> str | None:
    """Why the run needs no further round (a ``Run.outcome``), or ``None``."""
    if widest <= target:
        return "met"
    if not np.count_nonzero(~loaded.state.labelled):
        return "exhausted"
    if _affordable(loaded) <= 0:
        return "budget_exhausted"
    if round_no > settings.PIPELINE_MAX_ROUNDS:
        return "gave_up"
    return None


def _affordable_looks(loaded: LoadedPool) -> np.ndarray:
    """The looks the design asks (engine indices) that are not asked already (a look nobody at
    work can give stays pending, and is not asked twice), the first ones as far as the budget's
    remaining judgments go."""
    looks = loaded.design.looks(loaded.state)
    if looks.size:
        looks = looks[~np.isin(looks, loaded.asked_items())]
    remaining = label_spend(loaded.task).remaining
    return looks if remaining is None else looks[: max(0, remaining)]


def _ask_looks(loaded: LoadedPool, looks: np.ndarray) -> int:
    pks = item_pks(loaded.task.pk, looks.tolist())
    asked = ask_again(
        task=loaded.task,
        item_ids=[pks[int(i)] for i in looks],
        seen_version=loaded.labels_version,
        run_items=_positives(loaded),
    )
    return len(asked)


def _positives(loaded: LoadedPool) -> list[tuple[int, np.ndarray]]:
    """Per run, its team and the items it predicts positive (whose team never verifies them)."""
    return [
        (other.team_id, np.flatnonzero(loaded.state.runs[k].predictions).astype(np.int64))
        for k, other in enumerate(loaded.runs)
    ]


def _affordable(loaded: LoadedPool) -> int:
    """Items the label budget still pays for (each asks the task's judgments per item)."""
    remaining = label_spend(loaded.task).remaining
    if remaining is None:
        return loaded.state.n_items
    return remaining // max(1, loaded.task.judgments_per_item)


def _store_round(
    run: Run, loaded: LoadedPool, items: np.ndarray, round_no: int, widths: dict[str, float]
) -> PlanRound:
    task = loaded.task
    inclusion = loaded.sampling().inclusion
    plan_round = PlanRound.objects.create(
        task_id=task.pk,
        run=run,
        round=round_no,
        status="sample",
        n_items=int(items.size),
        current_half_width=stored_value(max(widths.values())),
        details={
            "closed_pool": True,
            "half_widths": {m: stored_value(w) for m, w in widths.items()},
        },
        labels_version=loaded.labels_version,
        engine_version=ENGINE_VERSION,
        judgments=task.judgments_per_item,
        max_judgments=task.judgments_per_item,
    )
    PoolSamplingRecord.objects.update_or_create(
        task=task,
        defaults={
            "inclusion": inclusion.astype("<f8").tobytes(),
            "rounds": loaded.rounds + 1,
            "updated_at": timezone.now(),
        },
    )
    queue_drawn_items(
        task,
        plan_round,
        items,
        inclusion[items],
        item_pks(task.pk, items.tolist()),
        judgments=task.judgments_per_item,
        run_items=_positives(loaded),
    )
    return plan_round
