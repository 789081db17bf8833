"""``plan_run``: ask the engine for a run's next round and queue exactly those judgments."""

from __future__ import annotations

import logging
import math

import numpy as np
from django.conf import settings
from django.db import IntegrityError, transaction

from annotation.services import ask_again, register_run_conflicts, request_verification
from evaluation.core import ENGINE_VERSION
from evaluation.core.results import Plan
from leaderboard.jobs import enqueue_estimate, enqueue_plan
from leaderboard.models import Item, Run, Task
from leaderboard.services.lifecycle import RunWithdrawn, fail_run, transition_run

from ..engine_state import LoadedTask, load_task_state
from ..locks import assert_lock_held, engine_lock
from ..models import Draw, Look, PlanRound
from .pool_planning import plan_pool_locked
from .withdrawals import reopen_for_run

log = logging.getLogger(__name__)

PLANNABLE = (Run.State.QUEUED, Run.State.PLANNING, Run.State.AWAITING_LABELS)


def plan_run(run_id: int) -> str:
    """Plan the next round of ``run_id``; idempotent, safe to call twice or after a crash.

    Returns what happened (for logs and tests): ``"missing"``, ``"skipped"`` (the run is in no
    state to plan), ``"waiting"`` (answers of its last round are still out), ``"sample"``,
    ``"estimating"`` (no more labels needed or possible: the run goes to final estimation) or
    ``"failed"``. Raises :class:`~evaluation.locks.EngineBusy` when another job holds the task.
    """
    run = Run.objects.filter(pk=run_id).select_related("task").first()
    if run is None:
        return "missing"
    if run.state not in PLANNABLE:
        return "skipped"
    with engine_lock(run.task_id) as token:
        run.refresh_from_db()
        if run.state not in PLANNABLE:
            return "skipped"
        try:
            return _plan_locked(run, token)
        except RunWithdrawn:
            # Withdrawn while this job planned: the round it would have stored is rolled back.
            return "skipped"
        except (ValueError, FloatingPointError) as exc:
            # The engine refused the state: a platform problem, not the participant's.
            log.exception("planning run %s failed", run.pk)
            fail_run(run, f"platform error while planning: {exc}. Your quota was refunded.")
            return "failed"


def _plan_locked(run: Run, token: str) -> str:
    task = run.task
    if task.kind == Task.Kind.CLOSED_POOL:
        return plan_pool_locked(run, token)
    loaded = load_task_state(task)
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
    try:
        with transaction.atomic():
            assert_lock_held(task.pk, token)
            _store_round(run, plan, inclusion, loaded)
            return _advance(run, plan, loaded, index)
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
        predicted_half_width=_finite(plan.predicted_half_width),
        current_half_width=_finite(plan.current_half_width),
        expected_labels=float(plan.expected_labels),
        details=_jsonable(details),
        labels_version=loaded.labels_version,
        engine_version=ENGINE_VERSION,
        judgments=design.judgments_per_item,
        max_judgments=design.max_judgments_per_item,
        bands={"cells": _jsonable(list(cells)), "bands": _jsonable(list(bands))}
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
    wanted = np.concatenate([plan.items, plan.again]).tolist()
    pks = (
        dict(Item.objects.filter(task_id=run.task_id, index__in=wanted).values_list("index", "pk"))
        if wanted
        else {}
    )
    run_items = [(other.team_id, loaded.state.runs[k].items) for k, other in enumerate(loaded.runs)]
    if plan.items.size:
        Draw.objects.bulk_create(
            [
                Draw(plan_round=plan_round, item_id=pks[int(i)], inclusion=float(p))
                for i, p in zip(plan.items, inclusion, strict=True)
            ],
            batch_size=2000,
        )
        request_verification(
            task=run.task,
            item_ids=[pks[int(i)] for i in plan.items],
            judgments=design.judgments_per_item,
            priority=plan_round.pk,
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
            f"(precision ±{_fmt(plan.current_half_width)} now, target ±{target:g})"
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


def _finite(x: float | None) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def _fmt(x: float | None) -> str:
    return f"{x:.3f}" if x is not None and math.isfinite(x) else "∞"


def _jsonable(value: object) -> object:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value
