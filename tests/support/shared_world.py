"""A test world built once per module and rolled back after it, handed to each test as a copy.

The permission matrices ask hundreds of cells of one world; building it for every cell was half
of their time. ``shared_world(build)`` returns a module-scoped fixture that builds the world
inside a transaction, keeps it open while the module's tests run (each test's own ``db``
transaction becomes a savepoint inside it, rolled back after the test, as always) and rolls it
back at the end. Each test gets a deep copy of the world's Python objects, so a test that changes
an instance in memory does not change the next test's (as ``TestCase.setUpTestData`` does).

Only for worlds used by non-transactional tests: a ``transactional_db`` or ``live_server`` test
would flush the database under the open transaction.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import transaction


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
