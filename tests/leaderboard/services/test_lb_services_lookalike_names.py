"""Team names and task slugs unique by look (issue 29, N10 and the slug note): a lookalike is
refused naming what it collides with; the unique index on the key holds under races too."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from lookalike_names import LOOKALIKES_OF_TEAM_ALICE

from leaderboard.models import Task, Team
from leaderboard.services.tasks import TaskSettingsError, create_task
from leaderboard.services.teams import TeamError, create_team

pytestmark = pytest.mark.django_db


@pytest.fixture
def bob():
    return get_user_model().objects.create_user("bob", password="pw")


@pytest.mark.parametrize("name", LOOKALIKES_OF_TEAM_ALICE)
def test_a_lookalike_team_name_is_refused_naming_the_team(bob, name):
    create_team(name="Team Alice")
    with pytest.raises(TeamError) as caught:
        create_team(name=name, members=[bob])
    assert (caught.value.code, caught.value.http_status) == ("team_name_taken", 409)
    assert "'Team Alice'" in caught.value.message
    assert Team.objects.count() == 1 and not bob.teams.exists()


@pytest.mark.parametrize("name", ["team\nalice", "team \u202ealice", "bell\x07"])
def test_a_team_name_with_control_characters_is_refused(name):
    with pytest.raises(TeamError) as caught:
        create_team(name=name)
    assert caught.value.http_status == 400 and "may not contain" in caught.value.message
    assert not Team.objects.exists()


def test_a_team_name_is_stored_tidied():
    assert create_team(name=" Team\u00a0 Alice ").name == "Team Alice"


def test_the_unique_key_holds_where_no_check_ran():
    """A race (or any write that skips the service) still cannot store a lookalike."""
    Team.objects.create(name="Team Alice")
    with pytest.raises(IntegrityError), transaction.atomic():
        Team.objects.create(name="TEAM \u0410LICE")
    with pytest.raises(ValidationError, match="looks like the name of team 'Team Alice'"):
        Team(name="team alice").full_clean()


def test_a_renamed_team_keeps_its_key_in_step():
    team = Team.objects.create(name="Alpha")
    team.name = "Beta"
    team.save(update_fields=["name"])
    assert create_team(name="Alpha").name == "Alpha"
    with pytest.raises(TeamError):
        create_team(name="BETA")


def test_a_lookalike_task_slug_is_refused_naming_the_task():
    create_task(slug="ner-2026", title="NER")
    for slug in ("NER-2026", "ner-2O26"):
        with pytest.raises(TaskSettingsError) as caught:
            create_task(slug=slug, title="Another")
        assert caught.value.field_errors["slug"] == ["looks like the slug of task 'ner-2026'"]
    with pytest.raises(TaskSettingsError) as caught:
        create_task(slug="ner-2026", title="Again")
    assert "already exists" in str(caught.value.field_errors["slug"])
    assert Task.objects.count() == 1
    with pytest.raises(IntegrityError), transaction.atomic():
        Task.objects.create(slug="Ner-2026", title="raced")
