"""Writes of teams: create one, invite by a link, join by it, revoke a link, leave, remove a
member (its creator).

Teams belong to no task; runs belong to teams, so a team's runs and their history stay with the
team whoever joins or leaves. An invitation is a single-use link that expires
(``TEAM_INVITATION_HOURS``), issued, checked and used by ``services.invitations`` (only its key's
digest is stored, so the link is shown once, when made). A team has at most ``TEAM_MAX_MEMBERS``
members. An annotator of a task may not join a team with runs on it unless the task allows it
(``Task.annotators_may_compete``; ``selectors.annotator_conflicts``). A task with
``team_approval`` takes runs only from teams an organizer approved, on their request. Every
refusal is a :class:`TeamError` naming the problem, and changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Unpack, cast

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from ..lookalikes import name_problem, tidy_name
from ..models import Task, Team, TeamApproval, TeamDeparture, TeamInvitation
from ..selectors import annotator_conflicts, check_verified_email
from .invitations import (
    InvitationError,
    InvitationKind,
    InvitationLookup,
    IssuedInvitation,
    revoke_invitation,
)
from .notifications import owe_approval_notifications

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User


class TeamError(InvitationError):
    """A team that cannot be created, joined or left (the message says why)."""

    statuses = {
        **InvitationError.statuses,
        "team_name_taken": 409,
        "team_full": 409,
        "already_member": 409,
        "annotator_competes": 409,
        "not_a_member": 403,
        "not_team_creator": 403,
        "remove_yourself": 409,
        "no_approval_request": 404,
    }


TEAM_INVITATIONS = InvitationKind(
    TeamInvitation,
    hours_setting="TEAM_INVITATION_HOURS",
    error=TeamError,
    expired_hint="ask the team for a new one",
    related=("team",),
)


def create_team(*, name: str, members: Iterable[User] = ()) -> Team:
    """Create a team called ``name`` with ``members`` (a person creating a team is its first);
    every member's address must be verified (``selectors.has_verified_email``).

    Names are unique by look (``leaderboard.lookalikes``): one that looks like an existing
    team's is refused, naming it."""
    members = list(members)
    for member in members:
        check_verified_email(member)
    problem = name_problem(name or "")
    if problem is not None:
        raise TeamError(problem)
    name = tidy_name(name or "")
    if not name:
        raise TeamError("a team needs a name")
    if len(name) > cast(int, Team._meta.get_field("name").max_length):  # a CharField's is set
        raise TeamError("the team name is too long")
    team = Team(name=name, created_by=members[0] if members else None)
    try:
        with transaction.atomic():
            team.save()
            team.members.set(members)
    except IntegrityError:
        raise _name_taken(team) from None
    return team


def _name_taken(team: Team) -> TeamError:
    other = team.lookalike()
    taken = other.name if other is not None else team.name
    same = "is already taken" if taken == team.name else f"looks like the name of team {taken!r}"
    return TeamError(
        f"the team name {team.name!r} {same}: choose a name that does not look like another "
        "team's (case, spacing, invisible characters and lookalike letters from other scripts "
        "do not count as different)",
        code="team_name_taken",
    )


def add_team_member(*, team: Team, user: User) -> None:
    team.members.add(user)


def remove_team_member(*, team: Team, user: User) -> None:
    team.members.remove(user)


def record_departures(*, pairs: Iterable[tuple[int, int]], now: datetime | None = None) -> None:
    """``(team id, user id)`` memberships that just ended, however (leaving, removal, the
    admin): each is kept as a :class:`~leaderboard.models.TeamDeparture`, since conflicts of
    interest follow membership history, and the person's open invitation links to the team are
    revoked (a link works no longer than its issuer is a member)."""
    now = now or timezone.now()
    pairs = sorted(set(pairs))
    TeamDeparture.objects.bulk_create(
        [TeamDeparture(team_id=team_id, user_id=user_id, left_at=now) for team_id, user_id in pairs]
    )
    for team_id, user_id in pairs:
        TeamInvitation.objects.filter(
            team_id=team_id, created_by_id=user_id, used_at=None, revoked_at=None
        ).update(revoked_at=now)


def _require_member(team: Team, user: User) -> None:
    if not team.members.filter(pk=user.pk).exists():
        raise TeamError(f"you are not a member of {team.name!r}", code="not_a_member")


def invite_to_team(
    *, team: Team, by: User, now: datetime | None = None, sent_to: str = ""
) -> IssuedInvitation[TeamInvitation]:
    """Make a single-use link to ``team``, valid for ``TEAM_INVITATION_HOURS``; ``by`` must be
    a member. ``sent_to``: the address it is mailed to (``services.invitation_mail``)."""
    _require_member(team, by)
    return TEAM_INVITATIONS.issue(by=by, now=now, team=team, sent_to=sent_to)


def check_invitation(
    *, user: User | AnonymousUser | None = None, **lookup: Unpack[InvitationLookup]
) -> TeamInvitation:
    """The invitation ``lookup`` finds (by its key, see :class:`.invitations.InvitationLookup`)
    if ``user`` (anyone, if ``None`` or signed out) could join by it now; else
    :class:`TeamError` says why (unknown, used, revoked, expired, already a member, full, an
    annotator of a task the team has runs on)."""
    invitation = TEAM_INVITATIONS.find(**lookup)
    team = invitation.team
    if user is not None and user.is_authenticated and team.members.filter(pk=user.pk).exists():
        raise TeamError(f"you are already a member of {team.name!r}", code="already_member")
    if team.members.count() >= settings.TEAM_MAX_MEMBERS:
        raise TeamError(
            f"{team.name!r} is full ({settings.TEAM_MAX_MEMBERS} members)", code="team_full"
        )
    if user is not None and user.is_authenticated:
        conflict = next(iter(annotator_conflicts(team=team, user=user)), None)
        if conflict is not None:
            raise TeamError(
                f"you annotate task {conflict.task.slug!r}, and {team.name!r} has runs on it: "
                "a person may not both annotate a task and compete in it (its organizers may "
                "allow it)",
                code="annotator_competes",
            )
    return invitation


def join_team(*, key: str, user: User, now: datetime | None = None) -> Team:
    """Join the team of the invitation ``key``, using the invitation up (an account whose
    address is verified only)."""

    def lock_team(invitation: TeamInvitation) -> None:
        # Two people racing for the team's last place cannot both get in.
        Team.objects.select_for_update().filter(pk=invitation.team_id).first()

    def grant(invitation: TeamInvitation) -> None:
        invitation.team.members.add(user)

    invitation = TEAM_INVITATIONS.accept(
        check_invitation, key=key, user=user, grant=grant, now=now, lock=lock_team
    )
    return invitation.team


def leave_team(*, team: Team, user: User) -> None:
    """``user`` leaves ``team``; the team and its runs stay, with their history."""
    with transaction.atomic():
        _require_member(team, user)
        team.members.remove(user)


def revoke_team_invitation(
    *, team: Team, invitation: TeamInvitation, by: User, now: datetime | None = None
) -> None:
    """A member (``by``) revokes an invitation link of ``team`` (idempotent; a used one stays
    used)."""
    _require_member(team, by)
    if invitation.team_id != team.pk:
        raise TeamError(f"that invitation is not one of {team.name!r}'s", code="invitation_unknown")
    revoke_invitation(invitation, now=now)


def remove_from_team(*, team: Team, user: User, by: User) -> None:
    """The team's creator (``by``, while a member) removes the member ``user``; their runs
    stay with the team, their links are revoked and their history still counts for conflicts
    of interest (``record_departures``). Idempotent for someone already gone."""
    with transaction.atomic():
        Team.objects.select_for_update().filter(pk=team.pk).first()
        _require_member(team, by)
        if team.created_by_id != by.pk:
            raise TeamError(
                f"only the member who made {team.name!r} may remove members: ask them, or "
                "leave the team yourself",
                code="not_team_creator",
            )
        if user.pk == by.pk:
            raise TeamError(
                "you cannot remove yourself: leave the team instead", code="remove_yourself"
            )
        team.members.remove(user)


def request_approval(*, task: Task, team: Team, by: User) -> TeamApproval:
    """``team`` asks to take part in ``task`` (``by``, a member, asks); idempotent. A new
    request owes the task's organizers a mail (``services.notifications``)."""
    _require_member(team, by)
    with transaction.atomic():
        approval, created = TeamApproval.objects.get_or_create(
            task=task, team=team, defaults={"requested_by": by}
        )
        if created:
            owe_approval_notifications(approval)
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
