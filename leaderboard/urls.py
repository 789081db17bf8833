"""Server-rendered pages of the leaderboard app (mounted at the site root)."""

from django.urls import path

from site_platform.urls import routes

from . import views

urlpatterns = [
    path("", views.home, name="home"),
    # Before tasks/<slug>/: "new" is no task's slug (create_task refuses it).
    *routes(
        "tasks/new/",
        [
            ("", views.new_task, "task_new"),
            ("preview/", views.display_preview, "display_preview"),
            ("page-preview/", views.page_text_preview, "page_text_preview"),
        ],
    ),
    *routes(
        "tasks/<slug:slug>/",
        [
            ("", views.board, "task_board"),
            # The task page: overview, rules, terms (accepted by a team), data files
            # (task_page.py).
            ("overview/", views.task_overview, "task_overview"),
            ("terms/accept/", views.terms_accept, "terms_accept"),
            ("files/<int:file_id>/", views.task_file_download, "task_file_download"),
            # The organize pages' Task page section (a POST saves the page's text).
            ("organize/page/", views.organize_page_text, "organize_page_text"),
            ("organize/files/", views.organize_file_add, "organize_file_add"),
            ("organize/files/<int:file_id>/", views.organize_file_change, "organize_file_change"),
            (
                "organize/files/<int:file_id>/delete/",
                views.organize_file_delete,
                "organize_file_delete",
            ),
            ("snapshots/", views.snapshots, "task_snapshots"),
            ("snapshots/<int:version>/", views.snapshot_detail, "snapshot_detail"),
            ("snapshots/<int:version>.csv", views.snapshot_csv, "snapshot_csv"),
            ("snapshots/<int:version>.json", views.snapshot_json, "snapshot_json"),
            ("board/hold/", views.hold, "board_hold"),
            ("board/publish/", views.publish, "board_publish"),
            # A task's organize pages, one per section (views/organize_sections.py); the
            # overview's POST is the whole settings form, as when the organize page was one page.
            ("organize/", views.organize, "task_organize"),
            ("organize/settings/", views.organize_settings, "organize_settings"),
            ("organize/phases/", views.organize_phases, "organize_phases"),
            ("organize/state/", views.set_state_page, "organize_state"),
            ("organize/reference/", views.upload_reference_page, "organize_reference"),
            (
                "organize/reference-candidates/",
                views.upload_candidates_page,
                "organize_reference_candidates",
            ),
            ("organize/pool/", views.upload_pool_page, "organize_pool"),
            ("organize/verified-items.csv", views.verified_items_csv, "verified_items_csv"),
            # A run held for the organizers (its keys look like junk): release or reject it.
            (
                "organize/runs/<int:run_id>/release/",
                views.release_held_run_page,
                "held_run_release",
            ),
            ("organize/runs/<int:run_id>/reject/", views.reject_held_run_page, "held_run_reject"),
            ("submit/", views.submit, "submit_run"),
            ("runs/", views.task_runs, "task_runs"),
            ("teams/<int:team_id>/request/", views.team_request, "team_request"),
            ("teams/<int:team_id>/approve/", views.team_approve, "team_approve"),
            # A task's people: invitations by link, removing annotators and organizers
            # (task_roles.py).
            ("organize/invite/", views.task_invite, "task_invite"),
            ("organize/invite/mail/", views.task_invite_mail, "task_invite_mail"),
            (
                "organize/invitations/<int:invitation_id>/revoke/",
                views.task_invitation_revoke,
                "task_invitation_revoke",
            ),
            (
                "organize/annotators/<int:user_id>/remove/",
                views.task_annotator_remove,
                "task_annotator_remove",
            ),
            (
                "organize/organizers/<int:user_id>/remove/",
                views.task_organizer_remove,
                "task_organizer_remove",
            ),
        ],
    ),
    # The data, people and board sections share one view.
    *(
        path(
            f"tasks/<slug:slug>/organize/{section}/",
            views.organize_section,
            {"section": section},
            name=f"organize_{section}",
        )
        for section in ("data", "people", "board")
    ),
    path("invitations/<str:key>/", views.task_join, name="task_join"),
    *routes(
        "runs/<int:run_id>/",
        [
            ("", views.run_detail, "run_detail"),
            ("withdraw/", views.run_withdraw, "run_withdraw"),
            ("baseline/", views.run_baseline, "run_baseline"),
        ],
    ),
    path("teams/", views.teams, name="teams"),
    *routes(
        "teams/<int:team_id>/",
        [
            ("", views.team_detail, "team_detail"),
            ("invite/", views.team_invite, "team_invite"),
            ("invite/mail/", views.team_invite_mail, "team_invite_mail"),
            ("leave/", views.team_leave, "team_leave"),
            (
                "invitations/<int:invitation_id>/revoke/",
                views.team_invitation_revoke,
                "team_invitation_revoke",
            ),
            ("members/<int:user_id>/remove/", views.team_member_remove, "team_member_remove"),
        ],
    ),
    path("teams/join/<str:key>/", views.team_join, name="team_join"),
    # Next to allauth's account pages (config/urls.py), which have no such path.
    path("accounts/notifications/", views.mail_settings, name="mail_settings"),
]
