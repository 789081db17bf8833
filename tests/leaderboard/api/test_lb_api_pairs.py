"""The pair view in the API (issue 31): the board's and a snapshot's ``pairs``, a run history's
``neighbours``, read from the differences the worker stored, under the board's visibility."""

from __future__ import annotations

import pytest

from leaderboard.models import Estimate, Run

from worlds import stored_snapshot, two_team_board

pytestmark = pytest.mark.django_db

F1 = {"a1": 0.55, "a2": 0.60, "b1": 0.30}


@pytest.fixture
def world(django_user_model):
    people = {
        n: django_user_model.objects.create_user(n, password="pw") for n in ("alice", "bob", "org")
    }
    return two_team_board(people)


def snapshot(world, *, version, gap, published=True):
    """F1 a-two 0.60, a-one 0.55, b-one 0.30 (precision and recall alike); pairs for F1 only,
    a-two against a-one differing by ``gap``."""
    runs = world["runs"]
    cell = {
        k: {"value": v, "low": v - 0.05, "high": v + 0.05, "labels_used": 9, "method": "m"}
        for k, v in F1.items()
    }
    rows = [
        {
            "run": runs[k].pk,
            "name": runs[k].name,
            "team": runs[k].team.name,
            "state": "scored",
            "provisional": False,
            **dict.fromkeys(("precision", "recall", "f1"), cell[k]),
            "rank": {m: {"best": 1, "worst": 3} for m in ("precision", "recall", "f1")},
        }
        for k in ("a1", "a2", "b1")
    ]
    a1, a2, b1 = (runs[k].pk for k in ("a1", "a2", "b1"))
    details = {
        "ranking": {
            "method": "paired-differences-max-t",
            "family_level": 0.95,
            "pair_levels": {"precision": 0.99, "recall": 0.99, "f1": 0.99},
            "runs_ranked": {"precision": 3, "recall": 3, "f1": 3},
            "pairs": {
                "precision": [],
                "recall": [],
                "f1": [
                    [a2, a1, gap, gap - 0.06, gap + 0.06],
                    [a1, b1, 0.25, 0.18, 0.32],
                    [a2, b1, 0.30, 0.22, 0.38],
                ],
            },
        }
    }
    snap = stored_snapshot(
        world["task"], rows, version=version, published=published, details=details
    )
    Estimate.objects.bulk_create(
        [
            Estimate(
                snapshot=snap,
                run=runs[k],
                metric=m,
                value=F1[k],
                low=F1[k] - 0.05,
                high=F1[k] + 0.05,
                level=0.95,
                labels_used=9,
                method="m",
            )
            for k in runs
            for m in ("precision", "recall", "f1")
        ]
    )
    return snap


def texts(pairs):
    return [p["text"] for p in pairs]


def test_the_board_lists_each_ranked_run_against_the_next(api, world):
    snapshot(world, version=1, gap=0.05)
    body = api().get("/api/tasks/ner/board/").json()
    assert body["pairs"]["precision"] == body["pairs"]["recall"] == []  # none stored
    assert texts(body["pairs"]["f1"]) == [
        "a-two and a-one not separated at 95% confidence; difference 0.050 [-0.010, 0.110]",
        "a-one above b-one with 95% confidence; difference 0.250 [0.180, 0.320]",
    ]
    first = body["pairs"]["f1"][0]
    assert first["above"] == world["runs"]["a2"].pk and first["below"] == world["runs"]["a1"].pk
    assert first["separated"] is False and first["confidence"] == 0.95
    assert first["difference"] == pytest.approx(0.05) and first["low"] == pytest.approx(-0.01)


def test_the_board_closes_up_over_a_withdrawn_run_and_the_snapshot_keeps_its_record(api, world):
    snapshot(world, version=1, gap=0.05)
    Run.objects.filter(pk=world["runs"]["a1"].pk).update(state=Run.State.WITHDRAWN)
    board = api().get("/api/tasks/ner/board/").json()
    assert texts(board["pairs"]["f1"]) == [
        "a-two above b-one with 95% confidence; difference 0.300 [0.220, 0.380]"
    ]
    record = api().get("/api/tasks/ner/snapshots/1/").json()
    assert len(record["pairs"]["f1"]) == 2


def test_a_board_without_stored_pairs_has_none(api, world):
    stored_snapshot(
        world["task"],
        [],
        version=1,
        details={"ranking": {"method": "bonferroni-simultaneous-intervals"}},
    )
    assert api().get("/api/tasks/ner/board/").json()["pairs"] == {}


def test_run_history_has_the_neighbours_of_the_newest_snapshot_the_viewer_may_see(api, world):
    snapshot(world, version=1, gap=0.05)
    snapshot(world, version=2, gap=0.07, published=False)
    a1 = world["runs"]["a1"].pk
    url = f"/api/runs/{a1}/history/"
    team = api(world["alice"]).get(url).json()["neighbours"]
    assert texts(team["f1"]) == [
        "a-two and a-one not separated at 95% confidence; difference 0.050 [-0.010, 0.110]",
        "a-one above b-one with 95% confidence; difference 0.250 [0.180, 0.320]",
    ]
    organizer = api(world["org"]).get(url).json()["neighbours"]
    assert organizer["f1"][0]["difference"] == pytest.approx(0.07)
    # Another team sees no history of the run, the public no held snapshot.
    assert api(world["bob"]).get(url).status_code == 404
    assert api().get("/api/tasks/ner/snapshots/2/").status_code == 404


def test_the_schema_describes_the_pairs(api):
    schema = api().get("/api/schema/?format=json").json()["components"]["schemas"]
    assert {"above", "below", "difference", "low", "high", "separated", "text"} <= set(
        schema["Pair"]["properties"]
    )
    assert "pairs" in schema["Snapshot"]["properties"]
    assert "neighbours" in schema["RunHistory"]["properties"]
