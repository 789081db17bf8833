"""The admin's filters and lists are scoped like its rows (issue 29, N13): a staff organizer is
offered only the tasks they organize in every filter of every list, and never sees who holds an
API token (superusers only)."""

from __future__ import annotations

import re

import pytest
from django.contrib import admin
from django.contrib.admin.utils import get_fields_from_path
from django.test import Client, RequestFactory
from django.urls import reverse
from shared_world import copied_world, shared_world

from leaderboard.models import Task
from leaderboard.services.tokens import create_token

from role_world import build_page_world

pytestmark = pytest.mark.django_db

built_page_world = shared_world(build_page_world)


@pytest.fixture
def world(db, sent_jobs, built_page_world):
    return copied_world(built_page_world)


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _task_choices(html: str) -> set[str]:
    """The task ids the page's filters offer (``?task__id__exact=3``, ``gold__task__id__exact``)."""
    return set(re.findall(r"task__id__exact=(\d+)", html))


def test_every_admin_list_offers_a_staff_organizer_only_the_tasks_they_organize(world):
    # The staff organizer organizes ``other``; ``main`` and the draft ``hidden-draft`` are
    # another organizer's: their slugs were in every task filter.
    staff = _client(world.users["staff_org"])
    root = _client(world.users["admin"])
    theirs = {str(pk) for pk in Task.objects.filter(slug="other").values_list("pk", flat=True)}
    everyone = {str(pk) for pk in Task.objects.values_list("pk", flat=True)}
    filtered = 0
    for model in admin.site._registry:
        if model._meta.app_label not in ("leaderboard", "annotation", "evaluation"):
            continue
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        response = staff.get(url)
        if response.status_code == 403:
            continue
        assert response.status_code == 200, url
        html = response.content.decode()
        assert _task_choices(html) <= theirs, url
        assert "hidden-draft" not in html, url
        faceted = staff.get(url, {"_facets": "True"}).content.decode()
        assert _task_choices(faceted) <= theirs and "hidden-draft" not in faceted, url
        # A superuser is offered every task (where the filter shows at all: two choices or more).
        offered = _task_choices(root.get(url).content.decode())
        if offered:
            filtered += 1
            assert offered == everyone, url
    assert filtered >= 10  # the task filters of runs, items, judgments, leases, gold...


def test_a_staff_organizer_of_two_tasks_is_offered_both_in_the_filters(world):
    world.task.organizers.add(world.users["staff_org"])  # now ``main`` and ``other``
    html = _client(world.users["staff_org"]).get("/admin/leaderboard/run/").content.decode()
    offered = _task_choices(html)
    assert offered == {str(world.task.pk), str(Task.objects.get(slug="other").pk)}
    assert "hidden-draft" not in html


def test_every_filter_on_a_relation_is_scoped(world):
    """Any list filter on a relation, now or added later, comes out scoped: tasks to the ones
    organized, anything else to what the admin's own (scoped) rows refer to."""
    from leaderboard.admin.base import OrganizedTaskFilter

    request = RequestFactory().get("/admin/")
    request.user = world.users["staff_org"]
    checked = 0
    for model, model_admin in admin.site._registry.items():
        for spec in model_admin.get_list_filter(request):
            if not isinstance(spec, str):
                path, filter_class = spec
                related = get_fields_from_path(model, path)[-1].related_model
                expected = (
                    OrganizedTaskFilter
                    if related is Task
                    else (admin.RelatedOnlyFieldListFilter, OrganizedTaskFilter)
                )
                assert issubclass(filter_class, expected), (model, path)
                checked += 1
                continue
            field = get_fields_from_path(model, spec)[-1]
            if model._meta.app_label in ("leaderboard", "annotation", "evaluation"):
                assert not field.is_relation, (model, spec)
    assert checked >= 10


def test_the_api_token_list_is_for_superusers_only(world):
    create_token(user=world.users["pa"])
    create_token(user=world.users["annotator"])
    url = "/admin/leaderboard/apitoken/"
    staff = _client(world.users["staff_org"])
    assert staff.get(url).status_code == 403
    index = staff.get("/admin/").content.decode()
    assert url not in index
    listed = _client(world.users["admin"]).get(url).content.decode()
    for user in ("pa", "annotator"):
        assert f">{world.users[user].username}<" in listed


@pytest.mark.parametrize(
    "path",
    [
        "/admin/leaderboard/apitoken/",
        "/admin/leaderboard/teaminvitation/",
        "/admin/leaderboard/notification/",
        "/admin/leaderboard/mailoptout/",
    ],
)
def test_superusers_only_lists_are_neither_listed_nor_opened_by_staff(world, path):
    staff = _client(world.users["staff_org"])
    assert staff.get(path).status_code == 403
    assert path not in staff.get("/admin/").content.decode()
    assert _client(world.users["admin"]).get(path).status_code == 200


def test_the_task_form_offers_a_staff_organizer_only_the_people_of_their_tasks(world):
    # ``other`` has two organizers (other_org, staff_org) and no annotator; its change form
    # listed every account in its organizer and annotator pickers.
    other = Task.objects.get(slug="other")
    html = (
        _client(world.users["staff_org"])
        .get(f"/admin/leaderboard/task/{other.pk}/change/")
        .content.decode()
    )
    offered = set(re.findall(r'<option value="\d+"[^>]*>([^<]+)</option>', html))
    assert {"staff_org", "other_org"} <= offered
    for name in ("pa", "pb", "annotator", "org", "admin", "creator"):
        assert name not in offered, name
    everyone = _client(world.users["admin"]).get(f"/admin/leaderboard/task/{other.pk}/change/")
    assert {"pa", "annotator", "org"} <= set(
        re.findall(r'<option value="\d+"[^>]*>([^<]+)</option>', everyone.content.decode())
    )
