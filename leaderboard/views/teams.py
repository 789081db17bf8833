"""Team pages: your teams (and making one), a team (members, runs, invitation links made,
mailed, listed and revoked), joining by an invitation link, leaving, removing a member (its
creator); on a task that needs approval, a team asking to take part and an organizer approving
it. A refused action shows its :class:`TeamError` (or the refused list of addresses) with its
status."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from site_platform.errors import ServiceError, with_headers

from .. import selectors
from ..services.invitation_mail import invite_to_team_by_mail
from ..services.teams import (
    TeamError,
    approve_team,
    check_invitation,
    create_team,
    invite_to_team,
    join_team,
    remove_from_team,
    request_approval,
    revoke_team_invitation,
)
from ..services.teams import leave_team as leave
from . import organize_sections
from .common import invitation_page, mailed_invitations

# Where the join page keeps the digest of the invitation a signed-out visitor opened: with
# REGISTRATION = "invite", sign-up is open to whoever holds a valid one.
INVITATION_SESSION_KEY = "team_invitation"


@login_required
@require_http_methods(["GET", "POST"])
def teams(request):
    context: dict[str, object] = {"teams": selectors.teams_of(request.user), "name": ""}
    if request.method == "POST":
        name = request.POST.get("name", "")
        try:
            team = create_team(name=name, members=[request.user])
        except TeamError as exc:
            context |= {"error": exc, "name": name}
            return render(request, "leaderboard/teams.html", context, status=exc.http_status)
        messages.success(request, f"Team {team.name} created: invite its members from here.")
        return redirect("team_detail", team_id=team.pk)
    return render(request, "leaderboard/teams.html", context)


def _team_page(request, team, *, status=200, **context):
    return render(
        request,
        "leaderboard/team.html",
        {
            "team": team,
            "members": team.members.order_by("username"),
            "may_remove": team.created_by_id == request.user.pk,
            "open_invitations": selectors.open_team_invitations(team),
            "runs": selectors.team_runs(team)[:50],
            **context,
        },
        status=status,
    )


@login_required
@require_http_methods(["GET"])
def team_detail(request, team_id: int):
    return _team_page(request, selectors.team_for(team_id=team_id, user=request.user))


@login_required
@require_POST
def team_invite(request, team_id: int):
    team = selectors.team_for(team_id=team_id, user=request.user)
    issued = invite_to_team(team=team, by=request.user)
    link = request.build_absolute_uri(reverse("team_join", args=[issued.key]))
    # Shown on this response only: the key is not stored, so it cannot be shown again.
    return _team_page(request, team, new_link=link, expires_at=issued.invitation.expires_at)


@login_required
@require_POST
def team_invite_mail(request, team_id: int):
    team = selectors.team_for(team_id=team_id, user=request.user)
    addresses = request.POST.get("addresses", "")
    try:
        issued = invite_to_team_by_mail(team=team, by=request.user, addresses=addresses)
    except ServiceError as exc:  # the addresses' problems, or too many invitations (429)
        page = _team_page(
            request, team, status=exc.http_status, mail_error=exc, addresses=addresses
        )
        return with_headers(page, exc)
    return _team_page(request, team, mailed=mailed_invitations(request, issued, "team_join"))


@login_required
@require_POST
def team_leave(request, team_id: int):
    team = selectors.team_for(team_id=team_id, user=request.user)
    leave(team=team, user=request.user)
    messages.success(request, f"You left {team.name}; its runs stay with the team.")
    return redirect("teams")


@login_required
@require_POST
def team_invitation_revoke(request, team_id: int, invitation_id: int):
    team = selectors.team_for(team_id=team_id, user=request.user)
    invitation = selectors.team_invitation_for(team=team, invitation_id=invitation_id)
    revoke_team_invitation(team=team, invitation=invitation, by=request.user)
    messages.success(request, "The invitation link was revoked.")
    return redirect("team_detail", team_id=team.pk)


@login_required
@require_POST
def team_member_remove(request, team_id: int, user_id: int):
    team = selectors.team_for(team_id=team_id, user=request.user)
    member = selectors.team_member_for(team=team, user_id=user_id)
    try:
        remove_from_team(team=team, user=member, by=request.user)
    except TeamError as exc:
        return _team_page(request, team, status=exc.http_status, member_error=exc)
    messages.success(
        request, f"{member.get_username()} is no longer a member; their runs stay with the team."
    )
    return redirect("team_detail", team_id=team.pk)


@require_http_methods(["GET", "POST"])
def team_join(request, key: str):
    def accept():
        team = join_team(key=key, user=request.user)
        messages.success(request, f"You joined {team.name}.")
        return redirect("team_detail", team_id=team.pk)

    return invitation_page(
        request,
        template="leaderboard/join.html",
        session_key=INVITATION_SESSION_KEY,
        error=TeamError,
        check=lambda: check_invitation(key=key, user=request.user),
        accept=accept,
        context=lambda invitation: {"team": invitation.team},
    )


@login_required
@require_POST
def team_request(request, slug: str, team_id: int):
    task = selectors.task_for(slug, request.user)
    team = selectors.team_for(team_id=team_id, user=request.user)
    request_approval(task=task, team=team, by=request.user)
    messages.success(request, f"{team.name} asked to take part: an organizer approves.")
    return redirect("submit_run", slug=task.slug)


@login_required
@require_POST
def team_approve(request, slug: str, team_id: int):
    """Approve from the People section, or from the overview's teams waiting (``next``)."""
    task = selectors.task_for(slug, request.user, role="organizer")
    approval = selectors.approval_request(task=task, team_id=team_id)
    try:
        approve_team(task=task, team=approval.team, by=request.user)
    except TeamError as exc:  # its request withdrawn meanwhile
        return organize_sections.refused(request, task, "approve", exc)
    messages.success(request, f"{approval.team.name} may submit runs to {task.slug}.")
    back = organize_sections.next_section(request, "people")
    return organize_sections.to_section(task, back or "people")
