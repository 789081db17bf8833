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


@pytest.mark.django_db
def test_a_set_is_one_statement_and_the_table_is_still_culled():
    """A throttle's ``set`` on every API request is one upsert; the table is counted (and culled
    past ``MAX_ENTRIES``) on the first set and every ``COUNT_EVERY`` after."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    cache = CountingDatabaseCache("throttle_cache", {"OPTIONS": {"MAX_ENTRIES": 3}})
    cache.COUNT_EVERY = 4
    with CaptureQueriesContext(connection) as captured:
        for i in range(4):
            cache.set(f"k{i}", [i], timeout=60)
        cache.set("k1", ["again"], timeout=60)
    statements = [
        q["sql"]
        for q in captured.captured_queries
        if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))  # the test's own transaction
    ]
    counts = [i for i, sql in enumerate(statements) if "COUNT(*)" in sql]
    upserts = [i for i, sql in enumerate(statements) if "ON CONFLICT" in sql]
    assert len(counts) == 2 and counts[0] == 0, statements  # before sets 1 and 5
    assert len(upserts) == 5 and upserts[:4] == [1, 2, 3, 4], statements
    # At the second count 4 entries > MAX_ENTRIES 3: a third (Django's default) is culled, the
    # first key, before k1 is written again.
    assert cache.get("k0") is None
    assert cache.get("k1") == ["again"] and cache.get("k3") == [3]
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM throttle_cache")
        assert cursor.fetchone()[0] == 3


@pytest.mark.postgres
@pytest.mark.django_db
def test_the_counters_table_is_unlogged_on_postgres():
    # Every API request writes a counter: without WAL its commit waits for no disk flush.
    from django.conf import settings
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relpersistence FROM pg_class WHERE relname = %s",
            [settings.THROTTLE_CACHE_TABLE],
        )
        assert cursor.fetchone() == ("u",)
