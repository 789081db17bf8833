"""API test fixtures: a fresh throttle cache per test, API clients."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient


@pytest.fixture(autouse=True)
def fresh_throttles():
    """Throttle counters live in the cache: start every test with none."""
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
