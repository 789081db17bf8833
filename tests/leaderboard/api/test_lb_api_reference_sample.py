"""The reference sample API: candidates upload (problems by line), a seeded draw, its status and
progress, a second draw refused while one is verified, bad input refused, a stuck draw's
settling asked and refused; all in the schema."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from reference_samples import complete_latest

from annotation.models import VerificationRequest
from annotation.services.reference_sample import drawn_documents
from leaderboard.models import ReferenceCandidate, ReferenceSample, Task
from leaderboard.selectors import reference_sample_status

from organizer_uploads import load_received, loaded

pytestmark = pytest.mark.django_db

BASE = "/api/tasks/linkage/reference-sample/"
ERROR_KEYS = {"code", "message", "problems", "total", "run"}
CANDIDATES = b"a\tdoc1\nb\tdoc1\nc\tdoc2\nd\tdoc3\ne\tdoc4\n"


def error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    body = response.json()["error"]
    assert set(body) >= ERROR_KEYS and body["code"] == code
    return body


def upload(client, data: bytes = CANDIDATES, name: str = "candidates.tsv"):
    """Post a candidates file; one received (``202``) is loaded here, as the worker would."""
    response = client.post(
        BASE + "candidates/", {"file": SimpleUploadedFile(name, data)}, format="multipart"
    )
    if response.status_code == 202:
        load_received()
    return response


@pytest.fixture
def client(api, task, organizer):
    return api(organizer)


def test_status_before_anything(client):
    response = client.get(BASE)
    assert response.status_code == 200
    assert response.json() == {
        "documents": 0,
        "candidates": 0,
        "reference": {"version": 0, "items": 0, "documents": 0, "enough": False, "settled": 0},
        "documents_drawn": 0,
        "documents_left": 0,
        "adds_to_sample": True,
        "sample": None,
    }


def test_upload_then_draw_then_status(client, task):
    response = upload(client)
    assert response.status_code == 202, response.content
    assert client.get(response["Location"]).json()["counts"] == {"candidates": 5, "documents": 4}
    response = client.post(BASE + "draw/", {"size": 2, "seed": 42}, format="json")
    assert response.status_code == 201, response.content
    drawn = response.json()
    assert drawn["documents"] == drawn_documents(["doc1", "doc2", "doc3", "doc4"], 2, 42)
    assert (drawn["state"], drawn["seed"], drawn["size"], drawn["n_documents"]) == (
        "verifying",
        42,
        2,
        4,
    )
    keys = set(
        ReferenceCandidate.objects.filter(document__in=drawn["documents"]).values_list(
            "item__key", flat=True
        )
    )
    assert set(VerificationRequest.objects.values_list("item__key", flat=True)) == keys
    assert (drawn["candidates"], drawn["resolved"], drawn["true"]) == (len(keys), 0, 0)
    assert (drawn["replace"], drawn["looks"], drawn["stuck_candidates"]) == (False, 0, [])
    assert (drawn["reference_items"], drawn["reference_documents"]) == (None, None)
    status = client.get(BASE).json()
    assert (status["documents"], status["candidates"]) == (4, 5)
    assert status["sample"]["id"] == drawn["id"]


def test_bad_lines_are_named_and_nothing_is_stored(client):
    body = client.get(upload(client, b"a\tdoc1\nb\nc\tdoc1\nc\tdoc2\n")["Location"]).json()
    assert (body["state"], body["problem_count"]) == ("rejected", 2)
    assert [(p["line"], p["message"]) for p in body["problems"]] == [
        (2, "document missing: expected key<TAB>document"),
        (4, "duplicate key 'c' (first on line 3)"),
    ]
    assert not ReferenceCandidate.objects.exists()


def test_missing_file(client):
    response = client.post(BASE + "candidates/", {}, format="multipart")
    error(response, 400, "missing_file")


def test_a_second_draw_is_refused_while_one_is_verified(client):
    upload(client)
    first = client.post(BASE + "draw/", {"size": 1}, format="json").json()
    body = error(client.post(BASE + "draw/", {"size": 1}, format="json"), 409, "sample_in_progress")
    assert body["sample"] == first["id"]
    assert ReferenceSample.objects.count() == 1
    # And a new candidates upload too: the drawn documents' candidates must not change.
    error(upload(client, b"z\tdoc9\n"), 409, "sample_in_progress")


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({}, 400, "invalid"),
        ({"size": 0}, 400, "invalid"),
        ({"size": "many"}, 400, "invalid"),
        ({"size": 2, "seed": -3}, 400, "invalid"),
        ({"size": 5}, 400, "invalid"),  # more than the 4 documents
        ({"size": 1, "sede": 4}, 400, "invalid"),  # a misspelt seed is not dropped
    ],
)
def test_bad_draws(client, body, status, code):
    upload(client)
    error(client.post(BASE + "draw/", body, format="json"), status, code)
    assert not ReferenceSample.objects.exists()
    assert not VerificationRequest.objects.exists()


def test_nothing_to_draw_from(client):
    error(client.post(BASE + "draw/", {"size": 1}, format="json"), 409, "no_candidates")


def test_an_organizer_of_another_task_is_refused(api, task, client):
    upload(client)
    other = get_user_model().objects.create_user("other-org")
    from leaderboard.services.tasks import create_task

    create_task(slug="other", title="Other", organizers=[other])
    outsider = api(other)
    error(outsider.get(BASE), 403, "permission_denied")
    error(upload(outsider), 403, "permission_denied")
    error(outsider.post(BASE + "draw/", {"size": 1}, format="json"), 403, "permission_denied")
    assert not ReferenceSample.objects.exists()


def test_the_schema_has_the_endpoints(api):
    schema = api().get("/api/schema/?format=json").json()
    for path, method in [
        ("/api/tasks/{slug}/reference-sample/", "get"),
        ("/api/tasks/{slug}/reference-sample/candidates/", "post"),
        ("/api/tasks/{slug}/reference-sample/draw/", "post"),
        ("/api/tasks/{slug}/reference-sample/cancel/", "post"),
        ("/api/tasks/{slug}/reference-sample/settle/", "post"),
    ]:
        assert method in schema["paths"][path], path
    assert "409" in schema["paths"]["/api/tasks/{slug}/reference-sample/draw/"]["post"]["responses"]
    cancel = schema["paths"]["/api/tasks/{slug}/reference-sample/cancel/"]["post"]
    assert {"200", "409"} <= set(cancel["responses"])
    settle = schema["paths"]["/api/tasks/{slug}/reference-sample/settle/"]["post"]
    assert {"202", "403", "409"} <= set(settle["responses"])


def test_cancel_then_draw_again(client, task):
    upload(client)
    drawn = client.post(BASE + "draw/", {"size": 2, "seed": 1}, format="json").json()
    queued = VerificationRequest.objects.count()
    response = client.post(BASE + "cancel/")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["id"], body["state"]) == (drawn["id"], "cancelled")
    assert body["cancelled_at"] is not None
    assert client.get(BASE).json()["sample"]["state"] == "cancelled"
    # Its requests stay queued; a second cancel changes nothing; a new draw is allowed.
    assert VerificationRequest.objects.count() == queued
    again = client.post(BASE + "cancel/")
    assert again.status_code == 200 and again.json()["cancelled_at"] == body["cancelled_at"]
    assert client.post(BASE + "draw/", {"size": 1}, format="json").status_code == 201
    assert upload(client).status_code == 409  # the new draw is being verified


def test_cancel_refused_when_complete_or_nothing_drawn(client):
    error(client.post(BASE + "cancel/"), 409, "no_sample")
    upload(client)
    client.post(BASE + "draw/", {"size": 1}, format="json")
    ReferenceSample.objects.update(state="complete", reference_version=1)
    body = error(client.post(BASE + "cancel/"), 409, "sample_complete")
    assert "is complete" in body["message"]
    assert ReferenceSample.objects.get().state == "complete"


@pytest.mark.parametrize("action", ["cancel/", "settle/"])
def test_only_the_tasks_organizers_cancel_or_settle(api, task, client, action):
    upload(client)
    client.post(BASE + "draw/", {"size": 1}, format="json")
    ReferenceSample.objects.update(stuck=["a"], n_resolved=0, n_candidates=1)
    other = get_user_model().objects.create_user("other-org2")
    from leaderboard.services.tasks import create_task

    create_task(slug="other2", title="Other", organizers=[other])
    participant = get_user_model().objects.create_user("someone")
    for user in (other, participant):
        error(api(user).post(BASE + action), 403, "permission_denied")
    assert api().post(BASE + action).status_code == 401
    sample = ReferenceSample.objects.get()
    assert sample.state == "verifying" and sample.settle_requested_at is None
    assert client.post(BASE + action).status_code in (200, 202)  # its organizer may


def draw(client, **body):
    return client.post(BASE + "draw/", body, format="json")


def test_draws_add_up_and_the_status_says_how_far(client, task):
    upload(client)
    first = draw(client, size=2, seed=5).json()
    drawn_keys = ReferenceCandidate.objects.filter(document__in=first["documents"])
    complete_latest(task, drawn_keys.values_list("item__key", flat=True)[:1])
    status = client.get(BASE).json()
    assert status["reference"] == {
        "version": 1,
        "items": 1,
        "documents": 1,
        "enough": False,
        "settled": 0,
    }
    assert (status["documents_drawn"], status["documents_left"], status["adds_to_sample"]) == (
        2,
        2,
        True,
    )
    assert (status["sample"]["reference_items"], status["sample"]["reference_documents"]) == (1, 1)
    second = draw(client, size=2, seed=5)
    assert second.status_code == 201, second.content
    assert not set(second.json()["documents"]) & set(first["documents"])
    assert second.json()["n_documents"] == 2
    complete_latest(task)
    body = error(draw(client, size=1), 409, "all_drawn")
    assert "every one of the 4 documents" in body["message"]
    assert client.get(BASE).json()["documents_left"] == 0


def test_a_draw_seen_complete_comes_with_the_version_it_wrote(client, task):
    """The status read as a worker completes the draw between the request's read of the task
    and of the draw (each statement sees the latest commit): never "complete" with version 0."""
    upload(client)
    draw(client, size=2, seed=5)
    read_before = Task.objects.get(pk=task.pk)  # what the view fetched before the commit
    complete_latest(task, ReferenceCandidate.objects.values_list("item__key", flat=True)[:1])
    status = reference_sample_status(read_before)
    assert status.sample.state == "complete"
    assert (status.reference.version, status.reference.items) == (1, 1)
    assert status.sample.reference_version == status.reference.version


def test_replacing_the_sample_needs_a_confirmation(client, task):
    upload(client)
    draw(client, size=2, seed=1)
    complete_latest(task, ["a", "b", "c", "d", "e"])
    body = error(draw(client, size=1, replace=True), 409, "confirmation_needed")
    assert "replaces the reference sample" in body["message"]
    assert ReferenceSample.objects.count() == 1
    again = draw(client, size=4, replace=True, confirm=True)
    assert again.status_code == 201, again.content
    assert (again.json()["replace"], again.json()["n_documents"]) == (True, 4)
    error(draw(client, size=1, confirm="maybe"), 400, "invalid")


def test_a_sample_uploaded_as_a_file_is_replaced_not_added_to(client, task):
    upload(client)
    response = client.post(
        "/api/tasks/linkage/reference/",
        {"file": SimpleUploadedFile("r.tsv", b"a\tdoc1\n")},
        format="multipart",
    )
    assert loaded(client, response)["state"] == "loaded"
    assert client.get(BASE).json()["adds_to_sample"] is False
    body = error(draw(client, size=1), 409, "cannot_extend")
    assert "was uploaded as a file" in body["message"]
    assert draw(client, size=1, replace=True, confirm=True).status_code == 201


def test_new_candidates_after_complete_draws_need_a_confirmation(client, task):
    upload(client)
    draw(client, size=1, seed=1)
    complete_latest(task)
    body = error(upload(client, b"z\tdoc9\n"), 409, "confirmation_needed")
    assert "new sampling frame" in body["message"]
    assert ReferenceCandidate.objects.count() == 5
    response = client.post(
        BASE + "candidates/",
        {"file": SimpleUploadedFile("c.tsv", b"z\tdoc9\n"), "confirm": "true"},
        format="multipart",
    )
    assert loaded(client, response)["counts"] == {"candidates": 1, "documents": 1}
    assert ReferenceCandidate.objects.count() == 1


def test_a_stuck_draw_lists_its_candidates(client, task):
    upload(client)
    drawn = draw(client, size=1, seed=1).json()
    ReferenceSample.objects.filter(pk=drawn["id"]).update(stuck=["a", "b"], n_looks=3)
    sample = client.get(BASE).json()["sample"]
    assert (sample["stuck_candidates"], sample["looks"]) == (["a", "b"], 3)


# Settling a draw's stuck candidates (the progress is what the latest estimation recorded).
def stuck(task, client, *, keys=("a", "b"), awaiting=0) -> dict:
    upload(client)
    drawn = draw(client, size=4, seed=1).json()
    unresolved = len(keys) + awaiting
    ReferenceSample.objects.filter(pk=drawn["id"]).update(
        stuck=list(keys), n_resolved=drawn["candidates"] - unresolved
    )
    return drawn


def test_settling_is_asked_and_the_draw_says_so(
    client, task, sent_jobs, django_capture_on_commit_callbacks
):
    drawn = stuck(task, client)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(BASE + "settle/")
    assert response.status_code == 202, response.content
    body = response.json()
    assert (body["id"], body["state"], body["stuck_candidates"]) == (
        drawn["id"],
        "verifying",
        ["a", "b"],
    )
    assert body["settle_requested_at"] is not None
    assert (body["settled"], body["settled_candidates"]) == (0, [])
    assert ("evaluation.estimate_task", [task.pk]) in sent_jobs
    # Asked again: the same request, unchanged.
    again = client.post(BASE + "settle/")
    assert (
        again.status_code == 202
        and again.json()["settle_requested_at"] == (body["settle_requested_at"])
    )
    assert client.get(BASE).json()["sample"]["settle_requested_at"] == body["settle_requested_at"]


def test_settling_is_refused_with_what_to_do(client, task):
    body = error(client.post(BASE + "settle/"), 409, "no_draw_verifying")
    assert "no reference sample has been drawn" in body["message"]
    drawn = stuck(task, client, keys=())
    body = error(client.post(BASE + "settle/"), 409, "nothing_stuck")
    assert body["sample"] == drawn["id"] and "wait for their answers" in body["message"]
    ReferenceSample.objects.update(stuck=["a"], n_resolved=0)
    body = error(client.post(BASE + "settle/"), 409, "answers_pending")
    assert body["message"].startswith(f"{drawn['candidates'] - 1} candidates of the draw are")
    ReferenceSample.objects.update(state="complete", reference_version=1)
    body = error(client.post(BASE + "settle/"), 409, "no_draw_verifying")
    assert "the latest draw is complete" in body["message"]
    assert not ReferenceSample.objects.exclude(settle_requested_at=None).exists()


def test_a_settled_draw_shows_what_it_decided_and_the_sample_how_many(client, task):
    upload(client)
    draw(client, size=4, seed=1)
    settled = [
        {"key": "a", "posterior": 0.62, "true": True},
        {"key": "c", "posterior": 0.31, "true": False},
    ]
    ReferenceSample.objects.update(settled=settled)
    complete_latest(task, ["a", "b", "d"], settled=["a"])
    status = client.get(BASE).json()
    assert status["reference"] == {
        "version": 1,
        "items": 3,
        "documents": 2,
        "enough": False,
        "settled": 1,
    }
    sample = status["sample"]
    assert (sample["state"], sample["settled"], sample["settled_candidates"]) == (
        "complete",
        2,
        settled,
    )
    detail = client.get("/api/tasks/linkage/").json()
    assert detail["reference_sample"]["settled"] == 1
