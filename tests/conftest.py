"""Shared fixtures for the whole test tree (which mirrors the source tree).

``sent_messages`` (the pipeline's messages recorded, none sent); ``wait_for``
(``wait_for(predicate, timeout=..., interval=..., message=...)``: poll until truthy); the
markers. Three plugins in ``tests/support/``: ``live_services`` (``repo_root``, and the real
services of the integration tests: ``redis_server``, ``celery_worker``, ``celery_worker_factory``;
see README, "Running the tests"), ``object_store`` (``s3_server``, ``s3_bucket``: a real
S3-compatible server) and ``hypothesis_profiles`` (``dev`` and ``ci``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

pytest_plugins = ["live_services", "object_store", "hypothesis_profiles", "item_batches"]

T = TypeVar("T")


@pytest.fixture
def sent_messages(monkeypatch) -> list:
    """Record the pipeline messages ``leaderboard.jobs`` would send; nothing reaches a broker."""
    from pipeline_support import PipelineDriver

    return PipelineDriver(monkeypatch).sent


@pytest.fixture(autouse=True)
def fresh_throttle_counts(request: pytest.FixtureRequest) -> None:
    """Every test that uses the database starts with no throttle or failed sign-in counts.

    They live in ``CACHES["throttle"]``, a database table: rolled back after most tests, but not
    emptied by pytest-django's flush after a transactional one.
    """
    uses_db = request.node.get_closest_marker("django_db") is not None or any(
        name in request.fixturenames for name in ("db", "transactional_db", "live_server")
    )
    if not uses_db:
        return
    request.getfixturevalue("django_db_setup")
    from django.core.cache import caches

    with request.getfixturevalue("django_db_blocker").unblock():
        caches["throttle"].clear()


def _sqlite_without_fsync(sender: Any, connection: Any, **kwargs: Any) -> None:
    # The SQLite test database is a file (so that workers can open it): skip fsync, as an
    # in-memory database would. Only durability across an OS crash is lost, not consistency.
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA synchronous = OFF")


def pytest_configure(config: pytest.Config) -> None:
    from django.db.backends.signals import connection_created

    connection_created.connect(_sqlite_without_fsync, dispatch_uid="tests-sqlite-without-fsync")


# --- Markers ------------------------------------------------------------------------------------

# Fixtures that need real services: tests using them are `integration` tests.
_INTEGRATION_FIXTURES = {
    "redis_server",
    "celery_worker",
    "celery_worker_factory",
    "s3_server",
    "s3_bucket",
}


def _database_engine() -> str:
    from django.conf import settings

    return settings.DATABASES["default"]["ENGINE"]


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    on_postgres = "postgresql" in _database_engine()
    skip_postgres = pytest.mark.skip(
        reason="needs PostgreSQL: runs in make test's second pass "
        "(DATABASE_URL=$TEST_POSTGRES_URL pytest -m 'integration or postgres')"
    )
    for item in items:
        if _INTEGRATION_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.integration)
        if not on_postgres and item.get_closest_marker("postgres"):
            item.add_marker(skip_postgres)


@pytest.fixture(scope="session", autouse=True)
def received_files_dir(tmp_path_factory) -> Iterator[Path]:
    """Received run files (MEDIA_ROOT) go to a temporary directory, shared with test workers."""
    from django.test import override_settings

    root = tmp_path_factory.mktemp("media")
    previous = os.environ.get("MEDIA_ROOT")
    os.environ["MEDIA_ROOT"] = str(root)  # inherited by worker processes
    with override_settings(MEDIA_ROOT=root):
        yield root
    if previous is None:
        os.environ.pop("MEDIA_ROOT", None)
    else:
        os.environ["MEDIA_ROOT"] = previous


# --- Polling ------------------------------------------------------------------------------------


def wait_for(
    predicate: Callable[[], T],
    timeout: float = 30.0,
    interval: float = 0.05,
    message: str | None = None,
) -> T:
    """Call ``predicate`` until it returns something truthy, and return that; fail after
    ``timeout`` seconds. For polling state that another process changes (no fixed sleeps).

    Each call of a predicate that queries the database sees the latest committed data (tests with
    a worker run in autocommit: ``django_db(transaction=True)``).
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            what = message or getattr(predicate, "__name__", repr(predicate))
            raise AssertionError(
                f"timed out after {timeout:g}s waiting for {what} (last: {value!r})"
            )
        time.sleep(interval)


@pytest.fixture(name="wait_for")
def wait_for_fixture() -> Callable[..., Any]:
    """The :func:`wait_for` helper, as a fixture (test modules cannot import conftest)."""
    return wait_for
