"""The rows both kinds of task rebuild their engine state from: the runs in the engine and the
task's judgment set at one version.

A task's state is rebuilt from the database by every job (the database is the only source of
truth): the open world's (:mod:`.open_world.state`) and the closed pool's
(:mod:`.closed_pool.state`) take their runs in submission order and their answers from here, so
both read one run list and one judgment set the same way, and load into one frame
(:class:`LoadedEngine`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from django.db.models import QuerySet

from annotation.models import GoldAnswer, GoldItem, Judgment
from evaluation.core.state import TaskState
from leaderboard.models import Run, Task

# Runs whose predictions are in the engine: accepted ones, whatever happened to them since (a
# failed or withdrawn run's earlier rounds still shaped every inclusion probability). A run
# failed or withdrawn before it was accepted has no predictions and never enters
# (:func:`engine_runs`).
ENGINE_STATES = (
    Run.State.QUEUED,
    Run.State.PLANNING,
    Run.State.AWAITING_LABELS,
    Run.State.ESTIMATING,
    Run.State.SCORED,
    Run.State.PARTIAL,
    Run.State.FAILED,
    Run.State.WITHDRAWN,
)


class _EngineState(Protocol):
    @property
    def n_labelled(self) -> int: ...


class _Design(Protocol):
    @property
    def name(self) -> str: ...


StateT = TypeVar("StateT", bound=_EngineState)
DesignT = TypeVar("DesignT", bound=_Design)


@dataclass
class LoadedEngine(Generic[StateT, DesignT]):
    """A task's engine state with the mapping between engine indices and database rows: what
    every kind loads (its loader adds its own records), and what a snapshot is stored from
    (:func:`.snapshots.store_snapshot`)."""

    task: Task
    state: StateT
    design: DesignT
    runs: list[Run]  # engine run index -> Run
    run_index: dict[int, int]  # Run.pk -> engine run index
    labels_version: int  # the state holds exactly the judgment set of this version


def engine_runs(task: Task) -> QuerySet[Run]:
    """The task's runs in the engine, in submission order: accepted (their predictions stored),
    whatever happened to them since."""
    return (
        Run.objects.filter(task=task, state__in=ENGINE_STATES, predictions__isnull=False)
        .select_related("team")
        .order_by("id")
    )


def load_answers(state: TaskState, task: Task, version: int) -> None:
    """The task's judgment set of ``version``: counted judgments and gold answers with
    ``seq <= version`` not withdrawn by then; gold items' answers as exact."""
    live = {"seq__lte": version}
    judged = list(
        Judgment.objects.filter(request__task=task, **live)
        .exclude(withdrawn_seq__lte=version)
        .values_list("seq", "request__item__index", "annotator_id", "answer")
    )
    gold_answers = list(
        GoldAnswer.objects.filter(gold__task=task, **live)
        .exclude(withdrawn_seq__lte=version)
        .values_list("seq", "gold__item__index", "annotator_id", "answer")
    )
    # By version, then item and annotator (the answers one reader numbered share a version): the
    # same set always gives the same state, bit for bit. An annotator counts once per item (a
    # gold item can also have been drawn): the first answer.
    rows, seen = [], set()
    for _, index, annotator, answer in sorted(judged + gold_answers):
        if (index, annotator) not in seen:
            seen.add((index, annotator))
            rows.append((index, annotator, answer))
    if rows:
        state.add_judgments(
            [r[0] for r in rows],
            [r[1] for r in rows],
            [r[2] == GoldAnswer.Answer.CORRECT for r in rows],
        )
    # Gold items are not versioned: one loaded after the item count was read may name an item
    # the state does not hold yet (no run of this state predicts it); it counts from the next load.
    gold = list(
        GoldItem.objects.filter(task=task, item__index__lt=state.n_items).values_list(
            "item__index", "answer"
        )
    )
    if gold:
        state.set_gold([g[0] for g in gold], [g[1] for g in gold])
