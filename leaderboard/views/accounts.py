"""Sign-in with a brake on password guessing (``leaderboard.services.sign_in``): past the limit,
sign-in is refused with 429 (and ``Retry-After``) until the window ends, even with the right
password. Both sign-in forms are covered: the site's (``/accounts/login/``) and the admin's
(``/admin/login/``); the API's token endpoints share the same counters.
"""

from __future__ import annotations

import functools

from django.contrib.auth.views import LoginView
from django.http import HttpResponse

from ..errors import with_headers
from ..services.sign_in import (
    SignInRefused,
    check_sign_in_allowed,
    count_failed_sign_in,
    failure_keys,
)


def _signed_in(response) -> bool:
    return response.status_code == 302


class ThrottledLoginView(LoginView):
    """Django's sign-in page, refusing (429) once the failures counted here pass the limit."""

    def post(self, request, *args, **kwargs):
        keys = failure_keys(request, request.POST.get("username", ""))
        try:
            check_sign_in_allowed(keys)
        except SignInRefused as refused:
            return with_headers(
                self.render_to_response(
                    self.get_context_data(form=self.get_form_class()(request), throttled=True),
                    status=refused.http_status,
                ),
                refused,
            )
        response = super().post(request, *args, **kwargs)
        if not _signed_in(response):
            count_failed_sign_in(keys)
        return response


def limit_failed_logins(view):
    """The same brake around another sign-in view (the admin's), refusing with plain text."""

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        if request.method != "POST":
            return view(request, *args, **kwargs)
        keys = failure_keys(request, request.POST.get("username", ""))
        try:
            check_sign_in_allowed(keys)
        except SignInRefused as refused:
            return with_headers(
                HttpResponse(
                    refused.message,
                    status=refused.http_status,
                    content_type="text/plain; charset=utf-8",
                ),
                refused,
            )
        response = view(request, *args, **kwargs)
        if not _signed_in(response):
            count_failed_sign_in(keys)
        return response

    return wrapped
