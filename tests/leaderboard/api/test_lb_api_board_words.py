"""The board's words in the API and the exports: each rank's text next to its numbers, a run's
``state_text`` next to its machine ``state``, and what recall rests on (the snapshot's
``reference``, ``reference_too_small`` on recall and F1). The CLI reads these."""

from __future__ import annotations

import csv
import io

import pytest

from leaderboard.models import LeaderboardSnapshot

pytestmark = pytest.mark.django_db

DASH = "\u2013"
SMALL = "recall rests on 3 reference items (30 needed)"  # lb_world: 3 items, documents uncounted
SMALL_NOTE = "recall not settled: 3 of 30 reference items"


def streamed(response) -> str:
    return b"".join(response.streaming_content).decode()


def published(world) -> LeaderboardSnapshot:
    return world.snapshots[0]


def update(snapshot: LeaderboardSnapshot, **fields) -> None:
    LeaderboardSnapshot.objects.filter(pk=snapshot.pk).update(**fields)


def ranked_rows(snapshot: LeaderboardSnapshot) -> list[dict]:
    ranks = [
        {"precision": {"best": 1, "worst": 2}, "recall": {"best": 1, "worst": 1}, "f1": None},
        {"precision": {"best": 1, "worst": 2}, "recall": {"best": 2, "worst": 2}, "f1": None},
    ]
    return [{**row, "rank": rank} for row, rank in zip(snapshot.rows, ranks, strict=True)]


def test_every_rank_has_its_text_beside_its_numbers(api, lb_world):
    snapshot = published(lb_world)
    update(snapshot, rows=ranked_rows(snapshot))
    rows = api().get("/api/tasks/main/board/").json()["rows"]
    assert [row["rank"] for row in rows] == [
        {
            "precision": {"best": 1, "worst": 2, "text": f"1{DASH}2"},
            "recall": {"best": 1, "worst": 1, "text": "1"},
            "f1": None,
        },
        {
            "precision": {"best": 1, "worst": 2, "text": f"1{DASH}2"},
            "recall": {"best": 2, "worst": 2, "text": "2"},
            "f1": None,
        },
    ]
    stored = LeaderboardSnapshot.objects.get(pk=snapshot.pk).rows
    assert "text" not in stored[0]["rank"]["precision"]  # words are derived, never stored


def test_the_csv_writes_ranks_and_states_in_the_same_words(api, lb_world):
    snapshot = published(lb_world)
    update(snapshot, rows=ranked_rows(snapshot))
    response = api().get("/api/tasks/main/snapshots/1/?format=csv")
    table = list(csv.DictReader(io.StringIO(streamed(response))))
    assert (table[0]["precision_rank"], table[0]["precision_rank_best"]) == (f"1{DASH}2", "1")
    assert (table[1]["recall_rank"], table[0]["f1_rank"]) == ("2", "")
    assert table[0]["state_text"] == f"precision ±0.050, target ±0.05: met; {SMALL_NOTE}"
    assert [table[0][f"{m}_reference_too_small"] for m in ("recall", "f1")] == ["true", "true"]
    assert "precision_reference_too_small" not in table[0]


def test_the_snapshot_says_what_recall_rests_on_and_flags_recall_and_f1(api, lb_world):
    board = api().get("/api/tasks/main/board/").json()
    assert (board["n_reference"], board["n_reference_documents"]) == (3, None)
    assert board["reference"] == {
        "items": 3,
        "documents": None,
        "min_items": 30,
        "min_documents": 10,
        "enough": False,
        "text": SMALL,
    }
    assert board["target_half_width"] == 0.05
    for row in board["rows"]:
        assert row["state"] == "scored"  # the machine state, unchanged
        assert row["state_text"] == f"precision ±0.050, target ±0.05: met; {SMALL_NOTE}"
        assert row["recall"]["reference_too_small"] and row["f1"]["reference_too_small"]
        assert "reference_too_small" not in row["precision"]


def test_an_ample_reference_sample_flags_nothing(api, lb_world):
    update(published(lb_world), n_reference=120, n_reference_documents=31)
    board = api().get("/api/tasks/main/board/").json()
    assert board["reference"]["enough"] is True
    assert board["reference"]["text"] == "recall rests on 120 reference items in 31 documents"
    assert not any(row[m]["reference_too_small"] for row in board["rows"] for m in ("recall", "f1"))
    assert board["rows"][0]["state_text"] == "precision ±0.050, target ±0.05: met"
    listed = api().get("/api/tasks/main/snapshots/").json()["results"]
    assert [s["n_reference_documents"] for s in listed] == [31]


def test_a_closed_pool_has_no_reference_sample_even_with_the_open_measures(api, lb_world):
    snapshot = published(lb_world)
    pool = {"closed_pool": {"measures": ["precision", "recall", "f1"], "f_beta": 1.0}}
    update(snapshot, details={**snapshot.details, **pool}, n_reference=0)
    board = api().get("/api/tasks/main/board/").json()
    assert board["reference"] is None
    assert not any("reference_too_small" in row["recall"] for row in board["rows"])
    assert board["rows"][0]["state_text"] == "widest interval ±0.050, target ±0.05: met"


def test_a_runs_state_text_reads_against_the_snapshot_its_viewer_may_see(api, lb_world):
    """The board is held: the team reads its run against the published snapshot, never the held
    one (which here says +-0.020); organizers read it against the held one."""
    held = lb_world.snapshots[1]
    run = lb_world.runs["A"]
    rows = [
        {**row, "precision": {**row["precision"], "low": 0.30, "high": 0.34}}
        if row["run"] == run.pk
        else row
        for row in held.rows
    ]
    update(held, rows=rows, n_reference=60, n_reference_documents=12)
    team = api(lb_world.users["pa"])
    organizer = api(lb_world.users["org"])
    for path in (f"/api/runs/{run.pk}/", "/api/tasks/main/runs/"):
        seen = team.get(path).json()
        seen = seen if "state_text" in seen else seen["results"][0]
        assert (seen["state"], seen["state_text"]) == (
            "scored",
            f"precision ±0.050, target ±0.05: met; {SMALL_NOTE}",
        )
        by_organizer = organizer.get(path).json()
        if "results" in by_organizer:
            by_organizer = next(r for r in by_organizer["results"] if r["id"] == run.pk)
        assert by_organizer["state_text"] == "precision ±0.020, target ±0.05: met"


def test_a_runs_history_flags_recall_and_f1_on_a_small_reference_sample(api, lb_world):
    run = lb_world.runs["A"]
    history = api(lb_world.users["pa"]).get(f"/api/runs/{run.pk}/history/").json()
    flags = {
        m: [e["reference_too_small"] for e in history["metrics"][m]] for m in history["metrics"]
    }
    assert flags == {"precision": [False], "recall": [True], "f1": [True]}
    update(published(lb_world), n_reference=30, n_reference_documents=10)
    history = api(lb_world.users["pa"]).get(f"/api/runs/{run.pk}/history/").json()
    assert not any(e["reference_too_small"] for es in history["metrics"].values() for e in es)


def test_the_schema_documents_the_new_fields(api, lb_world):
    schema = api().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    components = schema["components"]["schemas"]
    assert "state_text" in components["Run"]["properties"]
    assert {"reference", "target_half_width", "n_reference_documents"} <= set(
        components["Snapshot"]["properties"]
    )
    assert "reference_too_small" in components["Estimate"]["properties"]
