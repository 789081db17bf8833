"""REST API routes (mounted at ``/api/``; URL names in the ``api`` namespace), the OpenAPI schema
(``/api/schema/``) and its browsable docs (``/api/docs/``, Swagger UI).

The docs page loads its start-up script from a URL (the "split" view) and its style from a file,
as the Content-Security-Policy requires. (Redoc injects inline styles and fetches web fonts from
Google: it cannot run under the policy, so it is not served.)"""

from csp.decorators import csp_update
from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from site_platform.api.views import UnknownEndpointView
from site_platform.urls import routes

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
    *routes(
        "tasks/<slug:slug>/",
        [
            ("", views.TaskDetailView, "task-detail"),
            ("runs/", views.TaskRunsView, "task-runs"),
            ("reference/", upload_views.TaskReferenceView, "task-reference"),
            (
                "reference-sample/",
                reference_sample_views.ReferenceSampleView,
                "task-reference-sample",
            ),
            (
                "reference-sample/candidates/",
                reference_sample_views.ReferenceCandidatesView,
                "task-reference-sample-candidates",
            ),
            ("pool/", pool_views.TaskPoolView, "task-pool"),
            ("uploads/", upload_views.TaskUploadsView, "task-uploads"),
            ("uploads/<int:upload_id>/", upload_views.TaskUploadView, "task-upload"),
            # The task page: its terms and data files (task_page_views).
            ("terms/", task_page_views.TaskTermsView, "task-terms"),
            ("terms/acceptances/", task_page_views.TermsAcceptancesView, "task-terms-acceptances"),
            ("files/", task_page_views.TaskFileListView, "task-files"),
            ("files/<int:file_id>/", task_page_views.TaskFileDetailView, "task-file"),
            (
                "files/<int:file_id>/download/",
                task_page_views.TaskFileDownloadView,
                "task-file-download",
            ),
            ("board/", board_views.BoardView, "board"),
            ("snapshots/", board_views.SnapshotListView, "snapshot-list"),
            ("snapshots/<int:version>/", board_views.SnapshotDetailView, "snapshot-detail"),
            ("quota/", organizer_views.QuotaView, "quota"),
            ("readiness/", organizer_views.ReadinessView, "task-readiness"),
            ("hold/", organizer_views.HoldBoardView, "hold"),
            ("publish/", organizer_views.PublishBoardView, "publish"),
            ("teams/", team_views.TaskTeamsView, "task-teams"),
            ("teams/<int:team_id>/request/", team_views.TeamRequestView, "task-team-request"),
            ("teams/<int:team_id>/approve/", team_views.TeamApproveView, "task-team-approve"),
            # A task's people and invitations (task_role_views).
            ("people/", task_role_views.TaskPeopleView, "task-people"),
            ("invitations/", task_role_views.TaskInvitationListView, "task-invitations"),
            ("invitations/mail/", task_role_views.TaskInvitationMailView, "task-invitations-mail"),
            (
                "invitations/<int:invitation_id>/",
                task_role_views.TaskInvitationDetailView,
                "task-invitation",
            ),
            ("annotators/<int:user_id>/", task_role_views.TaskAnnotatorView, "task-annotator"),
            ("organizers/<int:user_id>/", task_role_views.TaskOrganizerView, "task-organizer"),
            ("spend/", organizer_views.SpendView, "spend"),
            ("export/items/", organizer_views.VerifiedItemsExportView, "export-items"),
        ],
    ),
    path(
        "invitations/accept/",
        task_role_views.TaskInvitationAcceptView.as_view(),
        name="invitation-accept",
    ),
    *routes(
        "runs/<int:run_id>/",
        [
            ("", views.RunDetailView, "run-detail"),
            ("history/", board_views.RunHistoryView, "run-history"),
            ("release/", held_run_views.RunReleaseView, "run-release"),
            ("reject/", held_run_views.RunRejectView, "run-reject"),
            ("withdraw/", run_views.RunWithdrawView, "run-withdraw"),
            ("baseline/", run_views.RunBaselineView, "run-baseline"),
        ],
    ),
    path("token/", account_views.TokenView.as_view(), name="token"),
    path("token/rotate/", account_views.TokenRotateView.as_view(), name="token-rotate"),
    path("me/", account_views.MeView.as_view(), name="me"),
    path("me/notifications/", account_views.MailPreferencesView.as_view(), name="me-notifications"),
    path("teams/", team_views.TeamListView.as_view(), name="team-list"),
    path("teams/join/", team_views.TeamJoinView.as_view(), name="team-join"),
    *routes(
        "teams/<int:team_id>/",
        [
            ("", team_views.TeamDetailView, "team-detail"),
            ("invitations/", team_views.TeamInvitationView, "team-invitations"),
            ("invitations/mail/", team_views.TeamInvitationMailView, "team-invitations-mail"),
            (
                "invitations/<int:invitation_id>/",
                team_views.TeamInvitationDetailView,
                "team-invitation",
            ),
            ("members/<int:user_id>/", team_views.TeamMemberView, "team-member"),
            ("leave/", team_views.TeamLeaveView, "team-leave"),
        ],
    ),
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
