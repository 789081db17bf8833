"""REST API of teams: yours (and making one), a team, invitation links (made, or mailed to a list
of addresses, listed and revoked by members), joining, leaving and removing a member (the team's
creator);
on a task with ``team_approval``, a team asking to take part and its organizers approving.

Only a team's members reach it (404 for everyone else, as for a team that does not exist). An
invitation's key is returned once, when it is made; joining uses it up. Refusals are
``TeamError``s in the one error body: a taken name or a full team 409, an unknown invitation 404,
a used or expired one 410; a list of addresses with problems 400 (each problem naming its
address), more invitations by mail than one person may send for now 429.
"""

from __future__ import annotations

from django.conf import settings
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from site_platform.api.openapi import with_errors
from site_platform.api.serializers import RefuseUnknownFields

from ..selectors import (
    approval_request,
    approval_requests,
    open_team_invitations,
    task_for,
    team_for,
    team_invitation_for,
    team_member_for,
    teams_of,
)
from ..services.invitation_mail import invite_to_team_by_mail
from ..services.teams import (
    approve_team,
    create_team,
    invite_to_team,
    join_team,
    leave_team,
    remove_from_team,
    request_approval,
    revoke_team_invitation,
)
from .views import ApiView


class TeamSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    members = serializers.ListField(child=serializers.CharField())
    member_ids = serializers.ListField(
        child=serializers.IntegerField(), help_text="The members' ids, in the order of `members`."
    )
    created_by = serializers.CharField(
        allow_null=True,
        help_text="Who made the team: while a member, the one who may remove members.",
    )
    max_members = serializers.IntegerField()
    created_at = serializers.DateTimeField()


class TeamCreateSerializer(RefuseUnknownFields, serializers.Serializer):
    name = serializers.CharField(max_length=120)


class InvitationSerializer(serializers.Serializer):
    key = serializers.CharField(help_text="Shown once: only its digest is stored.")
    url = serializers.CharField(help_text="The page where a person joins with the key.")
    expires_at = serializers.DateTimeField()


class MailInvitationsSerializer(RefuseUnknownFields, serializers.Serializer):
    emails = serializers.ListField(
        child=serializers.CharField(max_length=320),
        help_text="The addresses to invite: each is mailed a single-use link of its own.",
    )


class MailedInvitationSerializer(InvitationSerializer):
    email = serializers.EmailField(help_text="The one address this invitation was mailed to.")


def mailed_data(request, issued, view: str) -> list[dict]:
    """Each invitation just mailed: its address, key and link (shown once), expiry."""
    return [
        {
            "email": one.invitation.sent_to,
            "key": one.key,
            "url": request.build_absolute_uri(reverse(view, args=[one.key])),
            "expires_at": one.invitation.expires_at,
        }
        for one in issued
    ]


class JoinSerializer(RefuseUnknownFields, serializers.Serializer):
    key = serializers.CharField(help_text="The key of an invitation (the end of its link).")


class TeamInvitationSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    created_by = serializers.CharField(source="created_by.get_username", allow_null=True)
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    email = serializers.CharField(
        source="sent_to", help_text="The address it was mailed to (empty for a link)."
    )


def team_data(team) -> dict:
    members = list(team.members.order_by("username"))
    return TeamSerializer(
        {
            "id": team.pk,
            "name": team.name,
            "members": [m.get_username() for m in members],
            "member_ids": [m.pk for m in members],
            "created_by": team.created_by.get_username() if team.created_by else None,
            "max_members": settings.TEAM_MAX_MEMBERS,
            "created_at": team.created_at,
        }
    ).data


class TeamListView(ApiView):
    """``GET``: your teams. ``POST``: make a team, with you as its first member."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses=with_errors({200: TeamSerializer(many=True)}, 401))
    def get(self, request):
        return Response([team_data(team) for team in teams_of(request.user)])

    @extend_schema(
        request=TeamCreateSerializer, responses=with_errors({201: TeamSerializer}, 400, 401, 409)
    )
    def post(self, request):
        body = self.validated(TeamCreateSerializer)
        team = create_team(name=body["name"], members=[request.user])
        return Response(team_data(team), status=status.HTTP_201_CREATED)


class TeamDetailView(ApiView):
    """A team of yours: its members and the member cap."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses=with_errors({200: TeamSerializer}, 401, 404))
    def get(self, request, team_id: int):
        return Response(team_data(team_for(team_id=team_id, user=request.user)))


class TeamInvitationView(ApiView):
    """``GET``: the open invitation links of a team of yours (who made each, until when; never
    the key). ``POST``: make a single-use link (valid ``TEAM_INVITATION_HOURS``)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses=with_errors({200: TeamInvitationSerializer(many=True)}, 401, 404))
    def get(self, request, team_id: int):
        team = team_for(team_id=team_id, user=request.user)
        return Response(TeamInvitationSerializer(open_team_invitations(team), many=True).data)

    @extend_schema(request=None, responses=with_errors({201: InvitationSerializer}, 401, 404))
    def post(self, request, team_id: int):
        team = team_for(team_id=team_id, user=request.user)
        issued = invite_to_team(team=team, by=request.user)
        url = request.build_absolute_uri(reverse("team_join", args=[issued.key]))
        return Response(
            InvitationSerializer(
                {"key": issued.key, "url": url, "expires_at": issued.invitation.expires_at}
            ).data,
            status=status.HTTP_201_CREATED,
        )


class TeamInvitationMailView(ApiView):
    """Mail a single-use invitation link to a team of yours to each of a list of addresses
    (valid ``TEAM_INVITATION_HOURS``; the keys are shown once, here). The whole list is refused
    if any address cannot be invited; at most ``INVITATION_MAIL_LIMIT`` addresses per person per
    ``INVITATION_MAIL_WINDOW`` seconds."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=MailInvitationsSerializer,
        responses=with_errors({201: MailedInvitationSerializer(many=True)}, 400, 401, 404, 429),
    )
    def post(self, request, team_id: int):
        team = team_for(team_id=team_id, user=request.user)
        body = self.validated(MailInvitationsSerializer)
        issued = invite_to_team_by_mail(team=team, by=request.user, addresses=body["emails"])
        return Response(
            MailedInvitationSerializer(mailed_data(request, issued, "team_join"), many=True).data,
            status=status.HTTP_201_CREATED,
        )


class TeamInvitationDetailView(ApiView):
    """Revoke an invitation link of a team of yours (idempotent; a used one stays used)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses=with_errors({204: None}, 401, 404))
    def delete(self, request, team_id: int, invitation_id: int):
        team = team_for(team_id=team_id, user=request.user)
        invitation = team_invitation_for(team=team, invitation_id=invitation_id)
        revoke_team_invitation(team=team, invitation=invitation, by=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class TeamMemberView(ApiView):
    """Remove a member of a team you made (403 for other members; leave to remove yourself, 409);
    their runs stay with the team and their links are revoked."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses=with_errors({204: None}, 401, 403, 404, 409))
    def delete(self, request, team_id: int, user_id: int):
        team = team_for(team_id=team_id, user=request.user)
        member = team_member_for(team=team, user_id=user_id)
        remove_from_team(team=team, user=member, by=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class TeamLeaveView(ApiView):
    """Leave a team of yours; the team and its runs stay."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses=with_errors({204: None}, 401, 404))
    def post(self, request, team_id: int):
        leave_team(team=team_for(team_id=team_id, user=request.user), user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class TeamJoinView(ApiView):
    """Join a team with an invitation's key (it is used up)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=JoinSerializer,
        responses=with_errors({200: TeamSerializer}, 400, 401, 404, 409, 410),
    )
    def post(self, request):
        body = self.validated(JoinSerializer)
        team = join_team(key=body["key"], user=request.user)
        return Response(team_data(team))


class ApprovalSerializer(serializers.Serializer):
    team = serializers.CharField(source="team.name")
    team_id = serializers.IntegerField()
    requested_at = serializers.DateTimeField()
    approved = serializers.SerializerMethodField()
    approved_at = serializers.DateTimeField(allow_null=True)

    def get_approved(self, approval) -> bool:
        return approval.approved_at is not None


class TeamRequestView(ApiView):
    """A team of yours asks to take part in a task that needs approval (idempotent)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses=with_errors({200: ApprovalSerializer}, 401, 404))
    def post(self, request, slug: str, team_id: int):
        task = task_for(slug, request.user)
        team = team_for(team_id=team_id, user=request.user)
        approval = request_approval(task=task, team=team, by=request.user)
        return Response(ApprovalSerializer(approval).data)


class TaskTeamsView(ApiView):
    """The teams that asked to take part in a task, approved or not (its organizers)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses=with_errors({200: ApprovalSerializer(many=True)}, 401, 403, 404))
    def get(self, request, slug: str):
        task = self.organized_task(slug)
        return Response(ApprovalSerializer(approval_requests(task), many=True).data)


class TeamApproveView(ApiView):
    """Approve a team's request to take part in a task you organize (idempotent)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses=with_errors({200: ApprovalSerializer}, 401, 403, 404))
    def post(self, request, slug: str, team_id: int):
        task = self.organized_task(slug)
        team = approval_request(task=task, team_id=team_id).team
        return Response(
            ApprovalSerializer(approve_team(task=task, team=team, by=request.user)).data
        )
