"""A closed pool's F-beta: its beta is a task setting, checked, given to the design, and frozen
once runs exist (it says what the stored "fbeta" estimates are)."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from evaluation.core.task_design import closed_pool_design
from leaderboard.models import Run, Task
from leaderboard.services.tasks import TaskSettingsError, create_task, update_task
from leaderboard.services.teams import create_team

pytestmark = pytest.mark.django_db


def pool_task(**fields):
    return create_task(
        slug="fb", title="F-beta", kind=Task.Kind.CLOSED_POOL, measures=["f1", "fbeta"], **fields
    )


def test_beta_defaults_to_one_and_reaches_the_design():
    assert pool_task().f_beta == 1.0
    task = Task.objects.get(slug="fb")
    update_task(task=task, f_beta=2.0)
    design = closed_pool_design(Task.objects.get(slug="fb").design_settings())
    assert design.beta == 2.0 and design.targets == ("f1", "fbeta")


@pytest.mark.parametrize("beta", [0.0, -1.0, 50.0])
def test_a_beta_out_of_range_is_refused(beta):
    with pytest.raises(TaskSettingsError) as refused:
        pool_task(f_beta=beta)
    assert "f_beta" in refused.value.field_errors


def test_an_open_task_cannot_show_f_beta():
    with pytest.raises(TaskSettingsError) as refused:
        create_task(slug="open", title="Open", measures=["fbeta"])
    assert "an open task shows only" in " ".join(refused.value.field_errors["measures"])


def test_beta_is_frozen_once_runs_exist():
    task = pool_task(f_beta=0.5)
    update_task(task=task, f_beta=2.0)  # no run yet: allowed
    Run.objects.create(task=task, team=create_team(name="T"), name="r")
    with pytest.raises(TaskSettingsError) as refused:
        update_task(task=task, f_beta=0.5)
    assert "f_beta" in refused.value.field_errors
    assert Task.objects.get(pk=task.pk).f_beta == 2.0


def test_create_task_command_sets_beta():
    call_command(
        "create_task", "cmd", "--title", "C", "--kind", "closed_pool", "--measures", "fbeta",
        "--f-beta", "0.5",
    )  # fmt: skip
    assert Task.objects.get(slug="cmd").f_beta == 0.5
