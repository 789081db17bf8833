"""A test world built once per module and rolled back after it, handed to each test as a copy.

The permission matrices ask hundreds of cells of one world; building it for every cell was half
of their time. ``shared_world(build)`` returns a module-scoped fixture that builds the world
inside a transaction, keeps it open while the module's tests run (each test's own ``db``
transaction becomes a savepoint inside it, rolled back after the test, as always) and rolls it
back at the end. Each test gets a deep copy of the world's Python objects, so a test that changes
an instance in memory does not change the next test's (as ``TestCase.setUpTestData`` does).

Only for worlds used by non-transactional tests: a ``transactional_db`` or ``live_server`` test
would flush the database under the open transaction.

``signed_in(users)`` signs each user in once, while the world is built, and ``session_client(key)``
hands a cell a client carrying that session: signing in for every cell (a session written, its
key cycled, ``last_login`` saved) was a third of a page cell's time. A cell that signs out or
changes a password changes the session inside its own transaction, rolled back after it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest
from django.conf import settings
from django.db import transaction
from django.test import Client


def shared_world(build: Callable[[], Any]) -> Any:
    """A module-scoped fixture holding ``build()``'s world; use it through ``copied_world``."""

    @pytest.fixture(scope="module")
    def built_world(django_db_setup: None, django_db_blocker: Any) -> Iterator[Any]:
        with django_db_blocker.unblock(), transaction.atomic():
            yield build()
            transaction.set_rollback(True)

    return built_world


def copied_world(world: Any) -> Any:
    """A copy of a shared world for one test (its model instances included)."""
    return copy.deepcopy(world)


def signed_in(users: Mapping[str, Any]) -> dict[str, str]:
    """A session key for each of ``users`` (by name), signed in as ``Client.force_login`` does."""
    keys = {}
    for name, user in users.items():
        client = Client()
        client.force_login(user)
        keys[name] = client.cookies[settings.SESSION_COOKIE_NAME].value
    return keys


def session_client(session_key: str | None) -> Client:
    """A test client in the session ``session_key`` (from :func:`signed_in`); signed out if None."""
    client = Client()
    if session_key is not None:
        client.cookies[settings.SESSION_COOKIE_NAME] = session_key
    return client
