"""Fixtures for the tests of items stored in short transactions (issue 29: a run's ingestion,
and organizers' pool, reference sample and candidates files): a hook before each insert, and a
look at the database from another connection, as another process would see it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection


@pytest.fixture
def before_each_insert(monkeypatch):
    """``before_each_insert(hook)``: ``hook(keys)`` runs before each step of a batch inserts its
    keys (it may raise: the batch is rolled back)."""
    # Imported here: this module is a plugin of tests/conftest.py, loaded before Django is set
    # up when the conftest is loaded early (``-p tests.conftest``, bench/serving_order_study.py).
    from leaderboard.services import items as item_services

    real = item_services._insert

    def install(hook) -> None:
        def insert(task_id, keys, start, payloads):
            hook(keys)
            real(task_id, keys, start, payloads)

        monkeypatch.setattr(item_services, "_insert", insert)

    return install


def seen_from_elsewhere(read: Callable[[], Any]) -> Any:
    """What ``read()`` returns on another connection (a thread's): what is committed."""
    seen: list[Any] = []

    def look() -> None:
        try:
            seen.append(read())
        finally:
            connection.close()

    reader = threading.Thread(target=look)
    reader.start()
    reader.join()
    return seen[0]
