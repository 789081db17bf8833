"""Server-rendered pages of the leaderboard app (mounted at the site root), one table of
``(route, view, name)`` rows for each prefix the routes share."""

from django.urls import path

from site_platform.urls import routes

from . import views

# Under tasks/new/, listed before tasks/<slug>/: "new" is no task's slug (create_task refuses it).
NEW_TASK_ROUTES = [
    ("", views.new_task, "task_new"),
    ("preview/", views.display_preview, "display_preview"),
    ("page-preview/", views.page_text_preview, "page_text_preview"),
]

# Under tasks/<slug>/.
TASK_ROUTES = [
    ("", views.board, "task_board"),
    # The task page: overview, rules, terms (accepted by a team), data files (task_page.py).
    ("overview/", views.task_overview, "task_overview"),
    ("terms/accept/", views.terms_accept, "terms_accept"),
    ("files/<int:file_id>/", views.task_file_download, "task_file_download"),
    ("snapshots/", views.snapshots, "task_snapshots"),
    ("snapshots/<int:version>/", views.snapshot_detail, "snapshot_detail"),
    ("snapshots/<int:version>.csv", views.snapshot_csv, "snapshot_csv"),
    ("snapshots/<int:version>.json", views.snapshot_json, "snapshot_json"),
    ("board/hold/", views.hold, "board_hold"),
    ("board/publish/", views.publish, "board_publish"),
    ("submit/", views.submit, "submit_run"),
    ("runs/", views.task_runs, "task_runs"),
    ("teams/<int:team_id>/request/", views.team_request, "team_request"),
    ("teams/<int:team_id>/approve/", views.team_approve, "team_approve"),
]

# Under tasks/<slug>/organize/: a task's organize pages, one per section
# (views/organize_sections.py; the overview's POST is the whole settings form, as when the
# organize page was one page), and what their forms post to.
ORGANIZE_ROUTES = [
    ("", views.organize, "task_organize"),
    ("settings/", views.organize_settings, "organize_settings"),
    ("phases/", views.organize_phases, "organize_phases"),
    ("state/", views.set_state_page, "organize_state"),
    # The Task page section (a POST saves the page's text) and its data files.
    ("page/", views.organize_page_text, "organize_page_text"),
    ("files/", views.organize_file_add, "organize_file_add"),
    ("files/<int:file_id>/", views.organize_file_change, "organize_file_change"),
    ("files/<int:file_id>/delete/", views.organize_file_delete, "organize_file_delete"),
    # The Data section's uploads and export.
    ("reference/", views.upload_reference_page, "organize_reference"),
    ("reference-candidates/", views.upload_candidates_page, "organize_reference_candidates"),
    ("pool/", views.upload_pool_page, "organize_pool"),
    ("verified-items.csv", views.verified_items_csv, "verified_items_csv"),
    # A run held for the organizers (its keys look like junk): release or reject it.
    ("runs/<int:run_id>/release/", views.release_held_run_page, "held_run_release"),
    ("runs/<int:run_id>/reject/", views.reject_held_run_page, "held_run_reject"),
    # A task's people: invitations by link, removing annotators and organizers (task_roles.py).
    ("invite/", views.task_invite, "task_invite"),
    ("invite/mail/", views.task_invite_mail, "task_invite_mail"),
    ("annotators/<int:user_id>/remove/", views.task_annotator_remove, "task_annotator_remove"),
    ("organizers/<int:user_id>/remove/", views.task_organizer_remove, "task_organizer_remove"),
    (
        "invitations/<int:invitation_id>/revoke/",
        views.task_invitation_revoke,
        "task_invitation_revoke",
    ),
]

# Under runs/<id>/.
RUN_ROUTES = [
    ("", views.run_detail, "run_detail"),
    ("withdraw/", views.run_withdraw, "run_withdraw"),
    ("baseline/", views.run_baseline, "run_baseline"),
]

# Under teams/<id>/.
TEAM_ROUTES = [
    ("", views.team_detail, "team_detail"),
    ("invite/", views.team_invite, "team_invite"),
    (
        "invitations/<int:invitation_id>/revoke/",
        views.team_invitation_revoke,
        "team_invitation_revoke",
    ),
    ("invite/mail/", views.team_invite_mail, "team_invite_mail"),
    ("leave/", views.team_leave, "team_leave"),
    ("members/<int:user_id>/remove/", views.team_member_remove, "team_member_remove"),
]

# The rest, from the site's root.
OTHER_ROUTES = [
    ("", views.home, "home"),
    ("invitations/<str:key>/", views.task_join, "task_join"),
    ("teams/", views.teams, "teams"),
    ("teams/join/<str:key>/", views.team_join, "team_join"),
    # Next to allauth's account pages (config/urls.py), which have no such path.
    ("accounts/notifications/", views.mail_settings, "mail_settings"),
]

urlpatterns = [
    *routes("tasks/new/", NEW_TASK_ROUTES),
    *routes("tasks/<slug:slug>/", TASK_ROUTES),
    *routes("tasks/<slug:slug>/organize/", ORGANIZE_ROUTES),
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
    *routes("runs/<int:run_id>/", RUN_ROUTES),
    *routes("teams/<int:team_id>/", TEAM_ROUTES),
    *routes("", OTHER_ROUTES),
]
