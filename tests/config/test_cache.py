"""The Redis cache fails soft: with no server, reads miss and writes are dropped, no exception.
The database cache of the throttle counters counts exactly and keeps each counter's window."""

from __future__ import annotations

import logging
import socket
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest

from config.cache import CountingDatabaseCache, ForgivingRedisCache


@pytest.fixture
def dead_redis_url():
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"redis://127.0.0.1:{port}/0"


def test_an_unreachable_server_is_a_miss_not_an_error(dead_redis_url, caplog):
    ForgivingRedisCache._last_warning = 0.0
    cache = ForgivingRedisCache(dead_redis_url, {"OPTIONS": {"socket_connect_timeout": 0.2}})
    with caplog.at_level(logging.WARNING, logger="config.cache"):
        assert cache.get("k") is None
        assert cache.get("k", "fallback") == "fallback"
        assert cache.get_many(["a", "b"]) == {}
        assert cache.set("k", 1) is None
        assert cache.add("k", 1) is False
        assert cache.delete("k") is False
    assert "cache unavailable" in caplog.text
    assert caplog.text.count("cache unavailable") == 1  # one warning a minute, not per call


def test_a_live_server_works_as_usual(redis_server):
    cache = ForgivingRedisCache(redis_server.url, {})
    cache.set("key", {"v": 1}, 30)
    assert cache.get("key") == {"v": 1}
    assert cache.add("key", 2) is False
    assert cache.delete("key") is True


# -- the database cache of the throttle counters ---------------------------------------------------
@pytest.mark.django_db
def test_incr_keeps_the_counters_window():
    """Django's ``incr`` rewrites the value with the default timeout (300 s), which would cut a
    15-minute sign-in window to 5; the counting cache keeps the expiry."""
    from django.core.cache import caches
    from django.db import connection

    cache = caches["throttle"]
    assert isinstance(cache, CountingDatabaseCache)
    cache.add("count", 0, timeout=3600)
    assert cache.incr("count") == 1 and cache.incr("count", 2) == 3
    assert cache.get("count") == 3
    with connection.cursor() as cursor:
        cursor.execute("SELECT expires FROM throttle_cache WHERE cache_key LIKE %s", ["%count"])
        (expires,) = cursor.fetchone()
    expires = expires if isinstance(expires, datetime) else datetime.fromisoformat(expires)
    expires = expires.replace(tzinfo=expires.tzinfo or UTC)
    assert expires - datetime.now(UTC) > timedelta(minutes=55)
    with pytest.raises(ValueError):
        cache.incr("missing")


@pytest.mark.django_db(transaction=True)
def test_incr_loses_no_count_when_processes_count_at_once():
    from django.core.cache import caches
    from django.db import connection

    caches["throttle"].add("shared", 0, timeout=600)

    def count(_):
        try:
            for _ in range(15):
                caches["throttle"].incr("shared")
        finally:
            connection.close()

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(count, range(4)))
    assert caches["throttle"].get("shared") == 60
