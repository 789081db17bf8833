"""Data migrations of the leaderboard app, run on rows as an older version stored them."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from leaderboard.models import Run, RunEvent

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
