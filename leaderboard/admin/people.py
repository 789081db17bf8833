"""Admin for teams, API tokens, invitations and team approvals."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Count, Q

from site_platform.admin import SuperusersOnly, ViewOnly, annotated_column

from ..models import (
    ApiToken,
    Run,
    TaskInvitation,
    Team,
    TeamApproval,
    TeamDeparture,
    TeamInvitation,
)
from ..selectors import organized_tasks
from .base import OrganizerScopedAdmin

# An invitation link's life, after what it is to (a team, or a role on a task).
INVITATION_COLUMNS = ("created_by", "created_at", "expires_at", "used_by", "used_at", "revoked_at")


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("name", "member_count", "run_count", "created_at")
    search_fields = ("name", "members__username")
    filter_horizontal = ("members",)
    readonly_fields = ("created_by",)  # who made the team: recorded, never reassigned

    def get_queryset(self, request):
        # Teams belong to no task: an organizer sees the teams with runs on their tasks, and
        # counts only those runs (a team's work elsewhere is not theirs to see).
        tasks = organized_tasks(request.user)
        teams = super().get_queryset(request)
        if not request.user.is_superuser:
            teams = teams.filter(pk__in=Run.objects.filter(task__in=tasks).values("team"))
        return teams.annotate(
            _members=Count("members", distinct=True),
            _runs=Count("runs", distinct=True, filter=Q(runs__task__in=tasks)),
        )

    member_count = annotated_column("_members", "members")
    run_count = annotated_column("_runs", "runs")


@admin.register(ApiToken)
class ApiTokenAdmin(SuperusersOnly, ViewOnly, admin.ModelAdmin):
    """Who has an API token, since when: superusers only (the list named every user holding a
    token to any staff organizer). Only the key's digest is stored, and not shown; deleting a
    token revokes it. Tokens are made by their users (API, CLI) or ``manage.py api_token``."""

    list_display = ("user", "created")
    search_fields = ("user__username",)
    fields = ("user", "created")
    readonly_fields = fields


@admin.register(TeamInvitation)
class TeamInvitationAdmin(SuperusersOnly, ViewOnly, admin.ModelAdmin):
    """Invitation links to teams: who made them, until when, who used them. Only the key's digest
    is stored, and not shown. A team's invitations are its members' business: superusers only
    (an organizer sees the teams with runs on their tasks, not who invited whom)."""

    list_display = ("team", *INVITATION_COLUMNS)
    list_select_related = ("team", "created_by", "used_by")
    fields = list_display
    readonly_fields = fields


@admin.register(TeamDeparture)
class TeamDepartureAdmin(ViewOnly, admin.ModelAdmin):
    """Who left a team, or was removed, and when: the history conflicts of interest follow.
    Superusers only, like a team's invitations; never deleted here (that would let a former
    member verify the team's items again)."""

    list_display = ("team", "user", "left_at")
    list_select_related = ("team", "user")
    fields = list_display
    readonly_fields = fields

    def get_queryset(self, request):
        departures = super().get_queryset(request)
        return departures if request.user.is_superuser else departures.none()

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(TaskInvitation)
class TaskInvitationAdmin(ViewOnly, OrganizerScopedAdmin):
    """Invitation links to annotate or co-organize the tasks one organizes: who made them, until
    when, who used them (made and revoked on the organize page or through the API). Only the
    key's digest is stored, and not shown."""

    list_display = ("task", "role", *INVITATION_COLUMNS)
    list_select_related = ("task", "created_by", "used_by")
    list_filter = ("role",)
    fields = list_display
    readonly_fields = fields


@admin.register(TeamApproval)
class TeamApprovalAdmin(ViewOnly, OrganizerScopedAdmin):
    """Teams' requests to take part in tasks that need approval, of the tasks one organizes
    (approved on the organize page or through the API)."""

    list_display = ("task", "team", "requested_by", "requested_at", "approved_by", "approved_at")
    list_select_related = ("task", "team", "requested_by", "approved_by")
    fields = ("task", "team", "requested_by", "requested_at", "approved_by", "approved_at")
    readonly_fields = fields
