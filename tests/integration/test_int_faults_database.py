"""Faults: the web process's database connection dies while an answer is being stored, and an
answer's response is lost; the client's retry with the same client id stores it exactly once.

Real HTTP against pytest-django's ``live_server`` (its own threads and database connections), with
``requests`` as the annotator's page would send them. To stop the answer request at a known point,
another connection holds a lock the request needs:

- PostgreSQL: the lease's row, ``FOR NO KEY UPDATE``. The answer takes its place in the task's
  judgment set and inserts its judgment (which only references the lease), then waits to close
  the lease; the test finds that backend in ``pg_stat_activity`` and ends it with
  ``pg_terminate_backend`` (the connection drops between the insert and the commit).
- SQLite: the database write lock (``BEGIN IMMEDIATE``); the request waits to start its
  transaction. (No variant drops the connection on SQLite: there is no server connection to drop.)

What the product does: the request's transaction dies with its connection, so nothing of it is
stored and the client gets a JSON 503 with ``Retry-After``; answers are idempotent by
``client_id`` (a unique column), so the retry stores the answer once, and a replay of a stored
answer returns it (200) unchanged.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import uuid

import pytest
import requests
from django.contrib.auth import get_user_model
from django.db import connection

from annotation.models import Assignment, Judgment, VerificationRequest
from annotation.services.judgments import number_judgments
from evaluation.services import plan_run
from leaderboard.models import Task
from leaderboard.services.tokens import create_token

from pipeline_support import add_items, add_run, annotator, make_task, make_team

pytestmark = [
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(60),
]


@pytest.fixture
def queue(live_server, sent_messages):
    """A task with pending verification requests, an annotator's HTTP session and its leases."""
    task = make_task(slug="db-faults", target_half_width=0.1)
    add_items(task, 200)
    team = make_team("A", get_user_model().objects.create_user("alice"))
    run = add_run(task, team, range(0, 200, 2), name="r")
    assert plan_run(run.pk) == "sample"
    session = _Client(create_token(user=annotator(task)).key)
    claim = session.post(
        f"{live_server.url}/annotate/api/tasks/{task.slug}/claim", json={"count": 3}, timeout=30
    )
    assert claim.status_code == 200, claim.text
    tokens = [lease["token"] for lease in claim.json()["assignments"]]
    assert len(tokens) == 3
    return {
        "task": task,
        "session": session,
        "tokens": tokens,
        "url": f"{live_server.url}/annotate/api/answers",
        "sent": sent_messages,
    }


class _Client:
    """The annotator's page: token-authenticated JSON posts, one HTTP connection each (so each
    server thread, and its database connection, ends with its request; a kept-alive one would
    outlive the test database)."""

    def __init__(self, token: str) -> None:
        self.headers = {"Authorization": f"Token {token}"}

    def post(self, url: str, *, json: dict, timeout: float) -> requests.Response:
        return requests.post(url, json=json, timeout=timeout, headers=self.headers)


def _body(token: str, client_id: str) -> dict:
    return {"client_id": client_id, "token": token, "answer": "correct", "seconds_spent": 2.5}


@contextlib.contextmanager
def _hold_answer_lock(token: str):
    """Hold, from another connection, a lock the answer on lease ``token`` needs after it has
    stored its judgment."""
    if connection.vendor == "postgresql":
        blocker = _pg_connect()
        blocker.execute(
            f"SELECT 1 FROM {Assignment._meta.db_table} WHERE token = %s FOR NO KEY UPDATE",
            [token],
        )
    else:
        blocker = sqlite3.connect(
            connection.settings_dict["NAME"], isolation_level=None, timeout=20
        )
        blocker.execute("BEGIN IMMEDIATE")
    try:
        yield blocker
    finally:
        blocker.rollback()
        blocker.close()


def _pg_connect(autocommit: bool = False):
    import psycopg

    conf = connection.settings_dict
    return psycopg.connect(
        host=conf["HOST"] or "127.0.0.1",
        port=conf["PORT"] or 5432,
        user=conf["USER"],
        password=conf["PASSWORD"],
        dbname=conf["NAME"],
        autocommit=autocommit,
    )


def _waiting_answer_backend(monitor) -> int | None:
    """The PostgreSQL backend stuck on the lease's row lock while closing the lease, its judgment
    inserted (read in autocommit: within a transaction, ``pg_stat_activity`` would not change)."""
    row = monitor.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
        "AND wait_event_type = 'Lock' AND query ILIKE %s",
        [f'%UPDATE "{Assignment._meta.db_table}" SET "state"%'],
    ).fetchone()
    return row[0] if row else None


class _InFlight(threading.Thread):
    """One HTTP request in a thread: ``.response`` or ``.error`` once it is done."""

    def __init__(self, session, url: str, body: dict, timeout: float = 30) -> None:
        super().__init__(daemon=True)
        self.args_ = (session, url, body, timeout)
        self.response = self.error = None
        self.start()

    def run(self) -> None:
        session, url, body, timeout = self.args_
        try:
            self.response = session.post(url, json=body, timeout=timeout)
        except requests.RequestException as exc:
            self.error = exc


def _stored(client_id: str) -> int:
    return Judgment.objects.filter(client_id=client_id).count()


@pytest.mark.postgres
def test_connection_dropped_mid_answer_then_retry_stores_it_once(queue, wait_for):
    task, session, url = queue["task"], queue["session"], queue["url"]
    client_id, token = str(uuid.uuid4()), queue["tokens"][0]
    labels_before = Task.objects.get(pk=task.pk).labels_version

    with _pg_connect(autocommit=True) as monitor, _hold_answer_lock(token):
        request = _InFlight(session, url, _body(token, client_id))
        pid = wait_for(
            lambda: _waiting_answer_backend(monitor),
            timeout=20,
            message="the answer to wait on its lease's row, after its insert",
        )
        assert monitor.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone()[0]
        request.join(20)
    assert not request.is_alive()
    # The client is told it failed (the connection died mid-transaction: a server error) ...
    assert request.error is None and request.response.status_code == 503, request.response.text
    assert request.response.json()["error"]["code"] == "unavailable"
    assert request.response.headers["Retry-After"] == "5"
    # ... and nothing of the attempt is stored: no judgment, no place in the judgment set.
    assert _stored(client_id) == 0
    assert Task.objects.get(pk=task.pk).labels_version == labels_before
    lease_request = VerificationRequest.objects.get(assignments__token=token)
    assert lease_request.judgments_counted == 0 and lease_request.state == "pending"

    retry = session.post(url, json=_body(token, client_id), timeout=30)
    assert retry.status_code == 201, retry.text  # stored now, for the first time
    again = session.post(url, json=_body(token, client_id), timeout=30)
    assert again.status_code == 200 and again.json()["answer"] == retry.json()["answer"]
    assert _stored(client_id) == 1
    lease_request.refresh_from_db()
    assert lease_request.state == "resolved" and lease_request.judgments_counted == 1
    judgment = Judgment.objects.get(client_id=client_id)
    assert (judgment.answer, judgment.counted, judgment.seq) == ("correct", True, None)
    # The engine's next read numbers it, once: it enters the judgment set as the next version.
    assert number_judgments(task.pk) == labels_before + 1
    judgment.refresh_from_db()
    assert judgment.seq == labels_before + 1


def test_answer_whose_response_was_lost_is_stored_once_on_retry(queue, wait_for):
    """The server is slow (it waits on a lock), the client gives up after 1 s: it does not know
    whether its answer was stored. The server does store it; the retry gets it back (200)."""
    task, session, url = queue["task"], queue["session"], queue["url"]
    client_id, token = str(uuid.uuid4()), queue["tokens"][1]
    labels_before = Task.objects.get(pk=task.pk).labels_version

    with _hold_answer_lock(token):
        request = _InFlight(session, url, _body(token, client_id), timeout=1.0)
        request.join(20)
        assert isinstance(request.error, requests.Timeout), (request.error, request.response)
    # The lock is gone: the server finishes the request nobody is waiting for any more.
    wait_for(lambda: _stored(client_id) == 1, timeout=30, message="the lost answer to commit")

    retry = session.post(url, json=_body(token, client_id), timeout=30)
    assert retry.status_code == 200, retry.text  # a replay: the answer was already stored
    assert retry.json()["answer"]["client_id"] == client_id
    assert _stored(client_id) == 1
    assert Judgment.objects.get(client_id=client_id).counted
    assert number_judgments(task.pk) == labels_before + 1  # in the judgment set once
    # A retry with the same id but another answer is refused, not stored as a second answer.
    other = session.post(url, json={**_body(token, client_id), "answer": "incorrect"}, timeout=30)
    assert other.status_code == 409 and other.json()["error"]["code"] == "client_id_reused"
    assert _stored(client_id) == 1
    # One estimation was asked for (after commit), not one per attempt.
    assert [name for name, _ in queue["sent"]].count("evaluation.estimate_task") == 1
