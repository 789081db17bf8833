"""DRF's throttles (same names and scopes), counting in ``CACHES["throttle"]``: Redis or a
database table, shared by every web process, so a limit is one limit however many workers serve.
"""

from __future__ import annotations

from django.core.cache import BaseCache, caches
from rest_framework import throttling

# DRF's throttles keep the cache in a class attribute; here it is a read-only property (never
# assigned), hence the ``override`` ignores below.


class SharedCounts:
    @property
    def cache(self) -> BaseCache:
        # Looked up per use, not at import: tests and settings may swap the cache.
        return caches["throttle"]


class AnonRateThrottle(SharedCounts, throttling.AnonRateThrottle):  # type: ignore[override]
    pass


class UserRateThrottle(SharedCounts, throttling.UserRateThrottle):  # type: ignore[override]
    pass


class ScopedRateThrottle(SharedCounts, throttling.ScopedRateThrottle):  # type: ignore[override]
    pass
