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

from .account_views import MailPreferencesView, MeView, TokenRotateView, TokenView
from .board_views import BoardView, RunHistoryView, SnapshotDetailView, SnapshotListView
from .held_run_views import RunRejectView, RunReleaseView
from .organizer_views import (
    HoldBoardView,
    PublishBoardView,
    QuotaView,
    ReadinessView,
    SpendView,
    VerifiedItemsExportView,
)
from .pool_views import TaskPoolView
from .reference_sample_views import ReferenceCandidatesView, ReferenceSampleView
from .run_views import RunBaselineView, RunWithdrawView
from .task_page_views import (
    TaskFileDetailView,
    TaskFileDownloadView,
    TaskFileListView,
    TaskTermsView,
    TermsAcceptancesView,
)
from .task_role_views import (
    TaskAnnotatorView,
    TaskInvitationAcceptView,
    TaskInvitationDetailView,
    TaskInvitationListView,
    TaskInvitationMailView,
    TaskOrganizerView,
    TaskPeopleView,
)
from .team_views import (
    TaskTeamsView,
    TeamApproveView,
    TeamDetailView,
    TeamInvitationDetailView,
    TeamInvitationMailView,
    TeamInvitationView,
    TeamJoinView,
    TeamLeaveView,
    TeamListView,
    TeamMemberView,
    TeamRequestView,
)
from .upload_views import TaskReferenceView, TaskUploadsView, TaskUploadView
from .views import RunDetailView, TaskDetailView, TaskListView, TaskRunsView

app_name = "api"

# Under tasks/<slug>/.
TASK_ROUTES = [
    ("", TaskDetailView, "task-detail"),
    ("runs/", TaskRunsView, "task-runs"),
    ("reference/", TaskReferenceView, "task-reference"),
    ("reference-sample/", ReferenceSampleView, "task-reference-sample"),
    ("reference-sample/candidates/", ReferenceCandidatesView, "task-reference-sample-candidates"),
    ("pool/", TaskPoolView, "task-pool"),
    ("uploads/", TaskUploadsView, "task-uploads"),
    ("uploads/<int:upload_id>/", TaskUploadView, "task-upload"),
    # The task page: its terms and data files (task_page_views).
    ("terms/", TaskTermsView, "task-terms"),
    ("terms/acceptances/", TermsAcceptancesView, "task-terms-acceptances"),
    ("files/", TaskFileListView, "task-files"),
    ("files/<int:file_id>/", TaskFileDetailView, "task-file"),
    ("files/<int:file_id>/download/", TaskFileDownloadView, "task-file-download"),
    ("board/", BoardView, "board"),
    ("snapshots/", SnapshotListView, "snapshot-list"),
    ("snapshots/<int:version>/", SnapshotDetailView, "snapshot-detail"),
    ("quota/", QuotaView, "quota"),
    ("readiness/", ReadinessView, "task-readiness"),
    ("hold/", HoldBoardView, "hold"),
    ("publish/", PublishBoardView, "publish"),
    ("spend/", SpendView, "spend"),
    ("export/items/", VerifiedItemsExportView, "export-items"),
    ("teams/", TaskTeamsView, "task-teams"),
    ("teams/<int:team_id>/request/", TeamRequestView, "task-team-request"),
    ("teams/<int:team_id>/approve/", TeamApproveView, "task-team-approve"),
    # A task's people and invitations (task_role_views).
    ("people/", TaskPeopleView, "task-people"),
    ("invitations/", TaskInvitationListView, "task-invitations"),
    ("invitations/mail/", TaskInvitationMailView, "task-invitations-mail"),
    ("invitations/<int:invitation_id>/", TaskInvitationDetailView, "task-invitation"),
    ("annotators/<int:user_id>/", TaskAnnotatorView, "task-annotator"),
    ("organizers/<int:user_id>/", TaskOrganizerView, "task-organizer"),
]

# Under runs/<id>/.
RUN_ROUTES = [
    ("", RunDetailView, "run-detail"),
    ("history/", RunHistoryView, "run-history"),
    ("release/", RunReleaseView, "run-release"),
    ("reject/", RunRejectView, "run-reject"),
    ("withdraw/", RunWithdrawView, "run-withdraw"),
    ("baseline/", RunBaselineView, "run-baseline"),
]

# Under teams/<id>/.
TEAM_ROUTES = [
    ("", TeamDetailView, "team-detail"),
    ("invitations/", TeamInvitationView, "team-invitations"),
    ("invitations/mail/", TeamInvitationMailView, "team-invitations-mail"),
    ("invitations/<int:invitation_id>/", TeamInvitationDetailView, "team-invitation"),
    ("members/<int:user_id>/", TeamMemberView, "team-member"),
    ("leave/", TeamLeaveView, "team-leave"),
]

# The rest, from the API's root.
OTHER_ROUTES = [
    ("tasks/", TaskListView, "task-list"),
    ("invitations/accept/", TaskInvitationAcceptView, "invitation-accept"),
    ("token/", TokenView, "token"),
    ("token/rotate/", TokenRotateView, "token-rotate"),
    ("me/", MeView, "me"),
    ("me/notifications/", MailPreferencesView, "me-notifications"),
    ("teams/", TeamListView, "team-list"),
    ("teams/join/", TeamJoinView, "team-join"),
]

urlpatterns = [
    *routes("tasks/<slug:slug>/", TASK_ROUTES),
    *routes("runs/<int:run_id>/", RUN_ROUTES),
    *routes("teams/<int:team_id>/", TEAM_ROUTES),
    *routes("", OTHER_ROUTES),
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
