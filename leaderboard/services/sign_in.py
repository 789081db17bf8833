"""The brake on password guessing, for every place that checks a password: the site's and the
admin's sign-in forms and the API's token endpoints (``POST /api/token/`` and ``/rotate/`` with a
username and password).

Failed attempts are counted per client address (as the API throttles see it, ``API_NUM_PROXIES``)
and per user name; past ``LOGIN_FAILURE_LIMIT`` within ``LOGIN_FAILURE_WINDOW`` seconds, a
password is not even checked until the window ends. The counters live in ``CACHES["throttle"]``
(Redis, or a database table), shared by every web process. A successful sign-in does not reset
them: guessing one account from many addresses still hits the per-name limit.
"""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.core.cache import caches
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from ..errors import ServiceError, retry_after

REFUSED = "Too many failed sign-ins. Wait a few minutes and try again."


class SignInRefused(ServiceError):
    """Past the limit of failed sign-ins: no password is checked until the window ends."""

    code = "throttled"
    http_status = 429

    def __init__(self) -> None:
        super().__init__(REFUSED, headers=retry_after(settings.LOGIN_FAILURE_WINDOW))


def failure_keys(request: Request, username: str) -> list[str]:
    """The counters one attempt for ``username`` from ``request``'s client belongs to."""
    address = BaseThrottle().get_ident(request)  # the API throttles' notion (NUM_PROXIES)
    name = (username or "").strip().lower()
    digest = hashlib.sha256(name.encode()).hexdigest()[:32]
    return [f"login-failures:addr:{address}", f"login-failures:name:{digest}"]


def check_sign_in_allowed(keys: list[str]) -> None:
    """Raise :class:`SignInRefused` if any of the counters has reached the limit."""
    counts = caches["throttle"].get_many(keys)
    if any(count >= settings.LOGIN_FAILURE_LIMIT for count in counts.values()):
        raise SignInRefused()


def count_failed_sign_in(keys: list[str]) -> None:
    cache = caches["throttle"]
    window = settings.LOGIN_FAILURE_WINDOW
    for key in keys:
        cache.add(key, 0, timeout=window)
        try:
            cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.set(key, 1, timeout=window)
