"""The sign-in stages of django-allauth this site changes (``AccountAdapter.get_login_stages``)."""

from __future__ import annotations

from allauth.account.stages import EmailVerificationStage

from ..selectors import has_verified_email


class VerifiedEmailStage(EmailVerificationStage):
    """allauth's check that a signing-in user has verified their email, on the site's one rule
    (``selectors.has_verified_email``): an account an administrator made without an address
    (``createsuperuser``, the admin, the demo) was vouched for by whoever made it."""

    def handle(self):
        user = self.login.user  # None when a sign-up hides that an address is taken
        if user is not None and has_verified_email(user):
            return None, True
        return super().handle()
