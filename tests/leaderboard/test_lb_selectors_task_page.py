"""Who may download a task's data files (``selectors.data_access_for``), by the task's
``data_access``: anyone who may see the task, the signed in, or members of a team that accepted
its current terms (any signed-in person while it has none); its organizers always."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser

from leaderboard.models import Task
from leaderboard.selectors import data_access_for
from leaderboard.services.tasks import update_task
from leaderboard.services.terms import accept_terms

pytestmark = pytest.mark.django_db


@pytest.fixture
def people(participant, team, organizer):
    return {
        "anonymous": AnonymousUser(),
        "stranger": get_user_model().objects.create_user("stranger"),
        "member": participant,
        "organizer": organizer,
    }


def allowed(task, people) -> dict[str, bool]:
    return {name: data_access_for(task=task, user=u).allowed for name, u in people.items()}


def test_public_files_are_for_anyone(task, people):
    update_task(task=task, data_access=Task.DataAccess.PUBLIC, terms="Terms.")
    assert allowed(task, people) == dict.fromkeys(people, True)


def test_signed_in_files_are_for_anyone_signed_in(task, people):
    update_task(task=task, data_access=Task.DataAccess.SIGNED_IN, terms="Terms.")
    assert allowed(task, people) == {
        "anonymous": False,
        "stranger": True,
        "member": True,
        "organizer": True,
    }
    assert "sign in" in data_access_for(task=task, user=people["anonymous"]).reason


def test_by_default_files_are_for_teams_that_accepted_the_terms(task, team, people):
    assert task.data_access == Task.DataAccess.TERMS_ACCEPTED  # the default
    update_task(task=task, terms="Terms.")
    assert allowed(task, people) == {
        "anonymous": False,
        "stranger": False,
        "member": False,
        "organizer": True,
    }
    refused = data_access_for(task=task, user=people["member"])
    assert "accept them for your team" in refused.reason
    accept_terms(task=task, team=team, user=people["member"])
    assert allowed(task, people)["member"] is True
    update_task(task=task, terms="New terms.")  # changed: accept again
    assert allowed(task, people)["member"] is False


def test_without_terms_the_default_lets_anyone_signed_in_download(task, people):
    assert allowed(task, people) == {
        "anonymous": False,
        "stranger": True,
        "member": True,
        "organizer": True,
    }
