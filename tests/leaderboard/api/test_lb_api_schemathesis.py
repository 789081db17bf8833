"""Schemathesis against the OpenAPI schema, in process (WSGI), as an organizer and a participant.

Every operation gets a modest number of generated requests (positive and negative data) with a
token; half of them use the real task, run and snapshot ids so the views get past the 404s. Each
response must not be a server error, must have a status the schema documents, a documented
content type and a body that matches the documented schema. The token-changing operations are
left out (they would revoke the token the test authenticates with); they have their own tests.
Everything runs inside the test database's transaction.
"""

from __future__ import annotations

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token
from schemathesis import checks
from schemathesis.generation import GenerationMode

pytestmark = pytest.mark.django_db
EXAMPLES = 8
SKIPPED = {("POST", "/api/token/"), ("DELETE", "/api/token/"), ("POST", "/api/token/rotate/")}
CHECKS = [checks.not_a_server_error, checks.status_code_conformance,
          checks.content_type_conformance, checks.response_schema_conformance]


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


def fuzz(operation, headers: dict, real: dict, on_success) -> None:
    """Send ``EXAMPLES`` generated requests (valid and invalid data) and check each response."""
    strategy = operation.as_strategy(generation_mode=GenerationMode.POSITIVE) | \
        operation.as_strategy(generation_mode=GenerationMode.NEGATIVE)

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(case=strategy, use_real_ids=st.booleans())
    def call(case, use_real_ids):
        if use_real_ids and case.path_parameters:
            case.path_parameters = {name: real.get(name, value)
                                    for name, value in case.path_parameters.items()}
        response = case.call(headers=headers)
        case.validate_response(response, checks=CHECKS)
        if response.status_code < 300:
            on_success()

    call()


@pytest.mark.parametrize("role", ["org", "pa"])
def test_no_server_errors_and_responses_match_the_schema(lb_world, wsgi_app, sent_jobs, role):
    key = Token.objects.create(user=lb_world.users[role]).key
    headers = {"Authorization": f"Token {key}"}
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", wsgi_app)
    real = {"slug": "main", "run_id": lb_world.runs["A"].pk, "version": 1}
    tested, succeeded = [], set()
    for operation in operations(schema):
        label = f"{operation.method.upper()} {operation.path}"
        fuzz(operation, headers, real, lambda label=label: succeeded.add(label))
        tested.append(label)
    assert len(tested) >= 20, tested
    # The generated requests got past validation and permissions, not only 4xx.
    assert len(succeeded) >= (15 if role == "org" else 10), sorted(set(tested) - succeeded)
