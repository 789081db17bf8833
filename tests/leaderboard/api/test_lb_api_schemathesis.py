"""Schemathesis against the whole OpenAPI schema, in process (WSGI), as an organizer, a
participant and an annotator.

The schema covers the REST API (``/api/``) and the annotation queue's JSON API
(``/annotate/api/``); every role is sent to every operation, so each also meets the other roles'
403s and 404s. Every operation gets ``EXAMPLES`` generated requests (positive and negative data)
with a token (both APIs take token auth); half of them use the real task, run, snapshot, lease
and answer ids so the views get past the 404s. Each response must not be a server error, must
have a status the schema documents, a documented content type and a body that matches the
documented schema. The token-changing operations are left out (they would revoke the token the
test authenticates with); they have their own tests. Everything runs inside the test database's
transaction.

The number of requests sent per role is printed (``pytest -s``): docs/RELIABILITY.md quotes it.
"""

from __future__ import annotations

import re
import uuid

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from rest_framework import throttling
from schemathesis import checks
from schemathesis.generation import GenerationMode

from annotation.services import answer_assignment, claim_assignments, request_verification
from leaderboard.models import Item
from leaderboard.services.tokens import create_token

pytestmark = [pytest.mark.django_db, pytest.mark.slow]
EXAMPLES = 20
SKIPPED = {("POST", "/api/token/"), ("DELETE", "/api/token/"), ("POST", "/api/token/rotate/")}
CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
]
# Operations that must answer 2xx at least once per role (generated requests got past
# validation and permissions, not only 4xx).
MUST_SUCCEED = {
    "org": {
        "GET /api/tasks/",
        "GET /api/tasks/{slug}/",
        "PATCH /api/tasks/{slug}/",
        "GET /api/tasks/{slug}/runs/",
        "GET /api/runs/{run_id}/",
        "GET /api/tasks/{slug}/board/",
        "GET /api/tasks/{slug}/snapshots/",
        "GET /api/tasks/{slug}/spend/",
        "POST /api/tasks/{slug}/hold/",
        "GET /api/me/",
        "POST /annotate/api/assignments/heartbeat",
        "POST /annotate/api/assignments/release",
        "GET /api/tasks/{slug}/files/",
        "GET /api/tasks/{slug}/files/{file_id}/",
        "GET /api/tasks/{slug}/terms/acceptances/",
    },
    "pa": {
        "GET /api/tasks/",
        "GET /api/tasks/{slug}/",
        "GET /api/tasks/{slug}/runs/",
        "GET /api/runs/{run_id}/",
        "GET /api/tasks/{slug}/quota/",
        "GET /api/me/",
        "PATCH /api/runs/{run_id}/",
        "GET /api/tasks/{slug}/terms/",
        "GET /api/tasks/{slug}/files/{file_id}/download/",
    },
    "annotator": {
        "POST /annotate/api/tasks/{slug}/claim",
        "GET /annotate/api/tasks/{slug}/progress",
        "POST /annotate/api/assignments/heartbeat",
        "POST /annotate/api/assignments/release",
        "POST /annotate/api/answers",
        "GET /api/me/",
        "GET /api/tasks/",
    },
}


@pytest.fixture
def wsgi_app():
    """Django's WSGI app, without closing the test's database connection between requests
    (what Django's own test client does)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield get_wsgi_application()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def operations(schema):
    for result in schema.get_all_operations():
        operation = result.ok()
        if (operation.method.upper(), operation.path) not in SKIPPED:
            yield operation


def queue_world(world) -> dict:
    """Pending items on task ``main``, leases of the annotator and one answer it may undo."""
    task, user = world.task, world.users["annotator"]
    start = task.n_items
    items = Item.objects.bulk_create(
        [
            Item(task=task, key=f"queued-{i}", index=start + i, payload={"text": f"item {i}"})
            for i in range(60)
        ]
    )
    task.n_items = start + len(items)
    task.save(update_fields=["n_items"])
    request_verification(task=task, item_ids=[item.pk for item in items])
    leases = [
        lease
        for _ in range(6)
        for lease in claim_assignments(task=task, annotator=user, count=5).assignments
    ]
    answered = uuid.uuid4()
    answer_assignment(annotator=user, token=leases[0].token, client_id=answered, answer="correct")
    return {"tokens": [str(lease.token) for lease in leases[1:]], "client_id": str(answered)}


def with_real_ids(case, real: dict) -> None:
    if case.path_parameters:
        case.path_parameters = {
            name: real.get(name, value) for name, value in case.path_parameters.items()
        }
    if isinstance(case.body, dict) and "slug" in case.body:
        # A task renamed by a generated PATCH would make every later operation on it a 404.
        case.body = {**case.body, "slug": real["slug"]}
    if isinstance(case.body, dict) and real.get("tokens"):
        body = dict(case.body)
        if "token" in body:  # each answer gets a lease of its own, while there are any
            body["token"] = real["tokens"][real["answers"] % len(real["tokens"])]
            real["answers"] += 1
        for name in ("tokens", "holding"):
            if name in body:
                body[name] = real["tokens"][:5]
        case.body = body


def fuzz(operation, headers: dict, real: dict, on_response) -> None:
    """Send ``EXAMPLES`` generated requests (twice as many to the queue's, which need the real
    lease tokens to get past their 404s) (valid and invalid data) and check each response."""
    strategy = operation.as_strategy(
        generation_mode=GenerationMode.POSITIVE
    ) | operation.as_strategy(generation_mode=GenerationMode.NEGATIVE)

    examples = EXAMPLES * 2 if operation.path.startswith("/annotate/api/") else EXAMPLES

    # The plain request first (the real ids, no body or query): MUST_SUCCEED must not hang on
    # whether ``examples`` generated bodies happen to include a valid one. (They did not for
    # PATCH /api/tasks/{slug}/ once an unrelated change moved the derandomized examples.)
    plain = operation.Case(
        path_parameters={
            name: real.get(name, "x") for name in re.findall(r"{(\w+)}", operation.path)
        }
    )

    # Its own count, not the profile's: per operation, enough to reach past validation and
    # permissions beside the plain request (docs/RELIABILITY.md quotes the total), and the
    # profile's count on each of 26 operations x 3 roles would take most of an hour.
    @settings(max_examples=examples, suppress_health_check=list(HealthCheck))
    @example(case=plain, use_real_ids=True)
    @given(case=strategy, use_real_ids=st.booleans())
    def call(case, use_real_ids):
        if use_real_ids:
            with_real_ids(case, real)
        response = case.call(headers=headers)
        case.validate_response(response, checks=CHECKS)
        on_response(response.status_code)

    call()


@pytest.mark.parametrize("role", ["org", "pa", "annotator"])
def test_no_server_errors_and_responses_match_the_schema(
    lb_world, wsgi_app, sent_jobs, role, monkeypatch
):
    # The generated requests (over 1,200 a role, some without the token) would meet the user and
    # anonymous throttles (1200 and 120 a minute) and every later operation would answer 429:
    # the throttles have their own tests (test_lb_api_throttles.py).
    for scope in ("user", "anon"):
        monkeypatch.setitem(throttling.SimpleRateThrottle.THROTTLE_RATES, scope, "100000/minute")
    real = {
        "slug": "main",
        "run_id": lb_world.runs["A"].pk,
        "version": 1,
        "answers": 0,
        "file_id": lb_world.files["f"],
        **queue_world(lb_world),
    }
    key = create_token(user=lb_world.users[role]).key
    headers = {"Authorization": f"Token {key}"}
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", wsgi_app)
    tested, succeeded, statuses, failures = [], set(), [], {}

    for operation in operations(schema):
        label = f"{operation.method.upper()} {operation.path}"

        def seen(status: int, label=label) -> None:
            statuses.append(status)
            if status < 300:
                succeeded.add(label)

        try:
            fuzz(operation, headers, real, seen)
        except (Exception, BaseExceptionGroup) as exc:  # all failures are listed at the end
            failures[label] = exc
        tested.append(label)
    print(
        f"\nschemathesis {role}: {len(statuses)} requests over {len(tested)} operations, "
        f"{sum(s < 300 for s in statuses)} 2xx, {sum(400 <= s < 500 for s in statuses)} 4xx"
    )
    assert not failures, "\n\n".join(f"{label}: {exc}" for label, exc in failures.items())
    assert len(tested) >= 26, tested
    assert sum(path.split(" ")[1].startswith("/annotate/api/") for path in tested) == 6
    assert not MUST_SUCCEED[role] - succeeded, sorted(MUST_SUCCEED[role] - succeeded)
    assert max(statuses) < 500
