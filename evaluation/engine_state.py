"""Rebuild the engine's view of a task (:class:`evaluation.core.state.TaskState`) from the database.

The database is the only source of truth. Runs enter the engine in submission order (by id), their
packed predictions load with ``numpy.frombuffer``; labels come from verified items; the sampling
record is replayed from the stored rounds (:meth:`CoordinatedPoissonDesign.replay`), so any worker
on any machine sees the same state, bit for bit, and a crashed worker loses nothing.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from evaluation.core.designs import make_design
from evaluation.core.results import RoundRecord
from evaluation.core.state import TaskState
from leaderboard.models import Item, ReferenceItem, Run, Task

from .models import Draw, PlanRound

# Runs whose predictions are in the engine: accepted ones, whatever happened to them since (a
# failed run's earlier rounds still shaped every inclusion probability).
ENGINE_STATES = (Run.State.QUEUED, Run.State.PLANNING, Run.State.AWAITING_LABELS,
                 Run.State.ESTIMATING, Run.State.SCORED, Run.State.PARTIAL, Run.State.FAILED)


def design_for(task: Task):
    """The engine design configured by ``task``."""
    return make_design(task.design, target_half_width=task.target_half_width,
                       confidence=task.confidence, budget=task.label_budget,
                       **(task.design_options or {}))


@dataclass
class LoadedTask:
    """A task's engine state with the mapping between engine indices and database rows."""

    task: Task
    state: TaskState
    design: object
    runs: list  # engine run index -> Run
    run_index: dict  # Run.pk -> engine run index
    rounds: list  # RoundRecord, in planning order
    round_runs: list  # Run.pk of each entry of ``rounds``
    labels_version: int  # the state holds exactly the labels with ``label_seq <= labels_version``
    reference_version: int  # the reference sample's version when loading began

    def record(self):
        return self.design.record(self.state)

    def pending_in_run(self, index: int) -> int:
        """Items of run ``index`` already requested (by any run) whose answer is not in yet."""
        rec = self.record()
        items = self.state.runs[index].items
        return int(np.count_nonzero(rec.requested[items] & (self.state.labels[items] < 0)))

    def drawn_for_run(self, run_pk: int) -> tuple[int, int]:
        """(items drawn by this run's own rounds, how many of them are verified)."""
        drawn = verified = 0
        labels = self.state.labels
        for rnd, pk in zip(self.rounds, self.round_runs, strict=True):
            if pk == run_pk and rnd.items.size:
                drawn += int(rnd.items.size)
                verified += int(np.count_nonzero(labels[rnd.items] >= 0))
        return drawn, verified


def load_task_state(task: Task) -> LoadedTask:
    """Load ``task``'s runs, labels, reference sample and replayed sampling record."""
    # Read the label version first: labels up to it are committed, later ones are left out, so
    # the state rests on exactly the label set ``labels_version`` names, however busy the queue.
    # The item count is read after the runs and the reference sample, so it covers every item
    # they name even if an upload commits meanwhile.
    labels_version, reference_version = (Task.objects.filter(pk=task.pk)
                                         .values_list("labels_version", "reference_version").get())
    runs = list(Run.objects.filter(task=task, state__in=ENGINE_STATES)
                .select_related("predictions", "team").order_by("id"))
    reference = list(ReferenceItem.objects.filter(task=task).order_by("id")
                     .values_list("item__index", "group"))
    n_items = Task.objects.filter(pk=task.pk).values_list("n_items", flat=True).get()
    state = TaskState(int(n_items))
    for run in runs:
        items, scores = run.predictions.arrays()
        state.add_run(items, scores, name=run.name)
    labelled = np.array(Item.objects.filter(task=task, label_seq__lte=labels_version)
                        .values_list("index", "label"), dtype=np.int64).reshape(-1, 2)
    if labelled.size:
        state.set_labels(labelled[:, 0], labelled[:, 1])
    if reference:
        items = np.array([r[0] for r in reference], dtype=np.int64)
        _, groups = np.unique(np.array([r[1] or f"#{i}" for i, r in enumerate(reference)],
                                       dtype=object), return_inverse=True)
        state.set_reference(items, groups.astype(np.int64))
    run_index = {run.pk: i for i, run in enumerate(runs)}
    rounds, round_runs = _rounds(task, run_index)
    design = design_for(task)
    design.replay(state, rounds)
    return LoadedTask(task, state, design, runs, run_index, rounds, round_runs, labels_version,
                      reference_version)


def _rounds(task: Task, run_index: dict) -> tuple[list, list]:
    drawn = defaultdict(list)
    rows = (Draw.objects.filter(plan_round__task=task)
            .values_list("plan_round_id", "item__index").iterator(chunk_size=20000))
    for round_id, index in rows:
        drawn[round_id].append(index)
    rounds, round_runs = [], []
    for pr in PlanRound.objects.filter(task=task).order_by("id"):
        items = np.sort(np.array(drawn.get(pr.pk, ()), dtype=np.int64))
        rounds.append(RoundRecord(run_index[pr.run_id], pr.round, items, pr.levels, pr.fraction,
                                  pr.seed))
        round_runs.append(pr.run_id)
    return rounds, round_runs
