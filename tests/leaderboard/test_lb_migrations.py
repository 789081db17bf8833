"""Data migrations of the leaderboard app, run on rows as an older version stored them."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps
from django.core.exceptions import ValidationError

from leaderboard.models import Run, RunEvent

from worlds import stored_snapshot

pytestmark = pytest.mark.django_db


def test_stored_queued_reasons_lose_their_new_items_count(task, team):
    migration = importlib.import_module(
        "leaderboard.migrations.0007_queued_reasons_without_new_items"
    )
    run = Run.objects.create(
        task=task,
        team=team,
        name="old",
        state=Run.State.QUEUED,
        reason="1,204 predictions (1,000 new items)",
        n_new_items=1000,
    )
    RunEvent.objects.bulk_create(
        [
            RunEvent(run=run, state="received", reason="received x (3 new items)"),
            RunEvent(run=run, state="queued", reason="1,204 predictions (1,000 new items)"),
        ]
    )
    migration.drop_new_items(apps, None)
    run.refresh_from_db()
    assert run.reason == "1,204 predictions" and run.n_new_items == 1000
    assert list(
        RunEvent.objects.filter(run=run).order_by("id").values_list("reason", flat=True)
    ) == ["received x (3 new items)", "1,204 predictions"]


def test_stored_snapshots_get_their_reference_documents_where_still_known(task):
    from leaderboard.models import Item, LeaderboardSnapshot, ReferenceItem

    migration = importlib.import_module("leaderboard.migrations.0016_snapshot_reference_documents")
    items = Item.objects.bulk_create([Item(task=task, key=f"k{i}", index=i) for i in range(5)])
    # Two documents, and an item without one (a document of its own): 3.
    ReferenceItem.objects.bulk_create(
        ReferenceItem(task=task, item=item, group=group)
        for item, group in zip(items, ["d1", "d1", "d2", "d2", ""], strict=True)
    )
    task.reference_version = 2
    task.save()

    def snapshot(version, reference_version, n_reference):
        return stored_snapshot(
            task,
            version=version,
            engine_version="e",
            reference_version=reference_version,
            n_reference=n_reference,
        )

    current, older, none = snapshot(1, 2, 5), snapshot(2, 1, 4), snapshot(3, 0, 0)
    migration.count_documents(apps, None)
    documents = dict(
        LeaderboardSnapshot.objects.values_list("pk", "n_reference_documents").order_by("pk")
    )
    assert documents == {current.pk: 3, older.pk: None, none.pk: 0}


def test_stored_addresses_are_normalised_and_collisions_reported_not_dropped(django_user_model):
    from account_support import fullwidth, user_with_address
    from allauth.account.models import EmailAddress

    migration = importlib.import_module("leaderboard.migrations.0023_normalize_email_addresses")
    old = user_with_address("old", "old@example.net")
    twin = user_with_address("twin", "x@example.net")
    lookalike = user_with_address("lookalike", "y@example.net", verified=False)
    # As an older version stored them (the update skips today's normalising on save).
    spelt = f"x@{fullwidth('example')}.net"
    EmailAddress.objects.filter(user=old).update(email=f"old@{fullwidth('example')}.net")
    django_user_model.objects.filter(pk=old.pk).update(email=f"OLD@{fullwidth('EXAMPLE')}.net")
    EmailAddress.objects.filter(user=lookalike).update(email=spelt)
    collisions = migration.normalize_stored(apps, None)
    assert EmailAddress.objects.get(user=old).email == "old@example.net"
    assert django_user_model.objects.get(pk=old.pk).email == "old@example.net"
    assert EmailAddress.objects.get(user=lookalike).email == spelt  # kept, and reported
    assert collisions == [
        f"EmailAddress {spelt!r} (user {lookalike.pk}) is 'x@example.net', already the address "
        f"of user {twin.pk}: left as it is"
    ]
    assert EmailAddress.objects.count() == 3


def test_teams_and_tasks_that_already_look_alike_get_keys_of_their_own():
    """Issue 29: names stored before lookalikes were refused keep working, one key each, and
    still block new lookalikes of the first."""
    from leaderboard.models import Task, Team
    from leaderboard.services.teams import TeamError, create_team

    migration = importlib.import_module(
        "leaderboard.migrations.0024_team_history_and_lookalike_names"
    )
    first, second = Team.objects.create(name="alice"), Team.objects.create(name="bob")
    Team.objects.filter(pk=second.pk).update(name="ALICE", name_key="x", name_shape_key="y")
    Task.objects.create(slug="ner", title="NER")
    migration.fill_lookalike_keys(apps, None)
    keys = set(Team.objects.values_list("name_key", flat=True))
    assert len(keys) == 2 and "x" not in keys
    assert Team.objects.get(pk=first.pk).name_key == Team(name="Alice").lookalike().name_key
    with pytest.raises(TeamError, match="looks like the name of team 'alice'"):
        create_team(name="Alice")


def test_rows_that_already_looked_alike_stay_editable():
    """The second of two lookalikes kept from before, its keys its own: saving it (and its
    settings) neither clashes with the first's keys nor is refused as a lookalike."""
    from leaderboard.models import Task, Team
    from leaderboard.services.tasks import update_task

    migration = importlib.import_module(
        "leaderboard.migrations.0024_team_history_and_lookalike_names"
    )
    Team.objects.create(name="alice")
    second = Team.objects.create(name="bob")
    Team.objects.filter(pk=second.pk).update(name="ALICE")
    Task.objects.create(slug="ner", title="NER")
    later = Task.objects.create(slug="other", title="Other")
    Task.objects.filter(pk=later.pk).update(slug="NER")
    migration.fill_lookalike_keys(apps, None)
    team = Team.objects.get(pk=second.pk)
    team.full_clean()
    team.save()
    task = update_task(task=Task.objects.get(pk=later.pk), title="Still editable")
    assert Task.objects.get(pk=task.pk).title == "Still editable"
    team.name = "Alice"  # a new value is checked again
    with pytest.raises(ValidationError, match="looks like the name of team 'alice'"):
        team.full_clean()
