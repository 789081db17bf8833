"""The Redis cache fails soft: with no server, reads miss and writes are dropped, no exception."""

from __future__ import annotations

import logging
import socket

import pytest

from config.cache import ForgivingRedisCache


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
