"""The one error type of the services (``site_platform.errors``)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import annotation.services
import leaderboard.services
from leaderboard.services.lifecycle import IllegalTransition
from site_platform.errors import ServiceError, retry_after

# Not a refusal of a request but a bug (or a stale message: ``RunWithdrawn`` among them): a 500,
# never an error body.
BUGS = {IllegalTransition}


def service_exceptions() -> set[type]:
    found = set()
    for package in (leaderboard.services, annotation.services):
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            found |= {
                obj
                for _, obj in inspect.getmembers(module, inspect.isclass)
                if issubclass(obj, Exception) and obj.__module__ == module.__name__
            }
    return found


def test_every_exception_of_the_services_is_a_service_error():
    found = service_exceptions()
    assert len(found) >= 8, found
    assert {cls for cls in found if not issubclass(cls, (ServiceError, *BUGS))} == set()


@pytest.mark.parametrize(("seconds", "header"), [(5, "5"), (2.01, "3"), (0.2, "1")])
def test_retry_after_is_whole_seconds_rounded_up(seconds, header):
    assert retry_after(seconds) == {"Retry-After": header}


def test_a_family_sets_its_status_per_code_and_an_instance_may_override_it():
    class Refused(ServiceError):
        code = "refused"
        http_status = 403
        statuses = {"late": 409}

    assert (Refused("no").code, Refused("no").http_status) == ("refused", 403)
    assert Refused("no", code="late").http_status == 409
    assert Refused("no", code="late", http_status=410).http_status == 410
    assert Refused("no", problems=[{"line": 1, "message": "x"}]).total == 1
