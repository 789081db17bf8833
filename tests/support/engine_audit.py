"""Audit a task's stored pipeline history against the engine, independently of the service code.

Rebuilds the engine state from the raw rows and re-runs the planner round by round, in the order
the service planned, each time with exactly the labels that round saw (``PlanRound.labels_version``)
and the same seed: every stored draw must be what the engine draws, and the latest snapshot's
estimates must be what the engine estimates from the same draws and answers.
"""

from __future__ import annotations

import numpy as np

from evaluation.core.designs import make_design
from evaluation.core.state import TaskState
from evaluation.models import PlanRound
from leaderboard.models import Estimate, LeaderboardSnapshot, ReferenceItem, Run


def audit_task(task) -> dict:
    """Replay ``task``'s planning and estimation in the core; raise AssertionError on mismatch."""
    task.refresh_from_db()
    runs = list(Run.objects.filter(task=task).exclude(state="rejected").order_by("id"))
    state = TaskState(task.n_items)
    for run in runs:
        items, scores = run.predictions.arrays()
        state.add_run(items, scores)
    ref = list(ReferenceItem.objects.filter(task=task).order_by("id").select_related("item"))
    groups = {g: k for k, g in enumerate(sorted({r.group or f"#{r.pk}" for r in ref}))}
    if ref:
        state.set_reference([r.item.index for r in ref],
                            [groups[r.group or f"#{r.pk}"] for r in ref])
    labelled = np.array(list(task.items.exclude(label_seq=None)
                             .values_list("index", "label", "label_seq")), dtype=np.int64)
    labelled = labelled.reshape(-1, 3)
    design = make_design(task.design, target_half_width=task.target_half_width,
                         confidence=task.confidence, budget=task.label_budget,
                         **(task.design_options or {}))
    position = {run.pk: i for i, run in enumerate(runs)}
    n_rounds = 0
    for pr in PlanRound.objects.filter(task=task).order_by("id").prefetch_related("draws__item"):
        state.clear_labels()
        seen = labelled[labelled[:, 2] <= pr.labels_version]
        state.set_labels(seen[:, 0], seen[:, 1])
        rng = np.random.default_rng([task.seed, pr.run_id, pr.round])
        plan = design.plan(state, position[pr.run_id], rng=rng)
        stored = sorted(d.item.index for d in pr.draws.all())
        assert plan.round == pr.round, (pr.pk, plan.round, pr.round)
        assert plan.status == pr.status, (pr.pk, plan.status, pr.status)
        assert plan.items.tolist() == stored, f"round {pr.pk}: the engine draws other items"
        n_rounds += 1
    snapshot = LeaderboardSnapshot.objects.filter(task=task).order_by("-version").first()
    state.clear_labels()
    seen = labelled[labelled[:, 2] <= snapshot.labels_version]
    state.set_labels(seen[:, 0], seen[:, 1])
    results = design.estimate(state)
    compared = 0
    for est in Estimate.objects.filter(snapshot=snapshot):
        ours = getattr(results[position[est.run_id]], est.metric)
        value = None if np.isnan(ours.value) else ours.value
        assert (est.value, est.low, est.high, est.labels_used, est.method) == (
            value, ours.low, ours.high, ours.labels_used, ours.method), (est.run_id, est.metric)
        compared += 1
    return {"rounds": n_rounds, "estimates": compared, "snapshot": snapshot.version}
