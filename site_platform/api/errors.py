"""The exception handler of both JSON APIs (``REST_FRAMEWORK["EXCEPTION_HANDLER"]``).

Every error, of the REST API and of the annotation queue's API, has one body::

    {"error": {"code": "...", "message": "...", "problems": [{"line": 7, "message": "..."}],
               "total": 1, "run": null}}

A :class:`~site_platform.errors.ServiceError` brings its code, status, headers, problems and
extra fields; DRF's exceptions (validation, authentication, throttling with ``Retry-After``,
not found, method not allowed, parsing, media types), Django's ``Http404`` and
``PermissionDenied``, and a lost database (503 with ``Retry-After``) become one. Anything else is
a bug: Django's 500.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import InterfaceError, OperationalError
from django.http import Http404
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import set_rollback

from ..errors import DatabaseUnavailable, ServiceError, retry_after

log = logging.getLogger(__name__)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    error = service_error(exc, error_codes=getattr(context.get("view"), "error_codes", {}))
    if error is None:
        return None
    return Response({"error": error.as_dict()}, status=error.http_status, headers=error.headers)


def service_error(exc: Exception, *, error_codes: dict[str, str]) -> ServiceError | None:
    """``exc`` as a :class:`ServiceError`; ``error_codes`` renames DRF's codes (the annotation
    queue's API keeps the names its clients know)."""
    if isinstance(exc, ServiceError):
        return exc
    if isinstance(exc, OperationalError | InterfaceError):
        log.error("database unavailable during an API request: %s", exc)
        return DatabaseUnavailable()
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or None)
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
    if not isinstance(exc, exceptions.APIException):
        return None
    set_rollback()
    headers = {}
    auth_header = getattr(exc, "auth_header", None)  # NotAuthenticated, AuthenticationFailed
    if auth_header:
        headers["WWW-Authenticate"] = auth_header
    wait = getattr(exc, "wait", None)  # Throttled
    if wait:
        headers.update(retry_after(wait))
    if isinstance(exc, exceptions.ValidationError):
        problems = field_problems(exc.detail)
        return ServiceError(
            "invalid request: " + "; ".join(p["message"] for p in problems),
            problems=problems,
            headers=headers,
        )
    code = getattr(exc.detail, "code", None) or exc.default_code
    return ServiceError(
        str(exc.detail),
        code=error_codes.get(code, code),
        http_status=exc.status_code,
        headers=headers,
    )


def field_problems(detail: Any, prefix: str = "") -> list[dict[str, Any]]:
    """Flatten DRF validation details into ``{"line": None, "message": "field: ..."}``."""
    if isinstance(detail, dict):
        return [
            p
            for name, sub in detail.items()
            for p in field_problems(
                sub, f"{prefix}{name}: " if name != "non_field_errors" else prefix
            )
        ]
    if isinstance(detail, list):
        return [p for sub in detail for p in field_problems(sub, prefix)]
    return [{"line": None, "message": f"{prefix}{detail}"}]
