"""Rebuild a closed-pool task's engine state (:class:`evaluation.core.closed_pool.PoolState`) and
its adaptive design's sampling record from the database.

Runs enter in submission order (by id) from their packed outputs. The pool's judgments and gold
answers, read at one ``labels_version`` (the same judgment set as an open task's), go to the
state whole (:meth:`PoolState.set_answers`): the design corrects every label for annotator error
(:mod:`evaluation.core.closed_pool.label_noise`). A drawn and answered item is marked verified
with what its answers favour (:meth:`evaluation.core.labels.ItemLabels.favoured`).

The sampling record is what the design resumes from: each item's permanent uniform number,
regenerated from the task's seed, and the inclusion probabilities after the latest round
(:class:`evaluation.models.PoolSamplingRecord`, written with the round). So any worker in any
process plans and estimates from exactly the same record.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from annotation.selectors import pending_items, stuck_items, working_annotators
from annotation.services.judgments import number_judgments
from evaluation.core.closed_pool import PoolDesign, PoolSampling, PoolState
from evaluation.core.labels import item_labels
from evaluation.core.state import TaskState
from evaluation.core.task_design import closed_pool_design
from leaderboard.models import PoolRunOutputs, Task

from ...models import Draw, PlanRound, PoolSamplingRecord
from ..engine_rows import LoadedEngine, engine_runs, load_answers

# The seed stream of a closed pool's permanent numbers, beside the task's seed.
POOL_STREAM = 15


def permanent_numbers(task: Task, n_items: int) -> np.ndarray:
    """Every pool item's permanent uniform number (coordinated Poisson sampling)."""
    return np.random.default_rng([task.seed, POOL_STREAM]).random(n_items)


@dataclass
class LoadedPool(LoadedEngine[PoolState, PoolDesign]):
    """A closed-pool task's engine state with the mapping to database rows."""

    drawn: np.ndarray  # sorted indices of every item drawn so far
    rounds: int  # rounds stored for the task
    inclusion: np.ndarray  # after the latest round

    def asked_items(self) -> np.ndarray:
        """Items still owed a judgment asked of them (a drawn item's first ones, a look), sorted."""
        return np.array(sorted(pending_items(task=self.task)), dtype=np.int64)

    def pending(self) -> np.ndarray:
        """:meth:`asked_items` that some annotator at work can answer."""
        waiting = self.asked_items()
        if not waiting.size:
            return waiting
        stuck = (
            np.array(sorted(stuck_items(task=self.task)), dtype=np.int64)
            if working_annotators(task=self.task)
            else np.empty(0, np.int64)
        )
        return waiting[~np.isin(waiting, stuck)]

    def sampling(self) -> PoolSampling:
        """The design's record now (after a :meth:`plan`, the probabilities it raised)."""
        return self.design.sampling(self.state)


def load_pool_state(task: Task) -> LoadedPool:
    """Load ``task``'s pool runs, resolved labels of drawn items and sampling record.

    Raises ``ValueError`` when the stored record does not match the stored rounds or items.
    """
    labels_version = number_judgments(task.pk)
    n_items = Task.objects.filter(pk=task.pk).values_list("n_items", flat=True).get()
    runs = list(engine_runs(task))
    state = PoolState(int(n_items))
    outputs = {o.run_id: o for o in PoolRunOutputs.objects.filter(run_id__in=[r.pk for r in runs])}
    for run in runs:
        scores, labels = outputs[run.pk].arrays()
        state.add_run(scores, labels, name=run.name)
    rounds = PlanRound.objects.filter(task=task).count()
    record = PoolSamplingRecord.objects.filter(task=task).first()
    if (record.rounds if record else 0) != rounds:
        raise ValueError(
            f"the stored sampling record reflects {record.rounds if record else 0} rounds, "
            f"the task has {rounds}"
        )
    inclusion = (
        np.frombuffer(bytes(record.inclusion), dtype="<f8").copy()
        if record is not None
        else np.zeros(state.n_items)
    )
    if inclusion.size != state.n_items:
        raise ValueError("the stored sampling record is not of this pool")
    drawn = np.sort(
        np.fromiter(
            Draw.objects.filter(plan_round__task=task).values_list("item__index", flat=True),
            dtype=np.int64,
        )
    )
    _set_labels(state, task, labels_version, drawn)
    design = closed_pool_design(task.design_settings())
    design.resume(state, PoolSampling(permanent_numbers(task, state.n_items), inclusion))
    return LoadedPool(
        task,
        state,
        design,
        runs,
        {run.pk: i for i, run in enumerate(runs)},
        int(labels_version),
        drawn,
        rounds,
        inclusion,
    )


def _set_labels(state: PoolState, task: Task, version: int, drawn: np.ndarray) -> None:
    """Mark the drawn items answered so far as verified and hand the answers to the state (see
    the module docstring)."""
    if not drawn.size:
        return
    answers = TaskState(state.n_items)
    load_answers(answers, task, version)
    resolved = item_labels(answers, item_class=np.full(state.n_items, -1, dtype=np.int64))
    known = drawn[resolved.verified[drawn]]
    state.set_labels(known, resolved.favoured(known))
    state.set_answers(answers)
