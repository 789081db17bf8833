"""Planning an open-world run's rounds: ask the engine for the run's next round and queue exactly
those judgments.

Called by :func:`evaluation.services.plan_run` with the engine lease held, on the task's state
it loaded before taking the lease. Each round is the run's own: the design
(:class:`~evaluation.core.designs.ServiceDesign`) draws new items from the run's predictions and
asks further looks at items already judged; the round is stored as a
:class:`PlanRound` with its levels (what the replay needs), a :class:`Draw` per item and a
:class:`Look` per further look, and the run awaits their answers. The estimation moves it on
(:mod:`.estimation`).
"""

from __future__ import annotations

import logging
import time

import numpy as np
from django.conf import settings
from django.db import IntegrityError, transaction

from annotation.services import ask_again, register_run_conflicts
from evaluation.core import ENGINE_VERSION
from evaluation.core.results import Plan
from leaderboard.jobs import enqueue_estimate, enqueue_plan
from leaderboard.models import Run
from leaderboard.services.lifecycle import transition_run

from ...locks import assert_lock_held
from ...models import Look, PlanRound
from ..rounds import item_pks, queue_drawn_items
from ..values import half_width_text, jsonable, stored_value
from .state import LoadedTask, catch_up, load_task_state
from .withdrawals import reopen_for_run

log = logging.getLogger(__name__)


def prepare_plan(run: Run) -> LoadedTask:
    """``run``'s task state, loaded before the engine lease is taken (see :func:`plan_locked`),
    with what its planning reads that the rounds seldom change computed ahead.

    The label view (the annotator model fitted to the judgments, about 40% of a first round's
    planning at 10 runs x 1,000,000 predictions) rests on the judgments and the runs, not on the
    rounds, and so do the run's post-strata once the cells' bands are set: the design caches
    them on the record (``prepare``), and :func:`.state.catch_up`'s replay keeps them.
    """
    loaded = load_task_state(run.task)
    index = loaded.run_index.get(run.pk)
    if index is None:
        loaded.design.labels(loaded.state)
    else:
        loaded.design.prepare(loaded.state, index)
    return loaded


def plan_locked(run: Run, token: str, prepared: LoadedTask | None = None) -> str:
    """Plan the next round for ``run`` of an open-world task (the caller holds the engine lease).

    ``prepared`` is the task's state loaded before the lease was taken (:func:`prepare_plan`):
    the rounds stored since are replayed on it first (:func:`.state.catch_up`), so the round is
    planned on the whole record, as if the state had been loaded under the lease. Returns
    ``"waiting"``, ``"sample"``, ``"estimating"`` or ``"skipped"`` (see
    :func:`evaluation.services.plan_run`).
    """
    task = run.task
    started = time.perf_counter()
    loaded = load_task_state(task) if prepared is None else catch_up(prepared)
    loaded_at = time.perf_counter()
    index = loaded.run_index[run.pk]
    if run.state == Run.State.AWAITING_LABELS and loaded.pending_in_run(index) > 0:
        return "waiting"
    if run.state == Run.State.QUEUED:
        transition_run(run, Run.State.PLANNING, "planning the first round")
    rec = loaded.record()
    round_no = rec.rounds[index] + 1
    if round_no > settings.PIPELINE_MAX_ROUNDS:
        with transaction.atomic():
            assert_lock_held(task.pk, token)
            transition_run(run, Run.State.ESTIMATING, "final estimation", outcome="gave_up")
            enqueue_estimate(task.pk)
        return "estimating"
    rng = np.random.default_rng([task.seed, run.pk, round_no])
    plan = loaded.design.plan(loaded.state, index, rng=rng)
    inclusion = rec.inclusion[plan.items]
    planned_at = time.perf_counter()
    try:
        with transaction.atomic():
            assert_lock_held(task.pk, token)
            _store_round(run, plan, inclusion, loaded)
            outcome = _advance(run, plan, loaded, index)
        log.info(
            "plan timing run %s round %s: %s %.3f s, plan %.3f s, store %.3f s",
            run.pk,
            round_no,
            "load" if prepared is None else "catch_up",
            loaded_at - started,
            planned_at - loaded_at,
            time.perf_counter() - planned_at,
        )
        return outcome
    except IntegrityError:
        # Another worker stored this round first (a redelivered message): nothing to do.
        log.info("round %s of run %s already stored", round_no, run.pk)
        return "skipped"


def _store_round(run: Run, plan: Plan, inclusion: np.ndarray, loaded: LoadedTask) -> PlanRound:
    details = {k: v for k, v in plan.details.items() if k not in ("levels", "fraction")}
    cells, bands = plan.bands
    design = loaded.design
    plan_round = PlanRound.objects.create(
        task_id=run.task_id,
        run=run,
        round=plan.round,
        status=plan.status,
        seed=plan.seed,
        levels=plan.details.get("levels"),
        fraction=plan.details.get("fraction", 1.0),
        n_items=int(plan.items.size),
        predicted_half_width=stored_value(plan.predicted_half_width),
        current_half_width=stored_value(plan.current_half_width),
        expected_labels=float(plan.expected_labels),
        details=jsonable(details),
        labels_version=loaded.labels_version,
        engine_version=ENGINE_VERSION,
        judgments=design.judgments_per_item,
        max_judgments=design.max_judgments_per_item,
        bands={"cells": jsonable(list(cells)), "bands": jsonable(list(bands))}
        if len(cells)
        else {},
        patterns=[[int(b), [list(map(int, p)) for p in patterns]] for b, patterns in plan.patterns],
    )
    if plan.round == 1:
        # Items it predicts whose requests were cancelled (only withdrawn runs predicted them)
        # are in its sample: they are asked again.
        reopen_for_run(loaded, loaded.run_index[run.pk])
        # Items of this run may already be queued for earlier runs: its team must not verify them.
        register_run_conflicts(run=run)
    pks = item_pks(run.task_id, np.concatenate([plan.items, plan.again]).tolist())
    run_items = [(other.team_id, loaded.state.runs[k].items) for k, other in enumerate(loaded.runs)]
    if plan.items.size:
        queue_drawn_items(
            run.task,
            plan_round,
            plan.items,
            inclusion,
            pks,
            judgments=design.judgments_per_item,
            run_items=run_items,
        )
    if plan.again.size:
        asked = ask_again(
            task=run.task,
            item_ids=[pks[int(i)] for i in plan.again],
            seen_version=loaded.labels_version,
            run_items=run_items,
        )
        # The looks asked (not those whose answers came in meanwhile): what the replay re-asks.
        Look.objects.bulk_create(
            [Look(plan_round=plan_round, item_id=pk) for pk in asked], batch_size=2000
        )
    return plan_round


def _advance(run: Run, plan: Plan, loaded: LoadedTask, index: int) -> str:
    """Move the run on after its round is stored (inside the round's transaction)."""
    fields = {
        "rounds": plan.round,
        "outcome": plan.status,
        "n_requested": run.n_requested + int(plan.items.size),
    }
    target = loaded.task.target_half_width
    if plan.items.size or (plan.status == "sample" and plan.again.size):
        asked = (
            f"{plan.items.size} items"
            if not plan.again.size
            else f"{plan.items.size} items and {plan.again.size} further looks"
        )
        reason = (
            f"round {plan.round}: {asked} sent for verification "
            f"(precision ±{half_width_text(plan.current_half_width)} now, target ±{target:g})"
        )
        transition_run(run, Run.State.AWAITING_LABELS, reason, **fields)
        if not _waits_after_round(loaded, index):
            # Every judgment the round asks is in already: its items were verified through
            # requests of their own (a reference sample's candidates, which no round draws), so
            # it opened none and no answer will come to move the run on. The estimation does,
            # as after the last answer of a round.
            enqueue_estimate(run.task_id)
        return "sample"
    if plan.status == "sample":
        # The random draw came up empty: plan again at once (a new seed, the same levels).
        transition_run(run, Run.State.PLANNING, f"round {plan.round} drew no item", **fields)
        enqueue_plan(run.pk)
        return "sample"
    waiting = loaded.pending_in_run(index)
    if waiting:
        reason = f"waiting for answers on {waiting} of its items"
        transition_run(run, Run.State.AWAITING_LABELS, reason, **fields)
        return "waiting"
    transition_run(run, Run.State.ESTIMATING, "final estimation", **fields)
    enqueue_estimate(run.task_id)
    return "estimating"


def _waits_after_round(loaded: LoadedTask, index: int) -> bool:
    """Whether run ``index`` waits for answers once the round just planned (in ``loaded``'s
    record) and its requests (in this transaction) are stored; the items no annotator can be
    given are read again, so those of the requests it opened count."""
    loaded.stuck = None
    return loaded.pending_in_run(index) > 0
