"""Writes of teams: create one, invite by a link, join by it, leave.

Teams belong to no task; runs belong to teams, so a team's runs and their history stay with the
team whoever joins or leaves. An invitation is a single-use link that expires
(``TEAM_INVITATION_HOURS``); only its key's digest is stored (``models.key_digest``, as for API
tokens), so the link is shown once, when made. A team has at most ``TEAM_MAX_MEMBERS``
members. A task with ``team_approval`` takes runs only from teams an organizer approved, on
their request. Every refusal is a :class:`TeamError` naming the problem, and changes nothing.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, cast

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from ..errors import ServiceError
from ..models import Task, Team, TeamApproval, TeamInvitation, key_digest

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User


class TeamError(ServiceError):
    """A team that cannot be created, joined or left (the message says why)."""

    statuses = {
        "team_name_taken": 409,
        "team_full": 409,
        "already_member": 409,
        "not_a_member": 403,
        "invitation_unknown": 404,
        "invitation_used": 410,
        "invitation_expired": 410,
        "no_approval_request": 404,
    }


@dataclass(frozen=True)
class IssuedInvitation:
    """An invitation just made: its key (never stored, shown once) and the invitation."""

    key: str
    invitation: TeamInvitation


def create_team(*, name: str, members: Iterable[User] = ()) -> Team:
    """Create a team called ``name`` with ``members`` (a person creating a team is its first)."""
    name = (name or "").strip()
    if not name:
        raise TeamError("a team needs a name")
    if len(name) > cast(int, Team._meta.get_field("name").max_length):  # a CharField's is set
        raise TeamError("the team name is too long")
    try:
        with transaction.atomic():
            team = Team.objects.create(name=name)
            team.members.set(list(members))
    except IntegrityError:
        raise TeamError(f"a team called {name!r} already exists", code="team_name_taken") from None
    return team


def add_team_member(*, team: Team, user: User) -> None:
    team.members.add(user)


def remove_team_member(*, team: Team, user: User) -> None:
    team.members.remove(user)


def _require_member(team: Team, user: User) -> None:
    if not team.members.filter(pk=user.pk).exists():
        raise TeamError(f"you are not a member of {team.name!r}", code="not_a_member")


def invite_to_team(*, team: Team, by: User, now: datetime | None = None) -> IssuedInvitation:
    """Make a single-use link to ``team``, valid for ``TEAM_INVITATION_HOURS``; ``by`` must be
    a member."""
    _require_member(team, by)
    now = now or timezone.now()
    key = secrets.token_urlsafe(32)
    invitation = TeamInvitation.objects.create(
        team=team,
        digest=key_digest(key),
        created_by=by,
        created_at=now,
        expires_at=now + timedelta(hours=settings.TEAM_INVITATION_HOURS),
    )
    return IssuedInvitation(key=key, invitation=invitation)


def check_invitation(
    *,
    key: str = "",
    digest: str = "",
    user: User | AnonymousUser | None = None,
    now: datetime | None = None,
) -> TeamInvitation:
    """The invitation of ``key`` (or of its ``digest``) if ``user`` (anyone, if ``None`` or
    signed out) could join by it now; else :class:`TeamError` says why (unknown, used, expired,
    already a member, full)."""
    now = now or timezone.now()
    digest = digest or key_digest(key or "")
    invitation = TeamInvitation.objects.select_related("team").filter(digest=digest).first()
    if invitation is None:
        raise TeamError("this invitation link is not valid", code="invitation_unknown")
    if invitation.used_at is not None:
        raise TeamError("this invitation link has already been used", code="invitation_used")
    if invitation.expires_at <= now:
        raise TeamError(
            "this invitation link has expired: ask the team for a new one",
            code="invitation_expired",
        )
    team = invitation.team
    if user is not None and user.is_authenticated and team.members.filter(pk=user.pk).exists():
        raise TeamError(f"you are already a member of {team.name!r}", code="already_member")
    if team.members.count() >= settings.TEAM_MAX_MEMBERS:
        raise TeamError(
            f"{team.name!r} is full ({settings.TEAM_MAX_MEMBERS} members)", code="team_full"
        )
    return invitation


def join_team(*, key: str, user: User, now: datetime | None = None) -> Team:
    """Join the team of the invitation ``key``, using the invitation up."""
    now = now or timezone.now()
    with transaction.atomic():
        invitation = check_invitation(key=key, user=user, now=now)
        # Lock the team and the invitation, then check again: two people racing for the last
        # place, or for one link, cannot both get in.
        Team.objects.select_for_update().filter(pk=invitation.team_id).first()
        TeamInvitation.objects.select_for_update().filter(pk=invitation.pk).first()
        invitation = check_invitation(key=key, user=user, now=now)
        invitation.team.members.add(user)
        invitation.used_at, invitation.used_by = now, user
        invitation.save(update_fields=["used_at", "used_by"])
    return invitation.team


def leave_team(*, team: Team, user: User) -> None:
    """``user`` leaves ``team``; the team and its runs stay, with their history."""
    with transaction.atomic():
        _require_member(team, user)
        team.members.remove(user)


def request_approval(*, task: Task, team: Team, by: User) -> TeamApproval:
    """``team`` asks to take part in ``task`` (``by``, a member, asks); idempotent."""
    _require_member(team, by)
    approval, _ = TeamApproval.objects.get_or_create(
        task=task, team=team, defaults={"requested_by": by}
    )
    return approval


def approve_team(*, task: Task, team: Team, by: User, now: datetime | None = None) -> TeamApproval:
    """An organizer (``by``; the caller checked) approves ``team``'s request; idempotent."""
    with transaction.atomic():
        approval = TeamApproval.objects.select_for_update().filter(task=task, team=team).first()
        if approval is None:
            raise TeamError(
                f"team {team.name!r} has not asked to take part in {task.slug!r}",
                code="no_approval_request",
            )
        if approval.approved_at is None:
            approval.approved_at, approval.approved_by = now or timezone.now(), by
            approval.save(update_fields=["approved_at", "approved_by"])
    return approval
