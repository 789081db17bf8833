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
from contextlib import nullcontext
from datetime import UTC, datetime

from django.conf import settings
from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.db import DatabaseCache
from django.core.cache.backends.redis import RedisCache
from django.db import DatabaseError, connections, router, transaction
from django.utils import timezone
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
    """:class:`DatabaseCache` whose ``incr`` is atomic across processes and keeps the expiry,
    and whose ``set`` is one statement.

    Django's ``incr`` reads, then writes with the default timeout: two processes counting at once
    could both write n+1 (a guess not counted), and a counter's window would shrink to the
    default timeout. Here the read and the write share one transaction that holds the row
    (``SELECT ... FOR UPDATE``) or, on SQLite (transactions begin ``IMMEDIATE``), the database,
    and only the value is rewritten.

    Django's ``set`` counts the table (to cull it past ``MAX_ENTRIES``), looks the key up, then
    updates or inserts: three statements on every API request (DRF's throttles read the history
    and set it back). Here it is one upsert (``INSERT ... ON CONFLICT``, PostgreSQL and SQLite),
    and the table is counted on a process's first set and every :attr:`COUNT_EVERY` sets after,
    so it may outgrow ``MAX_ENTRIES`` by that many entries per process before it is culled.
    """

    _table: str  # set by DatabaseCache.__init__ (not in its stubs)
    _max_entries: int
    COUNT_EVERY = 100
    _sets = 0

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        db = router.db_for_write(self.cache_model_class)
        connection = connections[db]
        if connection.vendor not in ("postgresql", "sqlite"):
            return super().set(key, value, timeout, version)
        stored_key = self.make_and_validate_key(key, version=version)
        seconds = self.get_backend_timeout(timeout)
        expires = (
            datetime.max
            if seconds is None
            else datetime.fromtimestamp(seconds, tz=UTC if settings.USE_TZ else None)
        ).replace(microsecond=0)
        pickled = base64.b64encode(pickle.dumps(value, self.pickle_protocol)).decode("latin1")
        table = connection.ops.quote_name(self._table)
        with connection.cursor() as cursor:
            if self._sets % self.COUNT_EVERY == 0:
                cursor.execute(f"SELECT COUNT(*) FROM {table}")
                entries = cursor.fetchone()[0]
                if entries > self._max_entries:
                    now = timezone.now().replace(microsecond=0)
                    self._cull(db, cursor, now, entries)  # type: ignore[attr-defined]
            self._sets += 1
            try:
                # Inside a transaction, a savepoint keeps a failed write from spoiling it.
                with transaction.atomic(using=db) if connection.in_atomic_block else nullcontext():
                    cursor.execute(
                        f"INSERT INTO {table} (cache_key, value, expires) VALUES (%s, %s, %s) "
                        "ON CONFLICT (cache_key) DO UPDATE "
                        "SET value = excluded.value, expires = excluded.expires",
                        [stored_key, pickled, connection.ops.adapt_datetimefield_value(expires)],
                    )
            except DatabaseError:
                return False  # as Django's: a counter write that fails is not an error
        return True

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
