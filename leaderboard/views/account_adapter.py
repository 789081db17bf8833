"""How django-allauth fits this site (``ACCOUNT_ADAPTER``): who may sign up (the site's
``REGISTRATION`` setting: anyone, whoever opened a valid team or task invitation link, or
nobody), which accounts must verify an email address before signing in, and every address
typed into its forms normalised (``email_domains.normalize_email``) before it is checked for
uniqueness, stored or mailed."""

from __future__ import annotations

from allauth.account.adapter import DefaultAccountAdapter
from allauth.core.exceptions import ImmediateHttpResponse
from django.conf import settings
from django.core.exceptions import ValidationError
from django.shortcuts import render

from ..email_domains import normalize_email
from ..services.invitations import InvitationError
from ..services.task_roles import check_task_invitation
from ..services.teams import check_invitation
from .task_roles import TASK_INVITATION_SESSION_KEY
from .teams import INVITATION_SESSION_KEY

# By name: allauth's stages module imports the adapter, so importing it here would be circular.
VERIFIED_EMAIL_STAGE = "leaderboard.views.account_stages.VerifiedEmailStage"


class AccountAdapter(DefaultAccountAdapter):
    """Sign-up as ``REGISTRATION`` allows; refused sign-up is a 403 page saying why."""

    def is_open_for_signup(self, request) -> bool:
        if settings.REGISTRATION == "open":
            return True
        if settings.REGISTRATION == "invite" and _holds_invitation(request):
            return True
        raise ImmediateHttpResponse(
            render(
                request,
                "account/signup_closed.html",
                {"registration": settings.REGISTRATION},
                status=403,
            )
        )

    def clean_email(self, email: str) -> str:
        """Sign-up, a new address and a password reset: one mailbox, one spelling (one account:
        allauth checks uniqueness on what this returns)."""
        try:
            return super().clean_email(normalize_email(email))
        except ValueError as exc:
            raise ValidationError(f"Enter a valid email address: {exc}.") from None

    def get_login_stages(self) -> list[str]:
        return [
            VERIFIED_EMAIL_STAGE
            if path == "allauth.account.stages.EmailVerificationStage"
            else path
            for path in super().get_login_stages()
        ]


def _holds_invitation(request) -> bool:
    """Whether the visitor opened an invitation link (to a team, or to a role on a task) that
    still works (the join pages keep its digest in the session)."""
    for session_key, check in (
        (INVITATION_SESSION_KEY, check_invitation),
        (TASK_INVITATION_SESSION_KEY, check_task_invitation),
    ):
        digest = request.session.get(session_key)
        if not digest:
            continue
        try:
            check(digest=digest)
        except InvitationError:
            continue
        return True
    return False
