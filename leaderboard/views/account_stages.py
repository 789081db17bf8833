"""The sign-in stages of django-allauth this site changes (``AccountAdapter.get_login_stages``)."""

from __future__ import annotations

from allauth.account.models import EmailAddress
from allauth.account.stages import EmailVerificationStage


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
