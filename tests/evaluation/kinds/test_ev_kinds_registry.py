"""The engine wings' registry (``evaluation.kinds.registry``): every kind of task has its wing,
the frame picks it by the task's kind, and a kind no wing serves fails the run with the reason
instead of planning it as another kind."""

from __future__ import annotations

import pytest

from evaluation.kinds.closed_pool import ClosedPoolEngine
from evaluation.kinds.open_world import OpenWorldEngine
from evaluation.kinds.registry import ENGINES, engine_for
from evaluation.services import estimate_task, plan_run
from leaderboard.models import Run, Task

from pipeline_support import add_items, add_run, make_task, make_team


def test_every_kind_of_task_has_an_engine_wing() -> None:
    assert set(ENGINES) == set(Task.Kind.values)


@pytest.mark.parametrize(
    ("kind", "wing"),
    [(Task.Kind.OPEN, OpenWorldEngine), (Task.Kind.CLOSED_POOL, ClosedPoolEngine)],
)
def test_the_wing_is_the_one_of_the_tasks_kind(kind: str, wing: type) -> None:
    engine = engine_for(Task(kind=kind))
    assert isinstance(engine, wing)
    assert engine.kind == kind


def test_a_kind_no_wing_serves_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="no engine serves tasks of kind 'third'"):
        engine_for(Task(kind="third"))


@pytest.mark.django_db
def test_a_run_of_a_kind_no_wing_serves_fails_with_the_reason() -> None:
    task = make_task()
    add_items(task, 3)
    run = add_run(task, make_team(), [0, 1])
    Task.objects.filter(pk=task.pk).update(kind="third")
    assert plan_run(run.pk) == "failed"
    run.refresh_from_db()
    assert run.state == Run.State.FAILED
    assert "no engine serves tasks of kind 'third'" in run.reason
    with pytest.raises(ValueError, match="no engine serves"):
        estimate_task(task.pk)
