"""DRF's throttles (same names and scopes), counting in ``CACHES["throttle"]``: Redis or a
database table, shared by every web process, so a limit is one limit however many workers serve.
"""

from __future__ import annotations

from django.core.cache import caches
from rest_framework import throttling


class SharedCounts:
    @property
    def cache(self):
        # Looked up per use, not at import: tests and settings may swap the cache.
        return caches["throttle"]


class AnonRateThrottle(SharedCounts, throttling.AnonRateThrottle):
    pass


class UserRateThrottle(SharedCounts, throttling.UserRateThrottle):
    pass


class ScopedRateThrottle(SharedCounts, throttling.ScopedRateThrottle):
    pass
