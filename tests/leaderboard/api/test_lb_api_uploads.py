"""The upload REST API: tasks, run uploads and their refusals, run status, reference samples."""

from __future__ import annotations

import gzip
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile, TemporaryUploadedFile
from django.utils import timezone
from rest_framework.throttling import ScopedRateThrottle

from leaderboard.api import views as api_views
from leaderboard.kinds import open_world
from leaderboard.models import Item, ReferenceSample, Run, RunPredictions, Task
from leaderboard.services import runs as runs_service
from leaderboard.services.ingest import ingest_run
from leaderboard.services.tasks import create_task
from leaderboard.services.teams import create_team
from leaderboard.services.tokens import create_token

from organizer_uploads import loaded

pytestmark = pytest.mark.django_db

RUNS = "/api/tasks/linkage/runs/"
RUN = b"a\t0.9\nb\t0.1\nc\t0.5\n"
ERROR_KEYS = {"code", "message", "problems", "total", "run"}


def run_file(data: bytes = RUN, name: str = "run.tsv") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="text/tab-separated-values")


def error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    body = response.json()["error"]
    assert set(body) >= ERROR_KEYS and body["code"] == code
    return body


def upload(client, data: bytes = RUN, url: str = RUNS, file_name: str = "run.tsv", **fields):
    return client.post(url, {"file": run_file(data, file_name), **fields}, format="multipart")


def validated(client, response) -> dict:
    """After a 202: the worker's validation of the run, then the run as its team reads it."""
    assert response.status_code == 202, response.content
    ingest_run(response.json()["id"])
    return client.get(response.json()["url"]).json()


@pytest.fixture
def stranger(db):
    return get_user_model().objects.create_user("stranger")


# -- tasks -------------------------------------------------------------------------------------
def test_task_list_shows_drafts_only_to_their_organizers(api, task, organizer, stranger):
    create_task(slug="hidden", title="Draft", state=Task.State.DRAFT, organizers=[organizer])
    create_task(slug="done", title="Closed", state=Task.State.CLOSED)
    slugs = {t["slug"] for t in api().get("/api/tasks/").json()["results"]}
    assert slugs == {"linkage", "done"}
    assert {t["slug"] for t in api(stranger).get("/api/tasks/").json()["results"]} == slugs
    mine = {t["slug"] for t in api(organizer).get("/api/tasks/").json()["results"]}
    assert mine == {"linkage", "done", "hidden"}
    assert api().get("/api/tasks/hidden/").status_code == 404
    assert api(organizer).get("/api/tasks/hidden/").status_code == 200


def test_task_detail_is_public_settings(api, task, organizer):
    body = api().get("/api/tasks/linkage/").json()
    assert body["slug"] == "linkage" and body["state"] == "open"
    assert body["max_runs_per_team"] == 5 and body["url"].endswith("/api/tasks/linkage/")
    assert "design_options" not in body and "seed" not in body and "items" not in body
    assert "design_options" in api(organizer).get("/api/tasks/linkage/").json()
    body = error(api().get("/api/tasks/nope/"), 404, "not_found")
    assert body["message"] == "there is no task 'nope'"


def test_creating_tasks_needs_staff_or_the_permission(api, participant):
    payload = {"slug": "new-task", "title": "New", "confidence": 0.9}
    body = error(api().post("/api/tasks/", payload, format="json"), 401, "not_authenticated")
    body = error(
        api(participant).post("/api/tasks/", payload, format="json"), 403, "permission_denied"
    )
    assert body["message"] == (
        "creating tasks needs staff status or the permission leaderboard.add_task"
    )
    participant.user_permissions.add(Permission.objects.get(codename="add_task"))
    participant = get_user_model().objects.get(pk=participant.pk)  # fresh permission cache
    response = api(participant).post("/api/tasks/", payload, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["confidence"] == 0.9
    assert list(Task.objects.get(slug="new-task").organizers.all()) == [participant]
    staff = get_user_model().objects.create_user("staff", is_staff=True)
    response = api(staff).post("/api/tasks/", {"slug": "by-staff", "title": "S"}, format="json")
    assert response.status_code == 201
    assert list(Task.objects.get(slug="by-staff").organizers.all()) == [staff]


def test_with_task_creation_anyone_a_plain_user_creates_and_organizes_a_task(
    api, participant, settings
):
    settings.TASK_CREATION = "anyone"
    response = api(participant).post("/api/tasks/", {"slug": "mine", "title": "M"}, format="json")
    assert response.status_code == 201, response.content
    assert list(Task.objects.get(slug="mine").organizers.all()) == [participant]
    error(
        api().post("/api/tasks/", {"slug": "anon", "title": "A"}, format="json"),
        401,
        "not_authenticated",
    )


def test_invalid_task_settings(api):
    staff = get_user_model().objects.create_user("staff", is_staff=True)
    body = error(
        api(staff).post("/api/tasks/", {"slug": "x", "title": "X", "confidence": 7}, format="json"),
        400,
        "invalid",
    )
    assert body["problems"] == [
        {"line": None, "message": "confidence: Ensure this value is less than or equal to 0.999."}
    ]
    body = error(
        api(staff).post(
            "/api/tasks/", {"slug": "y", "title": "Y", "design": "magic"}, format="json"
        ),
        400,
        "invalid",
    )
    assert "unknown design 'magic'" in body["message"]
    assert "design" in body["fields"]


def test_only_organizers_of_the_task_change_it(api, task, organizer, participant):
    body = error(
        api().patch("/api/tasks/linkage/", {"title": "x"}, format="json"), 401, "not_authenticated"
    )
    other = create_task(slug="other", title="Other")
    other.organizers.add(participant)
    body = error(
        api(participant).patch("/api/tasks/linkage/", {"title": "x"}, format="json"),
        403,
        "permission_denied",
    )
    assert body["message"] == "only the organizers of task 'linkage' may do this"
    response = api(organizer).patch(
        "/api/tasks/linkage/", {"title": "Renamed", "state": "closed"}, format="json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["title"] == "Renamed" and response.json()["state"] == "closed"
    error(
        api(organizer).patch("/api/tasks/linkage/", {"judgments_per_item": 0}, format="json"),
        400,
        "invalid",
    )


# -- run uploads -------------------------------------------------------------------------------
def test_upload_a_run(api, task, team, participant, sent_jobs, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(api(participant), name="baseline", description="d")
    assert response.status_code == 202, response.content
    body = response.json()
    run = Run.objects.get()
    assert body["id"] == run.pk and body["name"] == "baseline" and body["state"] == "received"
    assert body["url"] == f"http://testserver/api/runs/{run.pk}/" == response["Location"]
    assert sent_jobs == [("evaluation.ingest_run", [run.pk])]
    with django_capture_on_commit_callbacks(execute=True):
        body = validated(api(participant), response)
    assert body["state"] == "queued"
    # How many items were new is for organizers only (it tells what other teams predicted).
    assert (body["n_predictions"], body["n_new_items"], body["team"]) == (3, None, "Alpha")
    assert sent_jobs.names() == ["evaluation.ingest_run", "evaluation.plan_run"]


def test_an_upload_is_answered_before_it_is_parsed(api, task, team, participant, monkeypatch):
    """A big file cannot hold a web worker: the request stores it, a worker parses it."""
    calls = []
    real = open_world.parse_run_file
    monkeypatch.setattr(
        open_world, "parse_run_file", lambda *a, **kw: calls.append(1) or real(*a, **kw)
    )
    response = upload(api(participant), b"".join(b"key-%d\t0.5\n" % i for i in range(5000)))
    assert response.status_code == 202 and response.json()["state"] == "received"
    assert calls == [] and not Item.objects.exists()
    assert validated(api(participant), response)["n_predictions"] == 5000 and calls == [1]


def test_an_object_store_that_is_down_answers_503_and_counts_nothing(
    api, task, team, participant, unreachable_object_store, sent_jobs
):
    response = upload(api(participant))
    body = error(response, 503, "unavailable")
    assert response["Retry-After"] == "5"
    assert body["message"] == (
        "the file storage is unavailable, so nothing was stored or counted; retry shortly"
    )
    assert not Run.objects.exists() and sent_jobs == []
    assert api(participant).get("/api/tasks/linkage/quota/").json()["teams"][0]["used_total"] == 0


def test_the_same_file_twice_409_pointing_to_the_first_run(api, task, team, participant):
    first = upload(api(participant), name="first")
    body = error(upload(api(participant), name="again"), 409, "duplicate")
    assert body["run"] == first.json()["id"]
    assert body["message"].startswith(
        f"this file was already submitted as run {first.json()['id']} ('first', received)"
    )
    assert Run.objects.count() == 1
    assert api(participant).get("/api/tasks/linkage/quota/").json()["teams"][0]["used_total"] == 1


def test_the_same_run_gzipped_or_with_crlf_is_a_duplicate_other_content_is_not(
    api, task, team, participant
):
    first = upload(api(participant), name="first")
    for same in (gzip.compress(RUN), RUN.replace(b"\n", b"\r\n")):
        body = error(upload(api(participant), same, file_name="run.tsv.gz"), 409, "duplicate")
        assert body["run"] == first.json()["id"]
    assert Run.objects.count() == 1
    other = upload(api(participant), gzip.compress(RUN + b"d\t0.2\n"), file_name="run.tsv.gz")
    assert other.status_code == 202, other.content
    assert other.json()["sha256"] != first.json()["sha256"]


def test_upload_with_a_token(task, team, participant, sent_jobs):
    from rest_framework.test import APIClient

    token = create_token(user=participant)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    response = upload(client, gzip.compress(RUN), file_name="run.tsv.gz")
    assert response.status_code == 202, response.content
    assert Run.objects.get().file_name == "run.tsv.gz"


def test_anonymous_uploads_get_401(api, task):
    body = error(upload(api()), 401, "not_authenticated")
    assert body["message"] == "Authentication credentials were not provided."


def test_unknown_task_404(api, participant, team):
    body = error(upload(api(participant), url="/api/tasks/nope/runs/"), 404, "not_found")
    assert body["message"] == "there is no task 'nope'"


def test_closed_task_409(api, task, team, participant):
    Task.objects.filter(pk=task.pk).update(state=Task.State.CLOSED)
    body = error(upload(api(participant)), 409, "task_closed")
    assert body["message"] == "task 'linkage' is closed: it accepts runs only while it is open"


def test_not_a_team_member_403(api, task, team, stranger):
    body = error(upload(api(stranger)), 403, "not_team_member")
    assert (
        body["message"]
        == "you are in no team: make one (/teams/) or join one by an invitation link"
    )
    body = error(upload(api(stranger), team="Alpha"), 403, "not_team_member")
    assert body["message"] == "you are not a member of team 'Alpha'"


def test_several_teams_need_the_team_field(api, task, team, participant, sent_jobs):
    create_team(name="Beta", members=[participant])
    body = error(upload(api(participant)), 400, "invalid")
    assert body["message"].startswith("you are in several teams ('Alpha', 'Beta')")
    response = upload(api(participant), team="Beta")
    assert response.status_code == 202 and response.json()["team"] == "Beta"
    response = upload(api(participant), team=str(team.pk))
    assert response.status_code == 202 and response.json()["team"] == "Alpha"


def test_over_quota_429(api, task, team, participant):
    Run.objects.bulk_create(
        [
            Run(
                task=task,
                team=team,
                name=f"r{i}",
                state=Run.State.QUEUED,
                created_at=timezone.now() - timedelta(hours=2),
            )
            for i in range(3)
        ]
    )
    body = error(upload(api(participant)), 429, "over_quota")
    assert body["message"].startswith(
        "team 'Alpha' has submitted 3 runs to task 'linkage' in "
        "the last 24 hours, the limit is 3 per day; the next slot"
    )


def test_rejected_file_with_problems_by_line(api, task, team, participant, sent_jobs):
    body = validated(api(participant), upload(api(participant), b"a\t0.5\nb\tx\na\t0.1\n"))
    assert body["state"] == "rejected"
    assert body["errors"] == [
        {"line": 2, "message": "score 'x' is not a number"},
        {"line": 3, "message": "duplicate key 'a' (first on line 1)"},
    ]
    assert body["error_count"] == 2
    assert body["reason"] == "rejected: 2 problems (first: line 2: score 'x' is not a number)"
    assert not Item.objects.exists() and not RunPredictions.objects.exists() and sent_jobs == []
    quota = api(participant).get("/api/tasks/linkage/quota/").json()["teams"][0]
    assert quota["used_total"] == 0  # a rejected run spends no quota


def test_missing_file_400(api, task, team, participant):
    body = error(
        api(participant).post(RUNS, {"name": "x"}, format="multipart"), 400, "missing_file"
    )
    assert body["message"] == "no file: send it as the multipart form field `file`"


def test_bad_fields_400(api, task, team, participant):
    body = error(upload(api(participant), name="n" * 121), 400, "invalid")
    assert body["problems"] == [
        {"line": None, "message": "name: Ensure this field has no more than 120 characters."}
    ]


def test_too_large_413(api, task, team, participant):
    Task.objects.filter(pk=task.pk).update(max_upload_bytes=100)
    body = error(upload(api(participant), b"k\t0.5\n" * 40), 413, "too_large")
    assert (
        body["message"] == "the file is 240 bytes, over the limit of 100 bytes for task 'linkage'"
    )
    # Declared far over the limit: refused before the body is read.
    body = error(upload(api(participant), b"k\t0.5\n" * 200_000), 413, "too_large")
    assert body["message"].startswith("the request is 1.1 MiB, over the limit of 100 bytes")
    # Small when compressed, too big once decompressed: a rejected run says why.
    body = error(upload(api(participant), gzip.compress(b"k\t0.5\n" * 40)), 413, "too_large")
    assert body["problems"][0]["message"] == (
        "the file is larger than the limit of 100 bytes once decompressed; reading stopped"
    )
    assert Run.objects.get(pk=body["run"]).state == Run.State.REJECTED


def test_large_uploads_are_spooled_to_disk_not_memory(
    api, task, team, participant, settings, monkeypatch, sent_jobs
):
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 1024
    seen = []
    real = api_views.submit_upload

    def spy(**kwargs):
        seen.append(type(kwargs["upload"]))
        return real(**kwargs)

    monkeypatch.setattr(api_views, "submit_upload", spy)
    data = b"".join(b"key-%d\t0.5\n" % i for i in range(2000))
    response = upload(api(participant), data)
    assert seen == [TemporaryUploadedFile]
    assert validated(api(participant), response)["n_predictions"] == 2000


def test_uploads_are_throttled(api, task, team, participant, monkeypatch, sent_jobs):
    monkeypatch.setattr(
        ScopedRateThrottle,
        "THROTTLE_RATES",
        {**ScopedRateThrottle.THROTTLE_RATES, "uploads": "2/hour"},
    )
    client = api(participant)
    assert upload(client, b"a\n").status_code == 202
    assert upload(client, b"b\n").status_code == 202
    body = error(upload(client, b"c\n"), 429, "throttled")
    assert body["message"].startswith("Request was throttled.")
    assert client.get(RUNS).status_code == 200  # listing is not an upload


# -- runs --------------------------------------------------------------------------------------
def test_run_lists(api, task, team, participant, organizer, stranger, sent_jobs):
    upload(api(participant))
    other_team = create_team(name="Other", members=[stranger])
    Run.objects.create(task=task, team=other_team, name="theirs")
    assert [r["name"] for r in api(participant).get(RUNS).json()["results"]] == ["run"]
    assert [r["name"] for r in api(organizer).get(RUNS).json()["results"]] == ["theirs", "run"]
    error(api().get(RUNS), 401, "not_authenticated")


def test_run_detail_is_for_the_team_organizers_and_superusers(
    api, task, team, participant, organizer, stranger, sent_jobs
):
    response = upload(api(participant), b"a\t0.5\n\nb\t2\n")
    validated(api(participant), response)
    url = f"/api/runs/{response.json()['id']}/"
    detail = api(participant).get(url).json()
    assert detail["state"] == "rejected" and detail["error_count"] == 2
    assert detail["reason"].startswith("rejected: 2 problems")
    assert detail["errors"][0] == {
        "line": 2,
        "message": "blank line (only the end of the file may have blank lines)",
    }
    assert [e["state"] for e in detail["events"]] == ["received", "validating", "rejected"]
    assert detail["finished_at"] is not None
    assert api(organizer).get(url).status_code == 200
    staff = get_user_model().objects.create_user("staff", is_staff=True)
    assert api(staff).get(url).status_code == 404  # staff status grants no organizer rights
    assert api(get_user_model().objects.create_superuser("root")).get(url).status_code == 200
    create_team(name="Other", members=[stranger])
    body = error(api(stranger).get(url), 404, "not_found")
    assert body["message"] == f"there is no run {detail['id']}"
    error(api().get(url), 404, "not_found")
    error(api(stranger).get("/api/runs/999999/"), 404, "not_found")


def test_run_detail_shows_at_most_50_errors(api, task, team, participant):
    response = upload(api(participant), b"".join(b"k%d\tbad\n" % i for i in range(80)))
    detail = validated(api(participant), response)
    assert len(detail["errors"]) == 50 and detail["error_count"] == 80


# -- reference samples -------------------------------------------------------------------------
REFERENCE = "/api/tasks/linkage/reference/"


def test_organizers_upload_the_reference_sample(api, task, organizer, sent_jobs):
    response = upload(api(organizer), b"a\tdoc1\nb\tdoc2\n", url=REFERENCE)
    assert response.status_code == 202, response.content
    body = loaded(api(organizer), response)
    assert body["counts"] == {"items": 2, "documents": 2, "reference_version": 1}
    body = loaded(api(organizer), upload(api(organizer), b"a\n", url=REFERENCE))
    assert body["counts"] == {"items": 1, "documents": 1, "reference_version": 2}
    # The organizer's view of the task gives the size beside the version; others see neither.
    detail = api(organizer).get("/api/tasks/linkage/").json()
    assert detail["reference_version"] == 2
    assert detail["reference_sample"] == {
        "version": 2,
        "items": 1,
        "documents": 1,
        "enough": False,
        "settled": 0,
    }
    assert "reference_sample" not in api().get("/api/tasks/linkage/").json()


def test_reference_upload_refusals(api, task, organizer, participant, team):
    body = error(upload(api(participant), b"a\n", url=REFERENCE), 403, "permission_denied")
    assert body["message"] == "only the organizers of task 'linkage' may do this"
    error(upload(api(), b"a\n", url=REFERENCE), 401, "not_authenticated")
    body = loaded(api(organizer), upload(api(organizer), b"a\na\n", url=REFERENCE))
    assert body["state"] == "rejected"
    assert body["problems"] == [{"line": 2, "message": "duplicate key 'a' (first on line 1)"}]
    error(api(organizer).post(REFERENCE, {}, format="multipart"), 400, "missing_file")
    body = error(upload(api(organizer), url="/api/tasks/nope/reference/"), 404, "not_found")
    assert body["message"] == "there is no task 'nope'"
    assert not Item.objects.exists()
    # A draw of the sample built in the product being verified would write over it.
    ReferenceSample.objects.create(task=task, seed=1, size=1, documents=["d"], n_documents=1)
    body = error(upload(api(organizer), b"a\n", url=REFERENCE), 409, "sample_in_progress")
    assert "is being verified" in body["message"]
    assert not Item.objects.exists()


def test_a_run_with_more_lines_than_the_task_takes_is_refused_as_it_is_received(
    api, task, team, participant, monkeypatch, sent_jobs
):
    # The line limit follows the task: its predictions per run plus 1,000 blank lines at the end.
    monkeypatch.setattr(runs_service, "TRAILING_BLANK_LINES", 2)
    Task.objects.filter(pk=task.pk).update(max_predictions_per_run=3)
    client = api(participant)
    assert upload(client, RUN + b"\n\n").status_code == 202  # 3 + 2 lines: received
    body = error(upload(client, RUN + b"\n\n\n"), 413, "too_large")
    assert body["problems"] == [
        {
            "line": None,
            "message": "the file has more than the limit of 5 lines (task 'linkage' takes at most "
            "3 predictions or keys per file, one per line, and up to 2 blank lines at its end); "
            "reading stopped",
        }
    ]
    assert Run.objects.get(pk=body["run"]).state == Run.State.REJECTED
    assert error(upload(client, b"".join(b"k%d\t0.5\n" % i for i in range(6))), 413, "too_large")
    gzipped = gzip.compress(b"".join(b"k%d\t0.5\n" % i for i in range(6)))
    assert error(upload(client, gzipped, file_name="run.tsv.gz"), 413, "too_large")


def test_a_task_taking_more_predictions_than_the_organizers_default_takes_a_pool_that_large(
    api, organizer, settings, media_root
):
    # ORGANIZER_UPLOAD_MAX_LINES is the site's default cap; a task whose runs may be larger
    # takes a pool as large as its runs may be.
    settings.ORGANIZER_UPLOAD_MAX_LINES = 10
    create_task(
        slug="big-pool",
        title="Big pool",
        organizers=[organizer],
        kind=Task.Kind.CLOSED_POOL,
        max_predictions_per_run=20,
    )
    client = api(organizer)
    url = "/api/tasks/big-pool/pool/"
    keys = b"".join(b"p%d\n" % i for i in range(20))
    too_many = keys + b"\n" * (runs_service.TRAILING_BLANK_LINES + 1)
    refused = client.post(url, {"file": run_file(too_many, "pool.tsv")}, format="multipart")
    assert refused.status_code == 413
    assert "takes at most 20 predictions or keys per file" in refused.json()["error"]["message"]
    response = client.post(url, {"file": run_file(keys, "pool.tsv")}, format="multipart")
    assert loaded(client, response)["counts"] == {"items": 20}
