"""REST API of a task's people: its annotators and organizers, invitation links for either role
(made or mailed to a list of addresses, listed, revoked by its organizers), accepting one,
removing an annotator or an organizer.

Only the task's organizers reach its people and invitations (403; 404 for a task they may not
see). An invitation's key is returned once, when it is made; accepting uses it up. Refusals are
``TaskRoleError``s in the one error body: an unknown invitation 404, a used, revoked or expired
one 410, a role already held, an annotator in a team with runs on the task or the last organizer
409; a list of addresses with problems 400 (each problem naming its address), more invitations
by mail than one person may send for now 429.
"""

from __future__ import annotations

from typing import Literal

from django.urls import reverse
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from site_platform.api.openapi import with_errors
from site_platform.api.serializers import RefuseUnknownFields

from ..selectors import (
    open_task_invitations,
    task_annotators,
    task_invitation_for,
    task_member_for,
    task_organizers,
)
from ..services.invitation_mail import invite_to_task_by_mail
from ..services.task_roles import (
    ROLES,
    accept_task_invitation,
    invite_to_task,
    remove_from_task,
    revoke_task_invitation,
)
from .team_views import MailInvitationsSerializer, mailed_data
from .views import ApiView


class PersonSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    username = serializers.CharField(source="get_username")


class TaskPeopleSerializer(serializers.Serializer):
    organizers = PersonSerializer(many=True)
    annotators = PersonSerializer(many=True)
    annotators_may_compete = serializers.BooleanField()


class TaskInvitationSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    role = serializers.ChoiceField(choices=ROLES)
    created_by = serializers.CharField(source="created_by.get_username", allow_null=True)
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    email = serializers.CharField(
        source="sent_to", help_text="The address it was mailed to (empty for a link)."
    )


class IssuedTaskInvitationSerializer(TaskInvitationSerializer):
    key = serializers.CharField(help_text="Shown once: only its digest is stored.")
    url = serializers.CharField(help_text="The page where a person accepts with the key.")


class TaskInviteSerializer(RefuseUnknownFields, serializers.Serializer):
    role = serializers.ChoiceField(choices=ROLES)


class TaskMailInvitationsSerializer(MailInvitationsSerializer):
    role = serializers.ChoiceField(choices=ROLES)


class AcceptSerializer(RefuseUnknownFields, serializers.Serializer):
    key = serializers.CharField(help_text="The key of an invitation (the end of its link).")


class AcceptedSerializer(serializers.Serializer):
    task = serializers.CharField(source="task.slug")
    role = serializers.ChoiceField(choices=ROLES)


class TaskPeopleView(ApiView):
    """The organizers and annotators of a task you organize."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses=with_errors({200: TaskPeopleSerializer}, 401, 403, 404))
    def get(self, request, slug: str):
        task = self.organized_task(slug)
        return Response(
            TaskPeopleSerializer(
                {
                    "organizers": task_organizers(task),
                    "annotators": task_annotators(task),
                    "annotators_may_compete": task.annotators_may_compete,
                }
            ).data
        )


class TaskInvitationListView(ApiView):
    """``GET``: the open invitations of a task you organize. ``POST``: make a single-use link
    for one role (valid ``TASK_INVITATION_HOURS``; its key is shown once)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses=with_errors({200: TaskInvitationSerializer(many=True)}, 401, 403, 404))
    def get(self, request, slug: str):
        task = self.organized_task(slug)
        return Response(TaskInvitationSerializer(open_task_invitations(task), many=True).data)

    @extend_schema(
        request=TaskInviteSerializer,
        responses=with_errors({201: IssuedTaskInvitationSerializer}, 400, 401, 403, 404),
    )
    def post(self, request, slug: str):
        task = self.organized_task(slug)
        body = self.validated(TaskInviteSerializer)
        issued = invite_to_task(task=task, role=body["role"], by=request.user)
        url = request.build_absolute_uri(reverse("task_join", args=[issued.key]))
        return Response(
            {**TaskInvitationSerializer(issued.invitation).data, "key": issued.key, "url": url},
            status=status.HTTP_201_CREATED,
        )


class TaskInvitationMailView(ApiView):
    """Mail a single-use link for one role of a task you organize to each of a list of
    addresses (valid ``TASK_INVITATION_HOURS``; the keys are shown once, here). The whole list
    is refused if any address cannot be invited; at most ``INVITATION_MAIL_LIMIT`` addresses per
    person per ``INVITATION_MAIL_WINDOW`` seconds."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=TaskMailInvitationsSerializer,
        responses=with_errors(
            {201: IssuedTaskInvitationSerializer(many=True)}, 400, 401, 403, 404, 429
        ),
    )
    def post(self, request, slug: str):
        task = self.organized_task(slug)
        body = self.validated(TaskMailInvitationsSerializer)
        issued = invite_to_task_by_mail(
            task=task,
            role=body["role"],
            by=request.user,
            addresses=body["emails"],
        )
        links = mailed_data(request, issued, "task_join")
        return Response(
            [
                {**TaskInvitationSerializer(one.invitation).data, **link}
                for one, link in zip(issued, links, strict=True)
            ],
            status=status.HTTP_201_CREATED,
        )


class TaskInvitationDetailView(ApiView):
    """Revoke an invitation of a task you organize (idempotent; a used one stays used)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses=with_errors({204: None}, 401, 403, 404))
    def delete(self, request, slug: str, invitation_id: int):
        task = self.organized_task(slug)
        revoke_task_invitation(
            invitation=task_invitation_for(task=task, invitation_id=invitation_id)
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class TaskMemberView(ApiView):
    """Removes the task's annotator or organizer (``role``) named by the URL."""

    permission_classes = [IsAuthenticated]
    role: Literal["annotator", "organizer"]

    def delete(self, request, slug: str, user_id: int):
        task = self.organized_task(slug)
        person = task_member_for(task=task, role=self.role, user_id=user_id)
        remove_from_task(task=task, user=person, role=self.role)
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema_view(
    delete=extend_schema(request=None, responses=with_errors({204: None}, 401, 403, 404))
)
class TaskAnnotatorView(TaskMemberView):
    """Remove an annotator of a task you organize (their judgments stay)."""

    role = "annotator"


@extend_schema_view(
    delete=extend_schema(request=None, responses=with_errors({204: None}, 401, 403, 404, 409))
)
class TaskOrganizerView(TaskMemberView):
    """Remove an organizer of a task you organize (never its last one: 409)."""

    role = "organizer"


class TaskInvitationAcceptView(ApiView):
    """Become an annotator or an organizer of a task with an invitation's key (it is used up)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=AcceptSerializer,
        responses=with_errors({200: AcceptedSerializer}, 400, 401, 404, 409, 410),
    )
    def post(self, request):
        body = self.validated(AcceptSerializer)
        invitation = accept_task_invitation(key=body["key"], user=request.user)
        return Response(AcceptedSerializer(invitation).data)
