"""The one exception handler of both APIs (``site_platform.api.errors``): every exception family
becomes one body, with its status, code and headers; the annotation queue's API keeps its own
names for DRF's errors; a lost database is one 503 with ``Retry-After`` on both APIs."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import InterfaceError, OperationalError
from django.http import Http404
from django.urls import resolve
from rest_framework import exceptions
from rest_framework.test import APIClient

from annotation.api import QueueAPIView
from annotation.services import GoldFileError, JudgmentError
from leaderboard.api.views import ApiView
from leaderboard.ingestion import Problem
from leaderboard.services.board import RunDetailsError
from leaderboard.services.runs import SubmissionError
from leaderboard.services.sign_in import SignInRefused
from leaderboard.services.tasks import TaskSettingsError
from leaderboard.services.teams import TeamError
from leaderboard.services.tokens import TokenExists
from site_platform.api.errors import exception_handler
from site_platform.errors import DatabaseUnavailable, ServiceError

BODY_KEYS = {"code", "message", "problems", "total", "run"}


def handled(exc: Exception, view=None):
    return exception_handler(exc, {"view": view if view is not None else ApiView()})


def error_of(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.data
    body = response.data["error"]
    assert set(body) >= BODY_KEYS and body["code"] == code, body
    assert body["message"] and body["total"] >= len(body["problems"])
    return body


# -- service errors: status and code on the class ------------------------------------------------
@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("rejected", 400),
        ("invalid", 400),
        ("missing_file", 400),
        ("not_team_member", 403),
        ("task_closed", 409),
        ("duplicate", 409),
        ("too_large", 413),
        ("over_quota", 429),
        ("throttled", 429),
    ],
)
def test_submission_errors_carry_their_status(code, status):
    exc = SubmissionError("refused", code=code, problems=[Problem(3, "bad score")], total=7)
    body = error_of(handled(exc), status, code)
    assert body == {
        "code": code,
        "message": "refused",
        "problems": [{"line": 3, "message": "bad score"}],
        "total": 7,
        "run": None,
    }


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("invalid", 400),
        ("not_annotator", 403),
        ("not_organizer", 403),
        ("unknown_assignment", 404),
        ("not_found", 404),
        ("task_closed", 409),
        ("client_id_reused", 409),
        ("undo_expired", 409),
        ("not_last_answer", 409),
        ("already_answered", 409),
    ],
)
def test_judgment_errors_carry_their_status(code, status):
    body = error_of(handled(JudgmentError("no", code=code), QueueAPIView()), status, code)
    assert body == {"code": code, "message": "no", "problems": [], "total": 0, "run": None}


@pytest.mark.parametrize("family", [TaskSettingsError, RunDetailsError])
def test_field_errors_are_problems_and_fields(family):
    exc = family("invalid settings", {"title": ["too long"], "link": ["not a URL", "no"]})
    body = error_of(handled(exc), 400, "invalid")
    assert body["problems"] == [
        {"line": None, "message": "title: too long"},
        {"line": None, "message": "link: not a URL no"},
    ]
    assert body["total"] == 2 and body["fields"] == exc.field_errors


@pytest.mark.parametrize(
    ("exc", "status", "code"),
    [
        (TokenExists(), 409, "token_exists"),
        (TeamError("a team needs a name"), 400, "invalid"),
        (GoldFileError(["line 2: unknown key 'x'"]), 400, "rejected"),
    ],
)
def test_other_service_errors(exc, status, code):
    body = error_of(handled(exc), status, code)
    assert body["message"] == exc.message


def test_a_refused_sign_in_is_429_with_retry_after_the_window(settings):
    settings.LOGIN_FAILURE_WINDOW = 120
    response = handled(SignInRefused())
    error_of(response, 429, "throttled")
    assert response["Retry-After"] == "120"


def test_a_service_error_may_bring_headers_and_extra_fields():
    exc = ServiceError(
        "busy", code="busy", http_status=503, headers={"Retry-After": "9"}, where="queue"
    )
    response = handled(exc)
    assert error_of(response, 503, "busy")["where"] == "queue"
    assert response["Retry-After"] == "9"


def test_a_rejected_runs_id_is_in_the_body():
    class Saved:
        pk = 42

    assert (
        handled(SubmissionError("again", code="duplicate", run=Saved())).data["error"]["run"] == 42
    )


# -- DRF's and Django's exceptions ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("exc", "status", "rest", "queue"),
    [
        (exceptions.NotAuthenticated(), 401, "not_authenticated", "not_authenticated"),
        (
            exceptions.AuthenticationFailed("bad token"),
            401,
            "authentication_failed",
            "not_authenticated",
        ),
        (exceptions.PermissionDenied("no"), 403, "permission_denied", "forbidden"),
        (DjangoPermissionDenied("no"), 403, "permission_denied", "forbidden"),
        (exceptions.NotFound("no such run"), 404, "not_found", "not_found"),
        (Http404("no such task"), 404, "not_found", "not_found"),
        (exceptions.MethodNotAllowed("PUT"), 405, "method_not_allowed", "method_not_allowed"),
        (exceptions.NotAcceptable(), 406, "not_acceptable", "error"),
        (exceptions.ParseError("bad JSON"), 400, "parse_error", "invalid"),
        (exceptions.UnsupportedMediaType("text/plain"), 415, "unsupported_media_type", "invalid"),
        (exceptions.Throttled(), 429, "throttled", "throttled"),
    ],
)
def test_drf_and_django_exceptions_in_both_apis(exc, status, rest, queue):
    """The same exception has the same status and body in both APIs; only the names of DRF's
    codes differ, as each API has always named them."""
    rest_body = error_of(handled(exc), status, rest)
    queue_body = error_of(handled(exc, QueueAPIView()), status, queue)
    assert rest_body == {**queue_body, "code": rest}


def test_validation_errors_list_their_fields_as_problems():
    exc = exceptions.ValidationError({"count": ["too big"], "non_field_errors": ["no JSON"]})
    for view in (ApiView(), QueueAPIView()):
        body = error_of(handled(exc, view), 400, "invalid")
        assert body["problems"] == [
            {"line": None, "message": "count: too big"},
            {"line": None, "message": "no JSON"},
        ]
        assert body["message"] == "invalid request: count: too big; no JSON"


def test_throttled_requests_get_retry_after_rounded_up():
    response = handled(exceptions.Throttled(wait=2.2))
    error_of(response, 429, "throttled")
    assert response["Retry-After"] == "3"


def test_the_authentication_challenge_is_kept():
    exc = exceptions.NotAuthenticated()
    exc.auth_header = "Token"  # set by DRF's APIView when the view has an authenticator
    assert handled(exc)["WWW-Authenticate"] == "Token"


@pytest.mark.parametrize("lost", [OperationalError, InterfaceError])
def test_a_lost_database_is_a_503_with_retry_after(lost, caplog):
    response = handled(lost("server closed the connection: secret-host"))
    body = error_of(response, 503, "unavailable")
    assert response["Retry-After"] == "5" and "secret-host" not in str(body)
    assert body == DatabaseUnavailable().as_dict()
    assert "secret-host" in caplog.text  # logged for the operators, not told to the client


def test_any_other_exception_is_left_to_django_as_a_bug():
    assert handled(ValueError("a bug")) is None
    assert handled(RuntimeError("a bug"), QueueAPIView()) is None


# -- through both URL confs ----------------------------------------------------------------------
def test_both_apis_share_one_unknown_endpoint_view():
    assert (
        resolve("/api/no/such/").func.view_class is resolve("/annotate/api/no/such").func.view_class
    )


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/no/such/", "/annotate/api/no/such"])
def test_unknown_endpoints_of_both_apis_have_the_one_body(path):
    response = APIClient().get(path)
    assert response.status_code == 404
    body = response.json()["error"]
    assert body == {
        "code": "not_found",
        "message": f"there is no API endpoint {path!r}",
        "problems": [],
        "total": 0,
        "run": None,
    }


@pytest.mark.django_db
def test_a_lost_database_is_the_same_503_on_both_apis(monkeypatch):
    from leaderboard.api.authentication import HashedTokenAuthentication

    def lost(self, key):
        raise OperationalError("could not connect to server: secret-host")

    monkeypatch.setattr(HashedTokenAuthentication, "authenticate_credentials", lost)
    client = APIClient(HTTP_AUTHORIZATION="Token some-key")
    responses = [
        client.get("/api/tasks/"),
        client.get("/annotate/api/tasks/main/progress"),
        client.post("/annotate/api/answers", {}, format="json"),
    ]
    for response in responses:
        assert response.status_code == 503 and response["Retry-After"] == "5"
        assert "secret-host" not in response.content.decode()
    assert len({response.content for response in responses}) == 1
    assert responses[0].json() == {
        "error": {
            "code": "unavailable",
            "message": "the database is unavailable; retry shortly",
            "problems": [],
            "total": 0,
            "run": None,
        }
    }
