"""The account forms (django-allauth's) behind the brakes of ``leaderboard.services.sign_in``:
past a brake's limit a form is refused with 429 (and ``Retry-After``), the page showing why.

Sign-in counts failed attempts only (``/accounts/login/``; the admin's ``/admin/login/`` through
:func:`limit_failed_logins`; the API's token endpoints share the counters); sign-up and password
reset count every attempt, the reset also per address asked for.
"""

from __future__ import annotations

import functools

from allauth.account import views as allauth_views
from django.conf import settings
from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect

from site_platform.errors import with_headers

from ..services.sign_in import (
    PASSWORD_RESET,
    SIGN_IN,
    SIGN_UP,
    AttemptsRefused,
    Brake,
    attempt_keys,
    check_allowed,
    check_sign_in_allowed,
    count_attempt,
    failure_keys,
)
from .account_stages import say_no_verification_mail


def _signed_in(response) -> bool:
    return response.status_code == 302


class BrakedFormMixin:
    """A form view whose POSTs count under ``brake``, refused (429) past its limit."""

    brake: Brake = SIGN_IN
    # The POST field naming what is counted besides the address (None: the address only).
    name_field: str | None = None

    def post(self, request, *args, **kwargs):
        name = request.POST.get(self.name_field, "") if self.name_field else None
        keys = attempt_keys(request, name, self.brake)
        try:
            check_allowed(keys, self.brake)
        except AttemptsRefused as refused:
            messages.error(request, refused.message)
            form = self.blank_form()  # never bound: validating it would check the password
            response = self.render_to_response(  # type: ignore[attr-defined]
                self.get_context_data(form=form),  # type: ignore[attr-defined]
                status=refused.http_status,
            )
            return with_headers(response, refused)
        response = super().post(request, *args, **kwargs)  # type: ignore[misc]
        if self.brake is not SIGN_IN or not _signed_in(response):
            count_attempt(keys, self.brake)
        return response

    def blank_form(self):
        kwargs = self.get_form_kwargs()  # type: ignore[attr-defined]
        kwargs.pop("data", None)
        kwargs.pop("files", None)
        return self.get_form_class()(**kwargs)  # type: ignore[attr-defined]


class ThrottledLoginView(BrakedFormMixin, allauth_views.LoginView):
    """allauth's sign-in page (username or email), counting failed sign-ins."""

    brake = SIGN_IN
    name_field = "login"


class ThrottledSignupView(BrakedFormMixin, allauth_views.SignupView):
    """allauth's sign-up page, counting sign-ups per client address; a signed-in user is sent
    home (the sign-in page stays open to them, to sign in as someone else)."""

    brake = SIGN_UP

    def dispatch(self, request, *args, **kwargs):
        if request.user.is_authenticated:
            return redirect(settings.LOGIN_REDIRECT_URL)
        return super().dispatch(request, *args, **kwargs)


class ThrottledPasswordResetView(BrakedFormMixin, allauth_views.PasswordResetView):
    """allauth's password-reset request, counting requests per address and per email asked."""

    brake = PASSWORD_RESET
    name_field = "email"


class AddressesView(allauth_views.EmailView):
    """allauth's address page; a re-sent verification mail its rate limit skips says so."""

    def _action_send(self, request, *args, **kwargs):
        response = super()._action_send(request, *args, **kwargs)
        address = self._get_email_address(request)
        if address is not None and not self._did_send_verification_email:
            say_no_verification_mail(request, address.email)
        return response


def limit_failed_logins(view):
    """The sign-in brake around another sign-in view (the admin's), refusing with plain text."""

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        if request.method != "POST":
            return view(request, *args, **kwargs)
        keys = failure_keys(request, request.POST.get("username", ""))
        try:
            check_sign_in_allowed(keys)
        except AttemptsRefused as refused:
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
            count_attempt(keys, SIGN_IN)
        return response

    return wrapped
