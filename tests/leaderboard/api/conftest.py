"""API test fixtures: a fresh cache per test, API clients (the world with every role,
``lb_world``, is in ``tests/leaderboard/conftest.py``)."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient


@pytest.fixture(autouse=True)
def fresh_cache():
    """Rendered boards live in the cache: start every test with none (throttle counters are
    emptied for every test in ``tests/conftest.py``)."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def api():
    """``api(user=None)``: an API client, authenticated as ``user`` if given."""

    def make(user=None) -> APIClient:
        client = APIClient()
        if user is not None:
            client.force_authenticate(user)
        return client

    return make
