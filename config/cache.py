"""Cache backends: a Redis cache that degrades to misses when Redis is unreachable, and a database
cache whose counters cannot lose increments (the throttle cache without Redis).

The cache holds only what can be recomputed (throttle counters, rendered board bodies); the
database is the source of truth. So a Redis outage must not turn every request into a 500: reads
miss, writes are dropped, and a warning is logged (at most once a minute per process).
"""

from __future__ import annotations

import base64
import logging
import pickle
import time

from django.core.cache.backends.db import DatabaseCache
from django.core.cache.backends.redis import RedisCache
from django.db import connections, router, transaction
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

log = logging.getLogger(__name__)
UNAVAILABLE = (RedisConnectionError, RedisTimeoutError)


class ForgivingRedisCache(RedisCache):
    """:class:`RedisCache` whose operations fail soft when the server cannot be reached."""

    _last_warning = 0.0

    def _unavailable(self, operation: str, exc: Exception, default):
        now = time.monotonic()
        if now - ForgivingRedisCache._last_warning > 60:
            ForgivingRedisCache._last_warning = now
            log.warning("cache unavailable (%s: %s): serving without it", operation, exc)
        return default

    def get(self, key, default=None, version=None):
        try:
            return super().get(key, default, version)
        except UNAVAILABLE as exc:
            return self._unavailable("get", exc, default)

    def get_many(self, keys, version=None):
        try:
            return super().get_many(keys, version)
        except UNAVAILABLE as exc:
            return self._unavailable("get_many", exc, {})

    def set(self, key, value, timeout=None, version=None):
        try:
            return super().set(key, value, timeout, version)
        except UNAVAILABLE as exc:
            return self._unavailable("set", exc, None)

    def add(self, key, value, timeout=None, version=None):
        try:
            return super().add(key, value, timeout, version)
        except UNAVAILABLE as exc:
            return self._unavailable("add", exc, False)

    def set_many(self, data, timeout=None, version=None):
        try:
            return super().set_many(data, timeout, version)
        except UNAVAILABLE as exc:
            return self._unavailable("set_many", exc, list(data))

    def delete(self, key, version=None):
        try:
            return super().delete(key, version)
        except UNAVAILABLE as exc:
            return self._unavailable("delete", exc, False)

    def incr(self, key, delta=1, version=None):
        try:
            return super().incr(key, delta, version)
        except UNAVAILABLE as exc:
            return self._unavailable("incr", exc, delta)

    def touch(self, key, timeout=None, version=None):
        try:
            return super().touch(key, timeout, version)
        except UNAVAILABLE as exc:
            return self._unavailable("touch", exc, False)


class CountingDatabaseCache(DatabaseCache):
    """:class:`DatabaseCache` whose ``incr`` is atomic across processes and keeps the expiry.

    Django's ``incr`` reads, then writes with the default timeout: two processes counting at once
    could both write n+1 (a guess not counted), and a counter's window would shrink to the
    default timeout. Here the read and the write share one transaction that holds the row
    (``SELECT ... FOR UPDATE``) or, on SQLite (transactions begin ``IMMEDIATE``), the database,
    and only the value is rewritten.
    """

    _table: str  # set by DatabaseCache.__init__ (not in its stubs)

    def incr(self, key, delta=1, version=None):
        db = router.db_for_write(self.cache_model_class)
        connection = connections[db]
        table = connection.ops.quote_name(self._table)
        stored_key = self.make_and_validate_key(key, version=version)
        with transaction.atomic(using=db), connection.cursor() as cursor:
            if connection.features.has_select_for_update:
                cursor.execute(
                    f"SELECT cache_key FROM {table} WHERE cache_key = %s FOR UPDATE", [stored_key]
                )
            value = self.get(key, self._missing_key, version=version)
            if value is self._missing_key:
                raise ValueError(f"Key '{key}' not found")
            value += delta
            pickled = base64.b64encode(pickle.dumps(value, self.pickle_protocol)).decode("latin1")
            cursor.execute(
                f"UPDATE {table} SET value = %s WHERE cache_key = %s", [pickled, stored_key]
            )
        return value
