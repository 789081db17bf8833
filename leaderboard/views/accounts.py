"""Sign-in with a brake on password guessing: failed attempts are counted per client address (as
the API throttles see it, ``API_NUM_PROXIES``) and per user name; past ``LOGIN_FAILURE_LIMIT``
within ``LOGIN_FAILURE_WINDOW`` seconds, sign-in is refused with 429 (and ``Retry-After``) until
the window ends, even with the right password.

Both sign-in forms are covered: the site's (``/accounts/login/``) and the admin's
(``/admin/login/``). The counters live in the Django cache (shared by every web process when
``REDIS_URL`` is set; per process otherwise). A successful sign-in does not reset them: guessing
one account from many addresses still hits the per-name limit.
"""

from __future__ import annotations

import functools
import hashlib

from django.conf import settings
from django.contrib.auth.views import LoginView
from django.core.cache import cache
from django.http import HttpResponse
from rest_framework.throttling import BaseThrottle

REFUSED = "Too many failed sign-ins. Wait a few minutes and try again."


def _keys(request) -> list[str]:
    address = BaseThrottle().get_ident(request)  # the API throttles' notion (NUM_PROXIES)
    name = request.POST.get("username", "").strip().lower()
    digest = hashlib.sha256(name.encode()).hexdigest()[:32]
    return [f"login-failures:addr:{address}", f"login-failures:name:{digest}"]


def _over_limit(keys: list[str]) -> bool:
    return any((cache.get(key) or 0) >= settings.LOGIN_FAILURE_LIMIT for key in keys)


def _count_failure(keys: list[str]) -> None:
    window = settings.LOGIN_FAILURE_WINDOW
    for key in keys:
        cache.add(key, 0, timeout=window)
        try:
            cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.set(key, 1, timeout=window)


def _signed_in(response) -> bool:
    return response.status_code == 302


class ThrottledLoginView(LoginView):
    """Django's sign-in page, refusing (429) once the failures counted here pass the limit."""

    def post(self, request, *args, **kwargs):
        keys = _keys(request)
        if _over_limit(keys):
            response = self.render_to_response(
                self.get_context_data(form=self.get_form_class()(request), throttled=True),
                status=429)
            response["Retry-After"] = str(settings.LOGIN_FAILURE_WINDOW)
            return response
        response = super().post(request, *args, **kwargs)
        if not _signed_in(response):
            _count_failure(keys)
        return response


def limit_failed_logins(view):
    """The same brake around another sign-in view (the admin's), refusing with plain text."""

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        if request.method != "POST":
            return view(request, *args, **kwargs)
        keys = _keys(request)
        if _over_limit(keys):
            response = HttpResponse(REFUSED, status=429, content_type="text/plain; charset=utf-8")
            response["Retry-After"] = str(settings.LOGIN_FAILURE_WINDOW)
            return response
        response = view(request, *args, **kwargs)
        if not _signed_in(response):
            _count_failure(keys)
        return response

    return wrapped
