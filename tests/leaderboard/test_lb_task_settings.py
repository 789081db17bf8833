"""The settings table (``leaderboard.task_settings``) describes every setting of a task once:
the service, the page forms, the API and the admin take their lists from it."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.test import RequestFactory

from leaderboard.admin.tasks import TaskAdmin
from leaderboard.api.task_serializers import TaskSerializer, TaskWriteSerializer
from leaderboard.forms import (
    SETTING_GROUPS,
    TASK_PAGE_TEXT_FIELDS,
    TaskCreateForm,
    TaskPageTextForm,
    TaskSettingsForm,
)
from leaderboard.models import Task
from leaderboard.services.tasks import FROZEN_ONCE_RUNS, TASK_FIELDS
from leaderboard.task_settings import BY_NAME, TASK_SETTINGS, names

pytestmark = pytest.mark.django_db

# A task's fields that are not settings: the engine's and the phases' bookkeeping (the admin
# shows it read-only), the slug's lookalike keys, the engine's lease token, when it was made.
NOT_SETTINGS = {
    "id",
    "slug_key",
    "slug_shape_key",
    "engine_lock_token",
    "created_at",
    *TaskAdmin.readonly_fields,
}


def test_every_field_of_a_task_is_a_setting_in_the_table_or_bookkeeping():
    fields = {field.name for field in Task._meta.concrete_fields}
    assert set(names()) == fields - NOT_SETTINGS
    assert len(names()) == len(TASK_SETTINGS)  # each setting once
    assert set(names()) == TASK_FIELDS


def test_the_forms_the_api_and_the_admin_take_their_settings_from_the_table():
    task = Task(slug="t", title="T")
    assert tuple(TaskCreateForm().fields) == names(create=True)
    assert tuple(TaskPageTextForm(task=task).fields) == TASK_PAGE_TEXT_FIELDS
    for_open = tuple(name for name in names("settings", "phases") if name != "f_beta")
    assert tuple(TaskSettingsForm(task=task).fields) == for_open
    pool = Task(slug="p", title="P", kind=Task.Kind.CLOSED_POOL)
    assert tuple(TaskSettingsForm(task=pool).fields) == names("settings", "phases")
    assert [name for _, group in SETTING_GROUPS for name in group] == list(
        names("settings", "phases")
    )
    assert tuple(TaskWriteSerializer().fields) == names(api="public") + names(api="organizers")
    public = set(TaskSerializer().fields)
    assert set(names(api="public")) <= public and not set(names(api="organizers")) & public
    request = RequestFactory().get("/admin/")
    request.user = get_user_model()(is_superuser=True, is_staff=True)
    fieldsets = TaskAdmin(Task, admin.site).get_fieldsets(request)
    in_admin = [name for _, options in fieldsets for name in options["fields"]]
    assert set(names()) <= set(in_admin)
    assert {"kind", "f_beta", "design", "design_options"} == FROZEN_ONCE_RUNS


def test_a_setting_for_one_kind_says_so():
    assert BY_NAME["f_beta"].kinds == (Task.Kind.CLOSED_POOL,)
    assert set(BY_NAME["design"].kinds) == set(Task.Kind.values)
