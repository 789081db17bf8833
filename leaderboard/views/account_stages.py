"""The sign-in stages of django-allauth this site changes (``AccountAdapter.get_login_stages``)."""

from __future__ import annotations

from allauth.account.internal.flows.email_verification import (
    consume_email_verification_rate_limit,
    get_address_for_login,
)
from allauth.account.stages import EmailVerificationStage
from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest

from ..selectors import has_verified_email


class VerifiedEmailStage(EmailVerificationStage):
    """allauth's check that a signing-in user has verified their email, on the site's one rule
    (``selectors.has_verified_email``): an account an administrator made without an address
    (``createsuperuser``, the admin, the demo) was vouched for by whoever made it."""

    def handle(self):
        user = self.login.user  # None when a sign-up hides that an address is taken
        if user is not None and has_verified_email(user):
            return None, True
        if user is not None:
            self._say_if_no_mail_is_sent()
        return super().handle()

    def _say_if_no_mail_is_sent(self) -> None:
        address = get_address_for_login(self.login)
        if address is not None and not consume_email_verification_rate_limit(
            self.request, address.email, dry_run=True
        ):
            say_no_verification_mail(self.request, address.email)


def say_no_verification_mail(request: HttpRequest, email: str) -> None:
    """allauth skips a verification mail silently past its rate limit (``confirm_email``, issue
    29): say so, rather than let the page suggest a new mail is on its way."""
    minutes = max(1, settings.VERIFICATION_MAIL_COOLDOWN // 60)
    messages.warning(
        request,
        f"No new verification mail was sent to {email}: one was sent less than {minutes} "
        f"minute{'s' if minutes != 1 else ''} ago (and at most "
        f"{settings.VERIFICATION_MAILS_PER_DAY} are sent a day). Use the link in it (look in "
        "your spam folder too), or ask for another later.",
    )
