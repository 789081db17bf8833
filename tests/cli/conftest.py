"""CLI test fixtures: a live server with an open and a closed task, a participant with a token,
a published snapshot, and a private config directory for the client."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from evaluation.core.measures import OPEN_MEASURES
from leaderboard.services.tokens import create_token

from worlds import stored_snapshot

PASSWORD = "alice-pw"


@pytest.fixture(autouse=True)
def client_home(tmp_path, monkeypatch):
    """The client's config lives under a fresh directory; no environment overrides leak in."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("LEADERBOARD_URL", raising=False)
    monkeypatch.delenv("LEADERBOARD_TOKEN", raising=False)
    return tmp_path


@pytest.fixture
def sent(monkeypatch):
    """Pipeline messages recorded instead of sent to a broker (the server runs in-process)."""
    messages = []
    monkeypatch.setattr(
        "leaderboard.jobs._send", lambda name, args, countdown=None: messages.append((name, args))
    )
    return messages


@pytest.fixture
def cli_world(transactional_db, sent):
    from types import SimpleNamespace

    from leaderboard.models import Run, Task
    from leaderboard.services.tasks import create_task
    from leaderboard.services.teams import create_team

    from pipeline_support import open_unchecked

    alice = get_user_model().objects.create_user("alice", password=PASSWORD)
    team = create_team(name="Alpha", members=[alice])
    task = open_unchecked(
        create_task(
            slug="linkage", title="Record linkage", max_runs_per_team=3, max_runs_per_team_per_day=3
        )
    )
    closed = create_task(slug="finished", title="Finished", state=Task.State.CLOSED)
    scored = Run.objects.create(
        task=task,
        team=team,
        submitted_by=alice,
        name="baseline",
        state=Run.State.SCORED,
        n_predictions=10,
        n_requested=8,
        n_verified=8,
    )
    estimate = {"value": 0.618, "low": 0.568, "high": 0.668, "labels_used": 8, "method": "wilson"}
    snapshot = stored_snapshot(
        task,
        [
            {
                "run": scored.pk,
                "name": "baseline",
                "team": "Alpha",
                "state": "scored",
                "provisional": False,
                "n_predictions": 10,
                "n_requested": 8,
                "n_verified": 8,
                "precision": estimate,
                "recall": estimate,
                "f1": estimate,
            }
        ],
        labels_version=8,
        n_labels=8,
    )
    from leaderboard.models import Estimate

    Estimate.objects.bulk_create(
        [
            Estimate(
                snapshot=snapshot,
                run=scored,
                metric=m,
                value=0.618,
                low=0.568,
                high=0.668,
                level=0.95,
                labels_used=8,
                method="wilson",
            )
            for m in OPEN_MEASURES
        ]
    )
    token = create_token(user=alice)
    return SimpleNamespace(
        user=alice,
        team=team,
        task=task,
        closed=closed,
        scored=scored,
        token=token.key,
        password=PASSWORD,
    )
