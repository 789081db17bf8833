"""Task and team services: validated settings, states, organizers, teams."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from evaluation.core.task_design import open_world_design
from leaderboard.models import Run, Task
from leaderboard.services.tasks import (
    TaskSettingsError,
    create_task,
    set_task_state,
    update_task,
)
from leaderboard.services.teams import TeamError, add_team_member, create_team

from pipeline_support import satisfy_checklist

pytestmark = pytest.mark.django_db


def test_create_task_with_organizers(organizer):
    task = create_task(
        slug="ner",
        title="NER",
        organizers=[organizer],
        confidence=0.9,
        label_budget=500,
        state=Task.State.DRAFT,
    )
    assert list(task.organizers.all()) == [organizer]
    assert (task.confidence, task.label_budget, task.state) == (0.9, 500, "draft")


@pytest.mark.parametrize(
    ("fields", "field", "fragment"),
    [
        ({"confidence": 2.0}, "confidence", "less than or equal to 0.999"),
        ({"target_half_width": 0}, "target_half_width", "greater than or equal to 0.001"),
        ({"design": "magic"}, "design", "unknown design 'magic'; choose one of default"),
        # Paper 003's design keeps no replayable record: its first planning job used to crash.
        ({"design": "published"}, "design", "'published' is a simulation baseline"),
        ({"design_options": {"max_strata": 0}}, "design_options", "max_strata"),
        ({"design_options": {"no_such_option": 1}}, "design_options", "no_such_option"),
        ({"state": "paused"}, "state", "not a valid choice"),
        (
            {"judgments_per_item": 3, "design_options": {"max_judgments_per_item": 2}},
            "design_options",
            "judgments_per_item must be >= 1 and <= max_judgments_per_item",
        ),
    ],
)
def test_invalid_settings_name_their_field(fields, field, fragment):
    with pytest.raises(TaskSettingsError) as info:
        create_task(slug="bad", title="Bad", **fields)
    assert field in info.value.field_errors
    assert fragment in " ".join(info.value.field_errors[field])
    assert info.value.message.startswith("invalid task settings (")
    assert not Task.objects.filter(slug="bad").exists()


def test_the_engine_design_follows_the_tasks_judgments_per_item_and_its_annotators():
    # Judgments per item is the minimum a new item gets; further looks go up to one judgment
    # per annotator at work, at most five, and never below the minimum.
    task = create_task(slug="many", title="Many", judgments_per_item=7)
    design = open_world_design(task.design_settings(), annotators=3)
    assert (design.judgments_per_item, design.max_judgments_per_item) == (7, 7)
    task = create_task(slug="few", title="Few", judgments_per_item=1)
    assert open_world_design(task.design_settings(), annotators=3).max_judgments_per_item == 3
    assert open_world_design(task.design_settings(), annotators=40).max_judgments_per_item == 5
    assert open_world_design(task.design_settings(), annotators=0).max_judgments_per_item == 1


def test_unknown_and_read_only_settings_are_refused():
    with pytest.raises(TaskSettingsError) as info:
        create_task(slug="t1", title="T", n_items=5, colour="red")
    assert info.value.message == "unknown or read-only task settings: colour, n_items"
    assert set(info.value.field_errors) == {"colour", "n_items"}


def test_duplicate_slug_and_bad_slug():
    create_task(slug="dup", title="One")
    with pytest.raises(TaskSettingsError) as info:
        create_task(slug="dup", title="Two")
    assert "slug" in info.value.field_errors
    with pytest.raises(TaskSettingsError) as info:
        create_task(slug="not a slug", title="Bad")
    assert "slug" in info.value.field_errors


def test_update_task_validates_everything_before_saving(task):
    update_task(task=task, title="New title", max_runs_per_team=9)
    task.refresh_from_db()
    assert (task.title, task.max_runs_per_team) == ("New title", 9)
    with pytest.raises(TaskSettingsError):
        update_task(task=task, title="Other", confidence=5)
    assert task.title == "New title"  # the object is left as it was
    task.refresh_from_db()
    assert task.title == "New title"


def test_design_is_frozen_once_runs_exist(task, team):
    update_task(task=task, design_options={"max_strata": 4})
    Run.objects.create(task=task, team=team, name="r")
    with pytest.raises(TaskSettingsError) as info:
        update_task(task=task, design_options={"max_strata": 5})
    assert info.value.message == "design_options cannot change once runs have been submitted"
    update_task(
        task=task, design="default", design_options={"max_strata": 4}, title="same design is fine"
    )


def test_states(task, team):
    satisfy_checklist(task)  # re-opening checks the list (test_lb_services_readiness.py)
    set_task_state(task=task, state=Task.State.CLOSED)
    assert Task.objects.get(pk=task.pk).state == "closed"
    update_task(task=task, state=Task.State.OPEN, title="reopened")
    task.refresh_from_db()
    assert (task.state, task.title) == ("open", "reopened")
    with pytest.raises(TaskSettingsError) as info:
        set_task_state(task=task, state="paused")
    assert info.value.message == "unknown state 'paused'; choose one of draft, open, closed"
    set_task_state(task=task, state=Task.State.DRAFT)
    set_task_state(task=task, state=Task.State.OPEN)
    Run.objects.create(task=task, team=team, name="r")
    with pytest.raises(TaskSettingsError) as info:
        set_task_state(task=task, state=Task.State.DRAFT)
    assert info.value.message == "a task with runs cannot go back to draft"


def test_teams(participant):
    team = create_team(name="  Beta ", members=[participant])
    assert team.name == "Beta" and list(team.members.all()) == [participant]
    other = get_user_model().objects.create_user("other")
    add_team_member(team=team, user=other)
    assert team.members.count() == 2
    with pytest.raises(TeamError, match="the team name 'Beta' is already taken"):
        create_team(name="Beta")
    with pytest.raises(TeamError, match="a team needs a name"):
        create_team(name=" ")


def test_display_template_is_validated_with_the_task_settings(organizer):
    from leaderboard.services.tasks import TaskSettingsError, create_task, update_task

    with pytest.raises(TaskSettingsError) as err:
        create_task(
            slug="dt", title="T", organizers=[organizer], display_template='{"layout": "carousel"}'
        )
    assert "display_template" in err.value.field_errors
    task = create_task(
        slug="dt",
        title="T",
        organizers=[organizer],
        display_template='{"layout": "pair", "left": "a", "right": "b"}',
    )
    with pytest.raises(TaskSettingsError) as err:
        update_task(task=task, display_template="{not json")
    assert "not valid JSON" in " ".join(err.value.field_errors["display_template"])
    task.refresh_from_db()
    assert '"pair"' in task.display_template
