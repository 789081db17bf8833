"""The board, snapshots, run history, runs filters and details, quota, spend, me, the schema."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import call_command

from leaderboard.models import LeaderboardSnapshot, Run

pytestmark = pytest.mark.django_db
ERROR_KEYS = {"code", "message", "problems", "total", "run"}


def error(response, status: int, code: str | None = None) -> dict:
    assert response.status_code == status, response.content
    body = response.json()["error"]
    assert set(body) >= ERROR_KEYS
    if code:
        assert body["code"] == code, body
    return body


def streamed(response) -> str:
    return b"".join(response.streaming_content).decode()


# -- board and snapshots ----------------------------------------------------------------------
def test_board_is_the_latest_published_snapshot_with_what_it_rests_on(api, lb_world):
    board = api().get("/api/tasks/main/board/").json()
    assert {
        k: board[k]
        for k in (
            "task",
            "version",
            "published",
            "engine_version",
            "labels_version",
            "n_labels",
            "confidence",
        )
    } == {
        "task": "main",
        "version": 1,
        "published": True,
        "engine_version": "test-1",
        "labels_version": 6,
        "n_labels": 6,
        "confidence": 0.95,
    }
    assert board["methods"] == {"precision": ["wilson"], "recall": ["wilson"], "f1": ["wilson"]}
    assert [row["name"] for row in board["rows"]] == ["run-A", "run-B"]


def test_board_sorts_by_a_metric(api, lb_world):
    snapshot = lb_world.snapshots[0]
    rows = snapshot.rows
    rows[0]["recall"]["value"], rows[1]["recall"]["value"] = 0.2, 0.9
    rows.append(
        {**rows[0], "run": 999, "name": "no-value", "recall": {**rows[0]["recall"], "value": None}}
    )
    LeaderboardSnapshot.objects.filter(pk=snapshot.pk).update(rows=rows)

    def names(query):
        return [r["name"] for r in api().get(f"/api/tasks/main/board/?{query}").json()["rows"]]

    assert names("sort=recall") == ["run-B", "run-A", "no-value"]
    assert names("sort=recall&order=asc") == ["run-A", "run-B", "no-value"]
    error(api().get("/api/tasks/main/board/?sort=accuracy"), 400, "invalid")
    error(api().get("/api/tasks/main/board/?sort=f1&order=up"), 400, "invalid")
    error(api().get("/api/tasks/main/board/?order=asc"), 400, "invalid")


def test_board_without_a_published_snapshot_is_a_clear_404(api, lb_world):
    LeaderboardSnapshot.objects.filter(task=lb_world.task).update(published=False)
    body = error(api().get("/api/tasks/main/board/"), 404, "no_snapshot")
    assert "no published leaderboard" in body["message"]
    error(api().get("/api/tasks/nope/board/"), 404, "not_found")


def test_snapshot_exports_mark_runs_after_the_deadline(api, lb_world):
    late = Run.objects.get(task=lb_world.task, name="run-B")
    Run.objects.filter(pk=late.pk).update(after_deadline=True)
    rows = api().get("/api/tasks/main/snapshots/1/").json()["rows"]
    assert {row["name"]: row["after_deadline"] for row in rows} == {
        "run-A": False,
        "run-B": True,
    }
    text = streamed(api().get("/api/tasks/main/snapshots/1/?format=csv"))
    table = list(csv.DictReader(io.StringIO(text)))
    assert {row["name"]: row["after_deadline"] for row in table} == {
        "run-A": "false",
        "run-B": "true",
    }


def test_snapshot_csv_has_one_row_per_run_and_ranks_when_present(api, lb_world):
    response = api().get("/api/tasks/main/snapshots/1/?format=csv")
    assert response["Content-Type"].startswith("text/csv")
    assert "main-snapshot-1.csv" in response["Content-Disposition"]
    table = list(csv.DictReader(io.StringIO(streamed(response))))
    assert [(r["version"], r["name"], r["team"]) for r in table] == [
        ("1", "run-A", "team-A"),
        ("1", "run-B", "team-B"),
    ]
    assert float(table[0]["precision_value"]) == lb_world.published_value
    assert table[0]["provisional"] == "false" and "precision_rank_best" not in table[0]

    snapshot = lb_world.snapshots[0]
    rows = [{**row, "rank": {"precision": {"best": 1, "worst": 2}}} for row in snapshot.rows]
    LeaderboardSnapshot.objects.filter(pk=snapshot.pk).update(rows=rows)
    by_accept = api().get("/api/tasks/main/snapshots/1/", HTTP_ACCEPT="text/csv")
    ranked = list(csv.DictReader(io.StringIO(streamed(by_accept))))
    assert (ranked[0]["precision_rank_best"], ranked[0]["precision_rank_worst"]) == ("1", "2")
    assert ranked[0]["recall_rank_best"] == ""


def test_unknown_format_and_unknown_snapshot_are_404s_with_the_error_body(api, lb_world):
    error(api().get("/api/tasks/main/snapshots/1/?format=xml"), 404)
    error(api().get("/api/tasks/main/snapshots/99/"), 404, "not_found")
    error(api().get("/api/tasks/main/snapshots/99/?format=csv"), 404, "not_found")


def test_snapshot_list_is_paginated(api, lb_world, monkeypatch):
    from rest_framework.pagination import PageNumberPagination

    monkeypatch.setattr(PageNumberPagination, "page_size", 1)
    organizer = api(lb_world.users["org"])
    first = organizer.get("/api/tasks/main/snapshots/").json()
    assert first["count"] == 2 and len(first["results"]) == 1 and first["next"]
    assert first["results"][0]["version"] == 2 and first["results"][0]["published"] is False
    assert first["results"][0]["url"] == "http://testserver/api/tasks/main/snapshots/2/"
    error(organizer.get("/api/tasks/main/snapshots/?page=9"), 404)


# -- runs --------------------------------------------------------------------------------------
def test_runs_filter_by_state_and_team(api, lb_world):
    organizer = api(lb_world.users["org"])
    Run.objects.filter(pk=lb_world.runs["B"].pk).update(state=Run.State.AWAITING_LABELS)

    def names(query):
        return {
            r["name"] for r in organizer.get(f"/api/tasks/main/runs/?{query}").json()["results"]
        }

    assert names("state=scored") == {"run-A"}
    assert names("state=scored&state=awaiting_labels") == {"run-A", "run-B"}
    assert names("team=team-B") == {"run-B"}
    assert names("team=team-B&state=scored") == set()
    body = error(organizer.get("/api/tasks/main/runs/?state=bogus"), 400, "invalid")
    assert "state" in body["message"]


def test_run_details_are_editable_by_the_team_and_validated(api, lb_world):
    run = lb_world.runs["A"]
    client = api(lb_world.users["pa"])
    url = f"/api/runs/{run.pk}/"
    changed = client.patch(
        url, {"name": " Better ", "link": "https://example.org/paper"}, format="json"
    )
    assert changed.status_code == 200
    assert (changed.json()["name"], changed.json()["link"]) == (
        "Better",
        "https://example.org/paper",
    )
    run.refresh_from_db()
    assert run.name == "Better" and run.description == lb_world.secret_description["A"]
    error(client.patch(url, {"link": "ftp://x"}, format="json"), 400, "invalid")
    error(client.patch(url, {"name": ""}, format="json"), 400, "invalid")
    body = error(client.patch(url, {"state": "scored"}, format="json"), 400, "invalid")
    assert "state" in body["message"]
    error(client.patch(url, ["name"], format="json"), 400, "invalid")
    run.refresh_from_db()
    assert run.state == Run.State.SCORED and run.name == "Better"


def test_history_lists_each_metric_across_snapshots(api, lb_world):
    history = api(lb_world.users["admin"]).get(f"/api/runs/{lb_world.runs['B'].pk}/history/").json()
    assert history["run"] == lb_world.runs["B"].pk
    assert set(history["metrics"]) == {"precision", "recall", "f1"}
    assert [e["snapshot"] for e in history["metrics"]["precision"]] == [1, 2]


# -- quota, spend, organizer actions, me -------------------------------------------------------
def test_quota_counts_runs_and_refunds(api, lb_world):
    run = lb_world.runs["A"]
    Run.objects.create(
        task=run.task, team=run.team, name="failed", state=Run.State.FAILED, quota_refunded=True
    )
    quota = api(lb_world.users["pa"]).get("/api/tasks/main/quota/").json()
    assert quota == {
        "task": "main",
        "max_upload_bytes": 512 * 2**20,
        "max_predictions_per_run": 5_000_000,
        "teams": [
            {
                "team": "team-A",
                "used_total": 1,
                "limit_total": 5,
                "remaining_total": 4,
                "used_today": 1,
                "limit_today": 3,
                "remaining_today": 2,
                "remaining": 2,
                "next_slot_at": None,
                "refunded": 1,
            }
        ],
    }
    assert api(lb_world.users["org"]).get("/api/tasks/main/quota/").json()["teams"] == []


def test_spend_reports_budget_and_cost_per_run(api, lb_world):
    spend = api(lb_world.users["org"]).get("/api/tasks/main/spend/").json()
    assert (
        spend["label_budget"],
        spend["labels_requested"],
        spend["labels_verified"],
        spend["remaining"],
    ) == (500, 6, 6, 494)
    assert {(r["name"], r["n_requested"], r["n_verified"]) for r in spend["runs"]} == {
        ("run-A", 4, 4),
        ("run-B", 4, 4),
    }


def test_hold_and_publish_are_idempotent(api, lb_world):
    organizer = api(lb_world.users["org"])
    for _ in range(2):
        assert organizer.post("/api/tasks/main/hold/").json() == {
            "task": "main",
            "board_held": True,
            "latest_published": 1,
        }
    once = organizer.post("/api/tasks/main/publish/", {"release_hold": False}, format="json")
    assert once.json() == {"task": "main", "board_held": True, "latest_published": 2}
    released = organizer.post("/api/tasks/main/publish/", {}, format="json").json()
    assert released == {"task": "main", "board_held": False, "latest_published": 2}
    error(organizer.post("/api/tasks/main/publish/", {"release": 1}, format="json"), 400)
    error(organizer.post("/api/tasks/main/publish/", {"release_hold": "maybe"}, format="json"), 400)


def test_verified_items_export_streams_json(api, lb_world):
    response = api(lb_world.users["admin"]).get("/api/tasks/main/export/items/")
    assert response.streaming and response["Content-Type"] == "application/json"
    document = json.loads(streamed(response))
    assert document["task"] == "main" and len(document["items"]) == 6
    assert all(
        set(item) == {"key", "posterior", "judgments", "says_correct", "verified_at"}
        for item in document["items"]
    )


def test_me_lists_teams_and_tasks(api, lb_world):
    assert api(lb_world.users["pa"]).get("/api/me/").json() == {
        "username": "pa",
        "is_staff": False,
        "teams": ["team-A"],
        "organizes": [],
        "annotates": [],
    }
    assert api(lb_world.users["annotator"]).get("/api/me/").json()["annotates"] == ["main"]
    assert api(lb_world.users["other_org"]).get("/api/me/").json()["organizes"] == ["other"]


# -- the schema and its docs -------------------------------------------------------------------
def test_openapi_schema_validates_without_warnings(tmp_path):
    out = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    text = out.read_text()
    for path in ("/api/tasks/{slug}/board/", "/api/token/rotate/", "/api/runs/{run_id}/history/"):
        assert f"{path}:" in text


def test_docs_are_served_from_local_static_files(api, lb_world):
    page = api().get("/api/docs/").content.decode()
    assert "swagger-ui" in page and "cdn" not in page.lower()
    assert "/static/drf_spectacular_sidecar/" in page
    schema = api().get("/api/schema/?format=json").json()
    assert schema["openapi"].startswith("3.")


def test_every_operation_documents_the_throttle_answer(api, lb_world):
    # The default throttles apply to every view (anonymous callers share one budget per
    # address), so a client must find 429 and its error body on every operation.
    schema = api().get("/api/schema/?format=json").json()
    operations = [
        (method, path, operation)
        for path, methods in schema["paths"].items()
        for method, operation in methods.items()
        if method in {"get", "post", "put", "patch", "delete"}
    ]
    assert len(operations) >= 29
    for method, path, operation in operations:
        answer = operation["responses"].get("429")
        assert answer, (method, path)
        assert answer["content"]["application/json"]["schema"]["$ref"].endswith("/Error")


def test_swagger_ui_assets_are_served_locally(api, lb_world):
    page = api().get("/api/docs/").content.decode()
    bundle = page.split('src="', 1)[1].split('"', 1)[0]
    assert bundle.startswith("/static/drf_spectacular_sidecar/")
    response = api().get(bundle)
    assert response.status_code == 200
    assert b"SwaggerUI" in b"".join(
        response.streaming_content if response.streaming else [response.content]
    )


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("put", "/api/tasks/main/board/", 405, "method_not_allowed"),
        ("delete", "/api/runs/1/history/", 405, "method_not_allowed"),
        ("get", "/api/tasks/main/hold/", 405, "method_not_allowed"),
        ("get", "/api/no/such/thing/", 404, "not_found"),
    ],
)
def test_errors_have_the_one_body_everywhere(api, lb_world, method, path, status, code):
    error(getattr(api(lb_world.users["org"]), method)(path), status, code)


def test_a_lost_database_is_a_json_503_with_retry_after(api, lb_world, monkeypatch):
    from django.db import OperationalError

    import leaderboard.api.board_views as board_views

    def lost(task):
        raise OperationalError("could not connect to server: secret-host")

    monkeypatch.setattr(board_views, "latest_published_snapshot", lost)
    response = api(lb_world.users["pa"]).get("/api/tasks/main/board/")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    body = response.json()["error"]
    assert body["code"] == "unavailable" and "retry" in body["message"]
    assert "secret-host" not in response.content.decode()


def test_every_operation_of_both_apis_documents_the_unverified_email_answer(api, lb_world):
    # Every view on ApiView refuses a signed-in account whose address is not verified (403
    # unverified_email), whatever else it answers: the schema says so on each operation.
    schema = api().get("/api/schema/?format=json").json()
    operations = {
        (method, path): operation
        for path, methods in schema["paths"].items()
        for method, operation in methods.items()
        if method in {"get", "post", "put", "patch", "delete"}
    }
    assert any(path.startswith("/annotate/api/") for _, path in operations)
    missing = [
        key
        for key, operation in operations.items()
        if "unverified_email" not in operation["responses"].get("403", {}).get("description", "")
    ]
    assert missing == []
    error = {"$ref": "#/components/schemas/Error"}
    for operation in operations.values():
        assert operation["responses"]["403"]["content"]["application/json"]["schema"] == error
    # A 403 an operation documents already keeps its own text, with this one added.
    upload = operations[("post", "/api/tasks/{slug}/runs/")]["responses"]["403"]["description"]
    assert upload.startswith("Not allowed for this user.") and "unverified_email" in upload
