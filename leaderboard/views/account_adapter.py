"""How django-allauth fits this site (``ACCOUNT_ADAPTER``): who may sign up (the site's
``REGISTRATION`` setting) and which accounts must verify an email address before signing in."""

from __future__ import annotations

from allauth.account.adapter import DefaultAccountAdapter
from allauth.account.models import EmailAddress
from allauth.account.stages import EmailVerificationStage
from allauth.core.exceptions import ImmediateHttpResponse
from django.conf import settings
from django.shortcuts import render


class AccountAdapter(DefaultAccountAdapter):
    """Sign-up as ``REGISTRATION`` allows; refused sign-up is a 403 page saying why."""

    def is_open_for_signup(self, request) -> bool:
        if settings.REGISTRATION == "open":
            return True
        raise ImmediateHttpResponse(
            render(
                request,
                "account/signup_closed.html",
                {"registration": settings.REGISTRATION},
                status=403,
            )
        )

    def get_login_stages(self) -> list[str]:
        return [
            f"{__name__}.{VerifiedEmailStage.__name__}"
            if path == "allauth.account.stages.EmailVerificationStage"
            else path
            for path in super().get_login_stages()
        ]


class VerifiedEmailStage(EmailVerificationStage):
    """allauth's check that a signing-in user has verified their email, for users who have an
    email: an account made by an administrator (``createsuperuser``, the admin, the demo) may
    have none, and was vouched for by whoever made it."""

    def handle(self):
        user = self.login.user  # None when a sign-up hides that an address is taken
        if (
            user is not None
            and not user.email
            and not EmailAddress.objects.filter(user=user).exists()
        ):
            return None, True
        return super().handle()
