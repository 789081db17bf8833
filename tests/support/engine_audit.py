"""Audit a task's stored pipeline history against the engine, independently of the service code.

Rebuilds the engine state from the raw rows and re-runs the planner round by round, in the order
the service planned, each time with exactly the judgment set that round saw
(``PlanRound.labels_version``: every counted answer with ``seq <= v`` not withdrawn by ``v``), the
design options it was planned with (``judgments``, ``max_judgments``) and the same seed: every
stored draw and look must be what the engine asks, and the latest snapshot's estimates must be
what the engine estimates from the same draws and answers.
"""

from __future__ import annotations

import numpy as np

from annotation.models import GoldAnswer, GoldItem, Judgment
from evaluation.core.designs import make_design
from evaluation.core.state import TaskState
from evaluation.models import PlanRound
from leaderboard.models import Estimate, LeaderboardSnapshot, ReferenceItem, Run, RunEvent


def _answers(task) -> np.ndarray:
    """``(item index, annotator, says correct, seq, withdrawn seq or inf)`` of every counted
    answer of the task, judgments and gold answers alike."""
    rows = [
        (*row[:4], row[4] if row[4] is not None else np.inf)
        for row in list(
            Judgment.objects.filter(request__task=task, seq__isnull=False).values_list(
                "request__item__index", "annotator_id", "answer", "seq", "withdrawn_seq"
            )
        )
        + list(
            GoldAnswer.objects.filter(gold__task=task, seq__isnull=False).values_list(
                "gold__item__index", "annotator_id", "answer", "seq", "withdrawn_seq"
            )
        )
    ]
    return np.array(
        [(i, a, ans == "correct", s, w) for i, a, ans, s, w in rows], dtype=float
    ).reshape(-1, 5)


def _state_at(task, runs, answers, gold, version) -> TaskState:
    state = TaskState(task.n_items)
    for run in runs:
        items, scores = run.predictions.arrays()
        state.add_run(items, scores)
    ref = list(ReferenceItem.objects.filter(task=task).order_by("id").select_related("item"))
    groups = {g: k for k, g in enumerate(sorted({r.group or f"#{r.pk}" for r in ref}))}
    if ref:
        state.set_reference(
            [r.item.index for r in ref], [groups[r.group or f"#{r.pk}"] for r in ref]
        )
    if gold:
        state.set_gold([g[0] for g in gold], [g[1] for g in gold])
    live = answers[(answers[:, 3] <= version) & (answers[:, 4] > version)]
    # By version, then item and annotator (answers numbered by one reader share a version).
    live = live[np.lexsort((live[:, 1], live[:, 0], live[:, 3]))]
    # An annotator counts once per item (a gold item may also have been drawn): the first answer.
    _, first = np.unique(live[:, :2], axis=0, return_index=True)
    live = live[np.sort(first)]
    if live.size:
        state.add_judgments(
            live[:, 0].astype(np.int64), live[:, 1].astype(np.int64), live[:, 2].astype(bool)
        )
    return state


def _design(task, planned: PlanRound | None = None):
    """The task's design as configured, with the judgment options of ``planned``'s round."""
    options = dict(task.design_options or {})
    if task.design == "default" and planned is not None:
        options.update(
            judgments_per_item=planned.judgments, max_judgments_per_item=planned.max_judgments
        )
    return make_design(
        task.design,
        target_half_width=task.target_half_width,
        confidence=task.confidence,
        budget=task.label_budget,
        **options,
    )


def replay_task(task, version: int | None = None, *, until=None):
    """Re-plan the stored rounds of ``task`` in the core (asserting each is what was stored),
    then return ``(runs, design, state)``: the engine's state with the judgment set of
    ``version`` (default: the latest snapshot's) and the replayed record.

    ``until``: only the runs submitted and the rounds stored before that moment (what an
    estimation made then saw; default: all).
    """
    task.refresh_from_db()
    # The runs a worker accepted (a run failed or withdrawn before that has no predictions).
    runs = (
        Run.objects.filter(task=task, predictions__isnull=False)
        .exclude(state="rejected")
        .order_by("id")
    )
    if until is not None:
        runs = runs.filter(created_at__lt=until)
    runs = list(runs)
    answers = _answers(task)
    gold = list(GoldItem.objects.filter(task=task).values_list("item__index", "answer"))
    position = {run.pk: i for i, run in enumerate(runs)}
    rounds = PlanRound.objects.filter(task=task).order_by("id")
    if until is not None:
        rounds = rounds.filter(created_at__lt=until)
    rounds = list(rounds.prefetch_related("draws__item", "looks__item"))
    state = _state_at(task, runs, answers, gold, 0)
    for pr in rounds:
        # The planner's record carries over; the answers are those of the round's version.
        now = _state_at(task, runs, answers, gold, pr.labels_version)
        now.design_state = state.design_state
        state = now
        rng = np.random.default_rng([task.seed, pr.run_id, pr.round])
        plan = _design(task, pr).plan(state, position[pr.run_id], rng=rng)
        stored = sorted(d.item.index for d in pr.draws.all())
        looked = sorted(lk.item.index for lk in pr.looks.all())
        assert plan.round == pr.round, (pr.pk, plan.round, pr.round)
        assert plan.status == pr.status, (pr.pk, plan.status, pr.status)
        assert plan.items.tolist() == stored, f"round {pr.pk}: the engine draws other items"
        assert sorted(plan.again.tolist()) == looked, f"round {pr.pk}: other looks"
    if version is None:
        version = (
            LeaderboardSnapshot.objects.filter(task=task)
            .order_by("-version")
            .first()
            .labels_version
        )
    now = _state_at(task, runs, answers, gold, version)
    now.design_state = state.design_state
    # Runs withdrawn by then leave the pool (their rounds stay in the record).
    withdrawn = RunEvent.objects.filter(run__in=runs, state="withdrawn")
    if until is not None:
        withdrawn = withdrawn.filter(at__lt=until)
    gone = set(withdrawn.values_list("run_id", flat=True))
    now.withdraw_runs(i for i, run in enumerate(runs) if run.pk in gone)
    return runs, _design(task, rounds[-1] if rounds else None), now


def audit_task(task, snapshot: LeaderboardSnapshot | None = None) -> dict:
    """Replay ``task``'s planning and the estimates of ``snapshot`` (default: the latest) in the
    core, from the judgment set the snapshot names and the rounds stored before it; raise
    AssertionError on any mismatch."""
    if snapshot is None:
        snapshot = LeaderboardSnapshot.objects.filter(task=task).order_by("-version").first()
    runs, design, state = replay_task(task, snapshot.labels_version, until=snapshot.created_at)
    position = {run.pk: i for i, run in enumerate(runs)}
    results = design.estimate(state)
    compared = 0
    for est in Estimate.objects.filter(snapshot=snapshot):
        ours = getattr(results[position[est.run_id]], est.metric)
        value = None if np.isnan(ours.value) else ours.value
        assert (est.value, est.low, est.high, est.labels_used, est.method) == (
            value,
            ours.low,
            ours.high,
            ours.labels_used,
            ours.method,
        ), (est.run_id, est.metric)
        compared += 1
    return {
        "rounds": PlanRound.objects.filter(task=task, created_at__lt=snapshot.created_at).count(),
        "estimates": compared,
        "snapshot": snapshot.version,
    }
