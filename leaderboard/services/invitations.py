"""The one way to issue, check, use and revoke an invitation link, whatever it invites to.

A team's invitations (``services.teams``) and a role on a task's (``services.task_roles``)
are kinds of :class:`~leaderboard.models.Invitation`: a link that works once, until it expires or
an organizer revokes it. Its key is 256 random bits shown once, when made; only its digest is
stored (``models.key_digest``, as for API tokens). What a kind adds (who may issue, what using it
grants, who may not use it) is its own service's; the key and its states are here, and each kind
declares once what tells it apart here (:class:`InvitationKind`). Every refusal is an
:class:`InvitationError` (or the caller's subclass of it) naming the problem.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Generic, TypedDict, TypeVar, Unpack

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from site_platform.errors import ServiceError

from ..models import Invitation, key_digest
from ..selectors import check_verified_email

if TYPE_CHECKING:
    from django.contrib.auth.models import User

InvitationT = TypeVar("InvitationT", bound=Invitation)


class InvitationError(ServiceError):
    """An invitation that cannot be used (unknown or forged 404; used, expired, revoked 410).
    Each kind's own errors subclass it, adding their codes to ``statuses``."""

    statuses = {
        "invitation_unknown": 404,
        "invitation_used": 410,
        "invitation_expired": 410,
        "invitation_revoked": 410,
    }


@dataclass(frozen=True)
class IssuedInvitation(Generic[InvitationT]):
    """An invitation just made: its key (never stored, shown once) and the invitation."""

    key: str
    invitation: InvitationT


def issue_invitation(
    model: type[InvitationT],
    *,
    by: User,
    hours: float,
    now: datetime | None = None,
    **fields: Any,
) -> IssuedInvitation[InvitationT]:
    """Make an invitation of ``model`` (with ``fields``: what it invites to) valid ``hours``."""
    now = now or timezone.now()
    key = secrets.token_urlsafe(32)
    invitation = model._default_manager.create(
        digest=key_digest(key),
        created_by=by,
        created_at=now,
        expires_at=now + timedelta(hours=hours),
        **fields,
    )
    return IssuedInvitation(key=key, invitation=invitation)


class InvitationLookup(TypedDict, total=False):
    """Which invitation :func:`find_invitation` looks for and how: by its ``key`` (or the key's
    ``digest``), as of ``now``, its row locked or not (``lock``)."""

    key: str
    digest: str
    now: datetime | None
    lock: bool


def find_invitation(
    model: type[InvitationT],
    *,
    key: str = "",
    digest: str = "",
    now: datetime | None = None,
    error: type[InvitationError] = InvitationError,
    expired_hint: str = "ask for a new one",
    lock: bool = False,
    related: tuple[str, ...] = (),
) -> InvitationT:
    """The invitation of ``key`` (or of its ``digest``) if it can still be used now; else
    ``error`` says why (unknown, used, revoked, expired). ``lock``: lock its row (in a
    transaction), so two people racing for one link cannot both use it; ``related``: relations
    to fetch with it (what it invites to)."""
    now = now or timezone.now()
    digest = digest or key_digest(key or "")
    rows = model._default_manager.select_related(*related).filter(digest=digest)
    if lock:
        rows = rows.select_for_update()
    invitation = rows.first()
    if invitation is None:
        raise error("this invitation link is not valid", code="invitation_unknown")
    if invitation.used_at is not None:
        raise error("this invitation link has already been used", code="invitation_used")
    if invitation.revoked_at is not None:
        raise error("this invitation link was revoked", code="invitation_revoked")
    if invitation.expires_at <= now:
        raise error(f"this invitation link has expired: {expired_hint}", code="invitation_expired")
    return invitation


def use_invitation(invitation: Invitation, *, user: User, now: datetime | None = None) -> None:
    """Mark ``invitation`` used by ``user`` (the caller found it with ``lock=True``)."""
    invitation.used_at, invitation.used_by = now or timezone.now(), user
    invitation.save(update_fields=["used_at", "used_by"])


def revoke_invitation(invitation: Invitation, *, now: datetime | None = None) -> None:
    """Revoke ``invitation`` (idempotent; a used one stays used)."""
    if invitation.revoked_at is None and invitation.used_at is None:
        invitation.revoked_at = now or timezone.now()
        invitation.save(update_fields=["revoked_at"])


@dataclass(frozen=True)
class InvitationKind(Generic[InvitationT]):
    """What tells one kind of invitation apart: its ``model``, the setting that says how many
    hours its links last (``hours_setting``, read when one is made), the ``error`` its refusals
    are, what an expired link's refusal advises (``expired_hint``) and the relations fetched
    with an invitation (``related``: what it invites to)."""

    model: type[InvitationT]
    hours_setting: str
    error: type[InvitationError]
    expired_hint: str
    related: tuple[str, ...]

    def issue(
        self, *, by: User, now: datetime | None = None, **fields: Any
    ) -> IssuedInvitation[InvitationT]:
        """:func:`issue_invitation` of this kind, valid for its setting's hours."""
        hours = getattr(settings, self.hours_setting)
        return issue_invitation(self.model, by=by, hours=hours, now=now, **fields)

    def find(self, **lookup: Unpack[InvitationLookup]) -> InvitationT:
        """:func:`find_invitation` of this kind (refused with its error and hint)."""
        return find_invitation(
            self.model,
            error=self.error,
            expired_hint=self.expired_hint,
            related=self.related,
            **lookup,
        )

    def accept(
        self,
        check: Callable[..., InvitationT],
        *,
        key: str,
        user: User,
        grant: Callable[[InvitationT], None],
        now: datetime | None = None,
        lock: Callable[[InvitationT], None] | None = None,
    ) -> InvitationT:
        """Use up the invitation ``key`` for ``user`` (an account whose address is verified
        only): ``check(key=..., user=..., now=..., lock=...)`` finds it if ``user`` may use it
        (the kind's own refusals), ``grant(invitation)`` gives what it invites to.

        ``check`` runs twice in one transaction, the second time with the invitation's row
        locked (after ``lock(invitation)``, which locks any other row the check reads), so two
        people racing for one link, or for the last place it grants, cannot both use it.
        """
        check_verified_email(user)
        now = now or timezone.now()
        with transaction.atomic():
            invitation = check(key=key, user=user, now=now)
            if lock is not None:
                lock(invitation)
            invitation = check(key=key, user=user, now=now, lock=True)
            grant(invitation)
            use_invitation(invitation, user=user, now=now)
        return invitation
