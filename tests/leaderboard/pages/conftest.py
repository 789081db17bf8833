"""Fixtures for the page tests: people, a task with runs, and stored snapshots to render.

Snapshots are written the way the worker writes them (rows with per-metric estimates and rank
intervals, plus matching ``Estimate`` rows), so the pages are tested on stored data only.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from evaluation.core.measures import OPEN_MEASURES
from leaderboard.models import Estimate

from worlds import stored_snapshot, two_team_board


def estimate(value, low, high, labels=40, method="wilson"):
    return {"value": value, "low": low, "high": high, "labels_used": labels, "method": method}


def write_snapshot(
    task,
    runs,
    *,
    version,
    published=True,
    ranks=True,
    details=None,
    labels=40,
    reference=(40, 12),
):
    """``runs``: list of (run, {metric: (value, low, high)}, {metric: (best, worst)} | None);
    ``reference``: the reference sample's (items, documents) recall rests on."""
    rows = []
    for run, metrics, rank in runs:
        row = {
            "run": run.pk,
            "name": run.name,
            "team": run.team.name,
            "state": run.state,
            "provisional": run.state != "scored",
            "n_predictions": run.n_predictions,
            "n_requested": run.n_requested,
            "n_verified": run.n_verified,
        }
        if run.state in ("scored", "partial"):
            row["outcome"] = run.outcome
        for metric in OPEN_MEASURES:
            value, low, high = metrics[metric]
            row[metric] = estimate(value, low, high, labels=labels)
        if ranks:
            row["rank"] = (
                {m: {"best": b, "worst": w} for m, (b, w) in rank.items()}
                if rank
                else {"precision": None, "recall": None, "f1": None}
            )
        rows.append(row)
    if details is None and ranks:
        details = {
            "ranking": {
                "method": "pairwise bootstrap, Holm",
                "family_level": 0.95,
                "interval_level": 0.95,
            }
        }
    snap = stored_snapshot(
        task,
        rows,
        version=version,
        published=published,
        engine_version="engine-7",
        labels_version=version * 10,
        reference_version=1,
        n_labels=labels,
        n_reference=reference[0],
        n_reference_documents=reference[1],
        details=details or {},
    )
    Estimate.objects.bulk_create(
        [
            Estimate(
                snapshot=snap,
                run=run,
                metric=m,
                value=metrics[m][0],
                low=metrics[m][1],
                high=metrics[m][2],
                level=0.95,
                labels_used=labels,
                method="wilson",
            )
            for run, metrics, _ in runs
            for m in OPEN_MEASURES
        ]
    )
    return snap


@pytest.fixture
def people(db):
    User = get_user_model()
    return {
        name: User.objects.create_user(name, password="pw")
        for name in ("alice", "bob", "org", "stranger")
    }


@pytest.fixture
def board_world(people, sent_messages):
    """Task ``ner`` (organizer ``org``), teams A (alice) and B (bob), three runs."""
    return two_team_board(people)


# Precision / recall / F1 orders differ on purpose, so sorting by each gives another order.
STANDARD = {
    "a1": (
        {"precision": (0.90, 0.85, 0.94), "recall": (0.40, 0.31, 0.50), "f1": (0.55, 0.47, 0.62)},
        {"precision": (1, 1), "recall": (2, 3), "f1": (1, 2)},
    ),
    "a2": (
        {"precision": (0.71, 0.65, 0.75), "recall": (0.80, 0.70, 0.88), "f1": (0.60, 0.52, 0.66)},
        {"precision": (2, 3), "recall": (1, 1), "f1": (1, 2)},
    ),
    "b1": (
        {"precision": (0.60, 0.50, 0.70), "recall": (0.50, 0.41, 0.58), "f1": (0.30, 0.22, 0.38)},
        {"precision": (2, 3), "recall": (2, 3), "f1": (3, 3)},
    ),
}


def standard_snapshot(world, *, version=1, published=True, ranks=True, reference=(40, 12)):
    return write_snapshot(
        world["task"],
        [(world["runs"][k], *STANDARD[k]) for k in ("a1", "a2", "b1")],
        version=version,
        published=published,
        ranks=ranks,
        reference=reference,
    )


class SnapshotWriter:
    write = staticmethod(write_snapshot)
    standard = staticmethod(standard_snapshot)
    STANDARD = STANDARD


@pytest.fixture
def snapshots() -> type[SnapshotWriter]:
    """``snapshots.write(task, runs, version=...)`` and ``snapshots.standard(world, ...)``."""
    return SnapshotWriter
