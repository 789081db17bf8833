"""REST API routes (mounted at ``/api/``; URL names in the ``api`` namespace), the OpenAPI schema
(``/api/schema/``) and its browsable docs (``/api/docs/``, Swagger UI).

The docs page loads its start-up script from a URL (the "split" view) and its style from a file,
as the Content-Security-Policy requires. (Redoc injects inline styles and fetches web fonts from
Google: it cannot run under the policy, so it is not served.)"""

from csp.decorators import csp_update
from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from site_platform.api.views import UnknownEndpointView

from . import (
    account_views,
    board_views,
    held_run_views,
    organizer_views,
    pool_views,
    reference_sample_views,
    run_views,
    task_page_views,
    task_role_views,
    team_views,
    upload_views,
    views,
)

app_name = "api"

urlpatterns = [
    path("tasks/", views.TaskListView.as_view(), name="task-list"),
    path("tasks/<slug:slug>/", views.TaskDetailView.as_view(), name="task-detail"),
    path("tasks/<slug:slug>/runs/", views.TaskRunsView.as_view(), name="task-runs"),
    path(
        "tasks/<slug:slug>/reference/",
        upload_views.TaskReferenceView.as_view(),
        name="task-reference",
    ),
    path(
        "tasks/<slug:slug>/reference-sample/",
        reference_sample_views.ReferenceSampleView.as_view(),
        name="task-reference-sample",
    ),
    path(
        "tasks/<slug:slug>/reference-sample/candidates/",
        reference_sample_views.ReferenceCandidatesView.as_view(),
        name="task-reference-sample-candidates",
    ),
    path("tasks/<slug:slug>/pool/", pool_views.TaskPoolView.as_view(), name="task-pool"),
    path("tasks/<slug:slug>/uploads/", upload_views.TaskUploadsView.as_view(), name="task-uploads"),
    path(
        "tasks/<slug:slug>/uploads/<int:upload_id>/",
        upload_views.TaskUploadView.as_view(),
        name="task-upload",
    ),
    # The task page: its terms and data files (task_page_views).
    path("tasks/<slug:slug>/terms/", task_page_views.TaskTermsView.as_view(), name="task-terms"),
    path(
        "tasks/<slug:slug>/terms/acceptances/",
        task_page_views.TermsAcceptancesView.as_view(),
        name="task-terms-acceptances",
    ),
    path("tasks/<slug:slug>/files/", task_page_views.TaskFileListView.as_view(), name="task-files"),
    path(
        "tasks/<slug:slug>/files/<int:file_id>/",
        task_page_views.TaskFileDetailView.as_view(),
        name="task-file",
    ),
    path(
        "tasks/<slug:slug>/files/<int:file_id>/download/",
        task_page_views.TaskFileDownloadView.as_view(),
        name="task-file-download",
    ),
    path("tasks/<slug:slug>/board/", board_views.BoardView.as_view(), name="board"),
    path(
        "tasks/<slug:slug>/snapshots/", board_views.SnapshotListView.as_view(), name="snapshot-list"
    ),
    path(
        "tasks/<slug:slug>/snapshots/<int:version>/",
        board_views.SnapshotDetailView.as_view(),
        name="snapshot-detail",
    ),
    path("tasks/<slug:slug>/quota/", organizer_views.QuotaView.as_view(), name="quota"),
    path(
        "tasks/<slug:slug>/readiness/",
        organizer_views.ReadinessView.as_view(),
        name="task-readiness",
    ),
    path("tasks/<slug:slug>/hold/", organizer_views.HoldBoardView.as_view(), name="hold"),
    path("tasks/<slug:slug>/publish/", organizer_views.PublishBoardView.as_view(), name="publish"),
    path("tasks/<slug:slug>/teams/", team_views.TaskTeamsView.as_view(), name="task-teams"),
    path(
        "tasks/<slug:slug>/teams/<int:team_id>/request/",
        team_views.TeamRequestView.as_view(),
        name="task-team-request",
    ),
    path(
        "tasks/<slug:slug>/teams/<int:team_id>/approve/",
        team_views.TeamApproveView.as_view(),
        name="task-team-approve",
    ),
    # A task's people and invitations (task_role_views).
    path("tasks/<slug:slug>/people/", task_role_views.TaskPeopleView.as_view(), name="task-people"),
    path(
        "tasks/<slug:slug>/invitations/",
        task_role_views.TaskInvitationListView.as_view(),
        name="task-invitations",
    ),
    path(
        "tasks/<slug:slug>/invitations/mail/",
        task_role_views.TaskInvitationMailView.as_view(),
        name="task-invitations-mail",
    ),
    path(
        "tasks/<slug:slug>/invitations/<int:invitation_id>/",
        task_role_views.TaskInvitationDetailView.as_view(),
        name="task-invitation",
    ),
    path(
        "tasks/<slug:slug>/annotators/<int:user_id>/",
        task_role_views.TaskAnnotatorView.as_view(),
        name="task-annotator",
    ),
    path(
        "tasks/<slug:slug>/organizers/<int:user_id>/",
        task_role_views.TaskOrganizerView.as_view(),
        name="task-organizer",
    ),
    path(
        "invitations/accept/",
        task_role_views.TaskInvitationAcceptView.as_view(),
        name="invitation-accept",
    ),
    path("tasks/<slug:slug>/spend/", organizer_views.SpendView.as_view(), name="spend"),
    path(
        "tasks/<slug:slug>/export/items/",
        organizer_views.VerifiedItemsExportView.as_view(),
        name="export-items",
    ),
    path("runs/<int:run_id>/", views.RunDetailView.as_view(), name="run-detail"),
    path("runs/<int:run_id>/history/", board_views.RunHistoryView.as_view(), name="run-history"),
    path("runs/<int:run_id>/release/", held_run_views.RunReleaseView.as_view(), name="run-release"),
    path("runs/<int:run_id>/reject/", held_run_views.RunRejectView.as_view(), name="run-reject"),
    path("runs/<int:run_id>/withdraw/", run_views.RunWithdrawView.as_view(), name="run-withdraw"),
    path("runs/<int:run_id>/baseline/", run_views.RunBaselineView.as_view(), name="run-baseline"),
    path("token/", account_views.TokenView.as_view(), name="token"),
    path("token/rotate/", account_views.TokenRotateView.as_view(), name="token-rotate"),
    path("me/", account_views.MeView.as_view(), name="me"),
    path("me/notifications/", account_views.MailPreferencesView.as_view(), name="me-notifications"),
    path("teams/", team_views.TeamListView.as_view(), name="team-list"),
    path("teams/join/", team_views.TeamJoinView.as_view(), name="team-join"),
    path("teams/<int:team_id>/", team_views.TeamDetailView.as_view(), name="team-detail"),
    path(
        "teams/<int:team_id>/invitations/",
        team_views.TeamInvitationView.as_view(),
        name="team-invitations",
    ),
    path(
        "teams/<int:team_id>/invitations/mail/",
        team_views.TeamInvitationMailView.as_view(),
        name="team-invitations-mail",
    ),
    path(
        "teams/<int:team_id>/invitations/<int:invitation_id>/",
        team_views.TeamInvitationDetailView.as_view(),
        name="team-invitation",
    ),
    path(
        "teams/<int:team_id>/members/<int:user_id>/",
        team_views.TeamMemberView.as_view(),
        name="team-member",
    ),
    path("teams/<int:team_id>/leave/", team_views.TeamLeaveView.as_view(), name="team-leave"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    # Swagger UI draws its icons from data: URLs (images only; no script can run from them).
    path(
        "docs/",
        csp_update({"img-src": ["data:"]})(
            SpectacularSwaggerSplitView.as_view(
                url_name="api:schema", template_name="api/swagger_ui.html"
            )
        ),
        name="docs",
    ),
    # Last: every other path under /api/ gets the JSON error body, not the HTML 404 page.
    re_path(r"^[\s\S]*$", UnknownEndpointView.as_view(), name="unknown"),
]
