"""Queries compiled once and run with new values (``site_platform.prepared``)."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import CharField, DateTimeField, Exists, IntegerField, OuterRef
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from leaderboard.models import ApiToken, Task
from leaderboard.services.tokens import create_token
from site_platform.prepared import PreparedQuery, Slot, stand_in

from pipeline_support import make_task

pytestmark = pytest.mark.django_db


def _tasks_since(builds: list[int]) -> PreparedQuery:
    def build():
        builds.append(1)
        owner = stand_in(pk=Slot("owner", IntegerField()))
        return (
            Task.objects.filter(
                organizers__pk=owner.pk, created_at__gte=Slot("since", DateTimeField())
            )
            .order_by()
            .values_list("pk")
        )

    return PreparedQuery(build)


def test_built_once_and_run_with_each_calls_values():
    User = get_user_model()
    alice, bob = User.objects.create(username="alice"), User.objects.create(username="bob")
    mine, theirs = make_task(slug="prepared-a"), make_task(slug="prepared-b")
    mine.organizers.add(alice)
    theirs.organizers.add(bob)
    builds: list[int] = []
    query = _tasks_since(builds)
    past = timezone.now() - timedelta(days=1)
    assert query.fetch_one(owner=alice.pk, since=past) == (mine.pk,)
    assert query.fetch_one(owner=bob.pk, since=past) == (theirs.pk,)
    with CaptureQueriesContext(connection) as captured, pytest.raises(LookupError):
        query.fetch_one(owner=alice.pk, since=timezone.now() + timedelta(days=1))
    assert builds == [1]  # compiled once, whatever the values
    # The datetime went through the field's preparation (on SQLite a string, on PostgreSQL a
    # timestamp), and the same SQL text was sent each time.
    assert len(captured.captured_queries) == 1


def test_the_values_must_match_the_slots():
    query = _tasks_since([])
    with pytest.raises(TypeError, match="slots are"):
        query.fetch_one(owner=1)
    with pytest.raises(TypeError, match="slots are"):
        query.fetch_one(owner=1, since=timezone.now(), extra=2)


@pytest.mark.postgres
def test_on_postgres_the_statement_is_prepared_once_per_connection():
    query = _tasks_since([])
    user = get_user_model().objects.create(username="carol")
    task = make_task(slug="prepared-c")
    task.organizers.add(user)
    since = timezone.now() - timedelta(days=1)
    for _ in range(3):
        assert query.fetch_one(owner=user.pk, since=since) == (task.pk,)
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [row[0] for row in cursor.fetchall()]
    # One statement, prepared on the first call and reused by the next two.
    assert len([s for s in prepared if "leaderboard_task" in s]) == 1


def _token_with_user() -> PreparedQuery:
    return PreparedQuery(
        lambda: (
            ApiToken.objects.select_related("user")
            .filter(user__username=Slot("name", CharField()))
            .annotate(organizes=Exists(Task.objects.filter(organizers=OuterRef("user_id"))))
            .order_by("pk")
        )
    )


def test_instances_are_the_querysets_objects_with_related_objects_and_annotations():
    User = get_user_model()
    alice = User.objects.create(username="alice", first_name="Alice")
    make_task(slug="prepared-d").organizers.add(alice)
    create_token(user=alice)
    made = ApiToken.objects.get(user=alice)
    query = _token_with_user()
    (token,) = query.instances(name="alice")
    assert isinstance(token, ApiToken) and token.pk == made.pk
    assert token.digest == made.digest
    # The datetime came back converted as the queryset converts it (on SQLite from text).
    assert token.created == ApiToken.objects.get(pk=made.pk).created
    assert token.created.tzinfo is not None
    assert token.organizes is True
    with CaptureQueriesContext(connection) as captured:
        assert token.user.first_name == "Alice"  # loaded with the token: no statement
    assert captured.captured_queries == []
    assert query.instances(name="nobody") == []


def test_rows_convert_like_values_list():
    task = make_task(slug="prepared-e")
    query = PreparedQuery(
        lambda: Task.objects.filter(pk=Slot("task", IntegerField())).values_list(
            "slug", "created_at"
        )
    )
    assert query.rows(task=task.pk) == list(
        Task.objects.filter(pk=task.pk).values_list("slug", "created_at")
    )
    assert query.rows(task=task.pk + 1000) == []


def test_a_row_lock_outside_a_transaction_is_refused_where_the_database_takes_it():
    task = make_task(slug="prepared-f")
    query = PreparedQuery(
        lambda: (
            Task.objects.select_for_update()
            .filter(pk=Slot("task", IntegerField()))
            .values_list("pk")
        )
    )
    with transaction.atomic():
        assert query.rows(task=task.pk) == [(task.pk,)]
    if connection.features.has_select_for_update:
        # pytest-django's test transaction is the one open here: outside any atomic block in
        # a transactional test only, so it is checked on the flag Django itself reads.
        with (
            mock.patch.object(connection, "get_autocommit", return_value=True),
            pytest.raises(TransactionManagementError, match="outside of a transaction"),
        ):
            query.rows(task=task.pk)
