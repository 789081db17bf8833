"""The issue's checks from outside: an organizer, annotators and a participant use the public HTTP
API only (``/api/...`` and the annotation queue's ``/annotate/api/...``, with their tokens), on a
live server with a real Redis broker and Celery worker, on data no other test reads
(``tests/data/outside``: febrl4 records 400 to 4999 and a dblp-acm pool).

- A fresh open-world task at default settings (a draft; one judgment per item, confidence 0.95,
  gold rate 0.05): its candidates uploaded, twelve gold items, two annotators invited; a draw of
  five documents answered correctly through the queue on the draft is exactly its true
  candidates; a second draw of five adds to it (the union: 30 items in 10 documents); the
  checklist turns ready and the task opens.
- On it, a comma-separated run with a header is refused at upload (``wrong_format``): no item, no
  verification request, no quota; a run of malformed keys is held, not queued; a real run is
  queued.
- A closed pool: a run before its pool is refused (to a draft, which only its organizers see:
  ``not_found``; open without its pool, as tasks created before the checklist are: ``no_pool``),
  stores nothing and never blocks the pool, which uploads; runs are then accepted.

Database writes other than through the API: the people (users with passwords: the API has no
sign-up), the organizer's permission to create tasks (an admin's grant), and, for the closed
pool's early run, the task opened without its pool (a state the API can no longer make: the
checklist refuses it). Everything else is read back through the API, and the database is only
read to check that nothing was stored (items, verification requests, runs) and which keys the
reference sample holds (the API gives its size).
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
import requests
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from annotation.models import VerificationRequest
from leaderboard.models import Item, ReferenceItem, Run, Task

pytestmark = [
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(300),
]

DATA = Path(__file__).resolve().parents[1] / "data" / "outside"
OPEN_WORLD, POOL = DATA / "febrl4", DATA / "dblp-acm"
TIMEOUT = 30  # seconds for one HTTP request


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


TRUE_CANDIDATES = set(lines(OPEN_WORLD / "truth.tsv"))
DOCUMENT = dict(line.split("\t") for line in lines(OPEN_WORLD / "candidates.tsv"))


class Api:
    """One person on the public API with their token; a new connection per request (a kept-alive
    one would hold a live-server thread, and its database connection, past the test)."""

    def __init__(self, site: str, username: str, password: str) -> None:
        self.site = site
        made = requests.post(
            f"{site}/api/token/",
            json={"username": username, "password": password},
            timeout=TIMEOUT,
        )
        assert made.status_code == 201, made.text
        self.headers = {"Authorization": f"Token {made.json()['key']}"}

    def get(self, path: str) -> requests.Response:
        return requests.get(self.site + path, headers=self.headers, timeout=TIMEOUT)

    def post(self, path: str, **body) -> requests.Response:
        return requests.post(self.site + path, headers=self.headers, timeout=TIMEOUT, **body)

    def patch(self, path: str, **body) -> requests.Response:
        return requests.patch(self.site + path, headers=self.headers, timeout=TIMEOUT, **body)

    def ok(self, method: str, path: str, status: int, **body) -> dict:
        response = getattr(self, method)(path, **body)
        assert response.status_code == status, (method, path, response.status_code, response.text)
        return response.json()

    def refused(self, method: str, path: str, status: int, code: str, **body) -> dict:
        error = self.ok(method, path, status, **body)["error"]
        assert error["code"] == code, error
        return error


def person(site: str, username: str, *, creates_tasks: bool = False) -> Api:
    """A user (made in the database: the API has no sign-up) signed in to the API."""
    user = get_user_model().objects.create_user(username, password=f"{username}-pass")
    if creates_tasks:  # the task creator role, granted once by an admin
        user.user_permissions.add(Permission.objects.get(codename="add_task"))
    return Api(site, username, f"{username}-pass")


def upload(name: str, content: bytes) -> dict:
    return {"files": {"file": (name, content)}}


def invite_annotators(organizer: Api, slug: str, annotators: list[Api]) -> None:
    for annotator in annotators:
        key = organizer.ok(
            "post", f"/api/tasks/{slug}/invitations/", 201, json={"role": "annotator"}
        )
        taken = annotator.ok("post", "/api/invitations/accept/", 200, json={"key": key["key"]})
        assert taken == {"task": slug, "role": "annotator"}


def readiness(organizer: Api, slug: str) -> dict[str, bool]:
    checks = organizer.ok("get", f"/api/tasks/{slug}/readiness/", 200)["checks"]
    return {check["key"]: check["ok"] for check in checks if check["blocking"]}


def answer_served(annotators: list[Api], slug: str) -> int:
    """Each annotator answers what the queue serves them, right every time (the display of an
    item without a payload is its key), until the queue has nothing for them; returns how many."""
    answered = 0
    for annotator in annotators:
        while True:
            claim = annotator.ok(
                "post", f"/annotate/api/tasks/{slug}/claim", 200, json={"count": 3}
            )
            if not claim["assignments"]:
                assert claim["status"] == "empty", claim
                break
            for lease in claim["assignments"]:
                assert lease["display"]["layout"] == "key"
                verdict = "correct" if lease["display"]["value"] in TRUE_CANDIDATES else "incorrect"
                body = {"client_id": str(uuid.uuid4()), "token": lease["token"], "answer": verdict}
                stored = annotator.ok("post", "/annotate/api/answers", 201, json=body)
                assert stored["answer"]["counted"], stored
                answered += 1
    return answered


def verify_draw(organizer: Api, annotators: list[Api], slug: str, wait_for) -> dict:
    """The annotators answer (the looks the estimations ask included) until the latest draw is
    complete; returns the reference sample's status."""

    def complete():
        answer_served(annotators, slug)
        status = organizer.ok("get", f"/api/tasks/{slug}/reference-sample/", 200)
        assert status["sample"]["stuck_candidates"] == [], status["sample"]
        return status if status["sample"]["state"] == "complete" else None

    return wait_for(complete, timeout=120, interval=0.3, message="the draw to complete")


def expected_reference(*documents: list[str]) -> dict[str, str]:
    drawn = {d for ds in documents for d in ds}
    return {key: DOCUMENT[key] for key in TRUE_CANDIDATES if DOCUMENT[key] in drawn}


def run_settles(owner: Api, run_id: int, wait_for) -> dict:
    """The run as its team sees it once the worker has validated it."""

    def validated():
        run = owner.ok("get", f"/api/runs/{run_id}/", 200)
        return run if run["state"] not in ("received", "validating") else None

    return wait_for(validated, timeout=60, interval=0.2, message=f"run {run_id} validated")


def upload_loads(organizer: Api, received: dict, wait_for) -> dict:
    """An organizer's upload as the API tells it once the worker has loaded (or rejected) it."""
    path = received["url"].split("://", 1)[1].split("/", 1)[1]

    def settled():
        upload = organizer.ok("get", f"/{path}", 200)
        return upload if upload["state"] in ("loaded", "rejected") else None

    return wait_for(settled, timeout=60, interval=0.2, message=f"upload {received['id']} loaded")


@pytest.fixture
def site(live_server, celery_worker) -> str:
    return live_server.url


def test_a_fresh_open_task_builds_its_reference_sample_opens_and_stops_junk_runs(site, wait_for):
    started = time.monotonic()
    organizer = person(site, "olivia", creates_tasks=True)
    annotators = [person(site, "ann-1"), person(site, "ann-2")]
    slug = "outside"
    task = organizer.ok("post", "/api/tasks/", 201, json={"slug": slug, "title": "Outside"})
    assert (task["state"], task["kind"], task["judgments_per_item"]) == ("draft", "open", 1)
    assert task["confidence"] == 0.95
    assert readiness(organizer, slug) == {
        "annotators": False,
        "reference_sample": False,
        "gold": False,
    }
    candidates = (OPEN_WORLD / "candidates.tsv").read_bytes()
    received = organizer.ok(
        "post",
        f"/api/tasks/{slug}/reference-sample/candidates/",
        202,
        **upload("c.tsv", candidates),
    )
    loaded = upload_loads(organizer, received, wait_for)
    assert (loaded["state"], loaded["counts"]) == ("loaded", {"candidates": 182, "documents": 20})
    received = organizer.ok(
        "post",
        f"/api/tasks/{slug}/gold/",
        202,
        **upload("gold.tsv", (OPEN_WORLD / "gold.tsv").read_bytes()),
    )
    gold = upload_loads(organizer, received, wait_for)
    assert (gold["state"], gold["counts"]["created"]) == ("loaded", 12)
    invite_annotators(organizer, slug, annotators)

    # A first draw of five documents, answered on the draft: exactly its true candidates.
    first = organizer.ok(
        "post", f"/api/tasks/{slug}/reference-sample/draw/", 201, json={"size": 5, "seed": 2801}
    )
    assert (first["state"], first["n_documents"], first["replace"]) == ("verifying", 20, False)
    status = verify_draw(organizer, annotators, slug, wait_for)
    truth = expected_reference(first["documents"])
    sample = status["sample"]
    assert (sample["true"], sample["resolved"]) == (len(truth), sample["candidates"])
    assert (sample["reference_items"], sample["reference_documents"]) == (15, 5)
    assert status["reference"] == {
        "version": 1,
        "items": 15,
        "documents": 5,
        "enough": False,
        "settled": 0,
    }
    assert reference_keys(slug) == truth
    assert readiness(organizer, slug)["reference_sample"] is False  # 30 items in 10 documents
    organizer.refused("patch", f"/api/tasks/{slug}/", 409, "task_not_ready", json={"state": "open"})

    # A second draw adds five documents not drawn yet: the union.
    second = organizer.ok(
        "post", f"/api/tasks/{slug}/reference-sample/draw/", 201, json={"size": 5, "seed": 2802}
    )
    assert second["n_documents"] == 15 and not set(second["documents"]) & set(first["documents"])
    status = verify_draw(organizer, annotators, slug, wait_for)
    union = expected_reference(first["documents"], second["documents"])
    assert status["reference"] == {
        "version": 2,
        "items": 30,
        "documents": 10,
        "enough": True,
        "settled": 0,
    }
    assert (status["documents_drawn"], status["documents_left"]) == (10, 10)
    assert reference_keys(slug) == union
    assert readiness(organizer, slug) == {
        "annotators": True,
        "reference_sample": True,
        "gold": True,
    }
    opened = organizer.ok("patch", f"/api/tasks/{slug}/", 200, json={"state": "open"})
    assert opened["state"] == "open"
    built = time.monotonic() - started

    # Junk runs never reach a human; a real run is queued.
    participant = person(site, "pat")
    participant.ok("post", "/api/teams/", 201, json={"name": "Outsiders"})
    items, requested = Item.objects.filter(task__slug=slug).count(), requests_of(slug)
    run_text = (OPEN_WORLD / "run.tsv").read_text()
    csv = "key,score\n" + run_text.replace("\t", ",")
    error = participant.refused(
        "post", f"/api/tasks/{slug}/runs/", 400, "wrong_format", **upload("run.csv", csv.encode())
    )
    assert error["message"].startswith("line 1: this looks like CSV (comma-separated)")
    assert participant.ok("get", f"/api/runs/{error['run']}/", 200)["state"] == "rejected"
    assert used_runs(participant, slug) == 0
    assert Item.objects.filter(task__slug=slug).count() == items and requests_of(slug) == requested
    junk = "".join(
        json.dumps({"key": line.replace("\t", ","), "score": 0.5}) + "\n"
        for line in run_text.splitlines()
    )
    held = participant.ok(
        "post", f"/api/tasks/{slug}/runs/", 202, **upload("run.jsonl", junk.encode())
    )
    held = run_settles(participant, held["id"], wait_for)
    assert held["state"] == "held", held
    assert "match no item of the task and look malformed" in held["reason"]
    assert Item.objects.filter(task__slug=slug).count() == items and requests_of(slug) == requested
    listed = organizer.ok("get", f"/api/tasks/{slug}/runs/?state=held", 200)["results"]
    assert [run["id"] for run in listed] == [held["id"]]
    real = participant.ok(
        "post", f"/api/tasks/{slug}/runs/", 202, **upload("nb-dob.tsv", run_text.encode())
    )
    real = run_settles(participant, real["id"], wait_for)
    assert real["state"] in ("queued", "planning", "awaiting_labels", "estimating"), real
    assert real["name"] == "nb-dob" and real["n_predictions"] == 54
    assert used_runs(participant, slug) == 2  # the held run holds its slot until rejected
    total = time.monotonic() - started
    print(f"reference sample built and task opened in {built:.1f} s; all in {total:.1f} s")


def reference_keys(slug: str) -> dict[str, str]:
    return dict(ReferenceItem.objects.filter(task__slug=slug).values_list("item__key", "group"))


def requests_of(slug: str) -> int:
    return VerificationRequest.objects.filter(task__slug=slug).count()


def used_runs(participant: Api, slug: str) -> int:
    return participant.ok("get", f"/api/tasks/{slug}/quota/", 200)["teams"][0]["used_total"]


def test_a_closed_pool_takes_its_pool_after_an_early_run(site, wait_for):
    organizer = person(site, "olivia", creates_tasks=True)
    participant = person(site, "pat")
    participant.ok("post", "/api/teams/", 201, json={"name": "Outsiders"})
    slug = "outside-pool"
    created = organizer.ok(
        "post", "/api/tasks/", 201, json={"slug": slug, "title": "Pool", "kind": "closed_pool"}
    )
    assert created["state"] == "draft" and readiness(organizer, slug)["pool"] is False
    run = (POOL / "run.tsv").read_bytes()
    runs = f"/api/tasks/{slug}/runs/"
    participant.refused("post", runs, 404, "not_found", **upload("early.tsv", run))  # a draft
    # Open without its pool, as a task created before the checklist is (the API refuses it now).
    Task.objects.filter(slug=slug).update(state=Task.State.OPEN)
    error = participant.refused("post", runs, 409, "no_pool", **upload("early.tsv", run))
    assert error["message"] == (
        f"task '{slug}' has no pool yet: its organizers upload it before runs are accepted; "
        "nothing was stored or counted"
    )
    assert not Run.objects.filter(task__slug=slug).exists() and used_runs(participant, slug) == 0
    received = organizer.ok(
        "post",
        f"/api/tasks/{slug}/pool/",
        202,
        **upload("pool.tsv", (POOL / "pool.tsv").read_bytes()),
    )
    pool = upload_loads(organizer, received, wait_for)
    assert (pool["state"], pool["counts"]) == ("loaded", {"items": 200})
    assert readiness(organizer, slug)["pool"] is True
    accepted = participant.ok("post", runs, 202, **upload("logreg-c1.tsv", run))
    accepted = run_settles(participant, accepted["id"], wait_for)
    assert accepted["state"] in ("queued", "planning", "awaiting_labels", "estimating"), accepted
    assert accepted["n_predictions"] == 200
    again = organizer.refused(
        "post", f"/api/tasks/{slug}/pool/", 409, "pool_exists", **upload("pool.tsv", b"i0\n")
    )
    assert again["message"].startswith(f"task '{slug}' already has its pool (200 items)")
