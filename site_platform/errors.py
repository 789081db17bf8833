"""The one error type of the services (both apps), in the style of Zulip's ``JsonableError``.

A service refuses a request by raising a :class:`ServiceError`: ``code`` (for programs),
``message`` (for people), the HTTP status it means and any headers (``Retry-After``), the
problems found (``{"line", "message"}``, the first ones; ``total`` counts them all) and extra
fields of the error body. A family sets its code and status as class attributes, or a status for
each of its codes in ``statuses``. The APIs turn every error into one body
(``site_platform.api.errors``); the pages render the message with the same status and headers
(:func:`with_headers`).

No DRF here: the services of every app import it (annotation sits above leaderboard).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, TypeVar

from django.http import HttpResponseBase

ResponseT = TypeVar("ResponseT", bound=HttpResponseBase)


class ServiceError(Exception):
    """A request a service refuses; see the module's docstring."""

    code: str = "invalid"
    http_status: int = 400
    # For a family whose codes differ in status: the status of each code (else ``http_status``).
    statuses: ClassVar[Mapping[str, int]] = {}

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        http_status: int | None = None,
        problems: Iterable[Any] = (),
        total: int = 0,
        headers: Mapping[str, str] | None = None,
        **extra: Any,
    ):
        super().__init__(message)
        self.message = message
        self.code = code or type(self).code
        self.http_status = http_status or self.statuses.get(self.code, type(self).http_status)
        self.problems = list(problems)
        self.total = total or len(self.problems)
        self.headers = dict(headers or {})
        self.extra = extra

    def as_dict(self) -> dict[str, Any]:
        """The error's fields in the API's body: ``run`` is the run it concerns, if any."""
        return {
            "code": self.code,
            "message": self.message,
            "problems": [_problem(p) for p in self.problems],
            "total": self.total,
            "run": None,
            **self.extra,
        }


def _problem(problem: Any) -> dict[str, Any]:
    return problem.as_dict() if hasattr(problem, "as_dict") else dict(problem)


class InvalidFields(ServiceError):
    """Fields refused one by one; ``field_errors`` maps a field to its messages (a form shows
    them by its fields, the API as problems and as ``fields``)."""

    def __init__(self, message: str, field_errors: Mapping[str, list[str]] | None = None):
        field_errors = dict(field_errors or {})
        super().__init__(
            message,
            problems=[
                {"line": None, "message": f"{name}: {' '.join(messages)}"}
                for name, messages in field_errors.items()
            ],
            fields=field_errors,
        )
        self.field_errors = field_errors


# How long a client should wait before retrying after the database was unreachable.
RETRY_AFTER_SECONDS = 5


class DatabaseUnavailable(ServiceError):
    """The database was lost or unreachable: a retry may well succeed, and every write is
    idempotent or refused as a duplicate, so retrying is safe."""

    code = "unavailable"
    http_status = 503

    def __init__(self) -> None:
        super().__init__(
            "the database is unavailable; retry shortly", headers=retry_after(RETRY_AFTER_SECONDS)
        )


class StorageUnavailable(ServiceError):
    """The file storage (the disk, or the object store of ``S3_BUCKET``) failed while an upload
    was stored (nothing was kept or counted) or a file read: a retry may well succeed."""

    code = "unavailable"
    http_status = 503

    def __init__(
        self,
        message: str = (
            "the file storage is unavailable, so nothing was stored or counted; retry shortly"
        ),
    ) -> None:
        super().__init__(message, headers=retry_after(RETRY_AFTER_SECONDS))


def retry_after(seconds: float) -> dict[str, str]:
    """The ``Retry-After`` header for a wait of ``seconds`` (whole seconds, rounded up)."""
    return {"Retry-After": str(math.ceil(seconds))}


def with_headers(response: ResponseT, error: ServiceError) -> ResponseT:
    """``response`` (a page showing ``error``) with the error's headers."""
    for name, value in error.headers.items():
        response[name] = value
    return response
