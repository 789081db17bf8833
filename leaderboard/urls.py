"""Server-rendered pages of the leaderboard app (mounted at the site root), one table of
``(route, view, name)`` rows for each prefix the routes share."""

from django.urls import path

from site_platform.urls import routes

from .views import (
    board,
    display_preview,
    hold,
    home,
    mail_settings,
    new_task,
    organize,
    organize_file_add,
    organize_file_change,
    organize_file_delete,
    organize_page_text,
    organize_phases,
    organize_section,
    organize_settings,
    page_text_preview,
    publish,
    reject_held_run_page,
    release_held_run_page,
    run_baseline,
    run_detail,
    run_withdraw,
    set_state_page,
    snapshot_csv,
    snapshot_detail,
    snapshot_json,
    snapshots,
    submit,
    task_annotator_remove,
    task_file_download,
    task_invitation_revoke,
    task_invite,
    task_invite_mail,
    task_join,
    task_organizer_remove,
    task_overview,
    task_runs,
    team_approve,
    team_detail,
    team_invitation_revoke,
    team_invite,
    team_invite_mail,
    team_join,
    team_leave,
    team_member_remove,
    team_request,
    teams,
    terms_accept,
    upload_candidates_page,
    upload_pool_page,
    upload_reference_page,
    verified_items_csv,
)

# Under tasks/new/, listed before tasks/<slug>/: "new" is no task's slug (create_task refuses it).
NEW_TASK_ROUTES = [
    ("", new_task, "task_new"),
    ("preview/", display_preview, "display_preview"),
    ("page-preview/", page_text_preview, "page_text_preview"),
]

# Under tasks/<slug>/.
TASK_ROUTES = [
    ("", board, "task_board"),
    # The task page: overview, rules, terms (accepted by a team), data files (task_page.py).
    ("overview/", task_overview, "task_overview"),
    ("terms/accept/", terms_accept, "terms_accept"),
    ("files/<int:file_id>/", task_file_download, "task_file_download"),
    ("snapshots/", snapshots, "task_snapshots"),
    ("snapshots/<int:version>/", snapshot_detail, "snapshot_detail"),
    ("snapshots/<int:version>.csv", snapshot_csv, "snapshot_csv"),
    ("snapshots/<int:version>.json", snapshot_json, "snapshot_json"),
    ("board/hold/", hold, "board_hold"),
    ("board/publish/", publish, "board_publish"),
    ("submit/", submit, "submit_run"),
    ("runs/", task_runs, "task_runs"),
    ("teams/<int:team_id>/request/", team_request, "team_request"),
    ("teams/<int:team_id>/approve/", team_approve, "team_approve"),
]

# Under tasks/<slug>/organize/: a task's organize pages, one per section
# (views/organize_sections.py; the overview's POST is the whole settings form, as when the
# organize page was one page), and what their forms post to.
ORGANIZE_ROUTES = [
    ("", organize, "task_organize"),
    ("settings/", organize_settings, "organize_settings"),
    ("phases/", organize_phases, "organize_phases"),
    ("state/", set_state_page, "organize_state"),
    # The Task page section (a POST saves the page's text) and its data files.
    ("page/", organize_page_text, "organize_page_text"),
    ("files/", organize_file_add, "organize_file_add"),
    ("files/<int:file_id>/", organize_file_change, "organize_file_change"),
    ("files/<int:file_id>/delete/", organize_file_delete, "organize_file_delete"),
    # The Data section's uploads and export.
    ("reference/", upload_reference_page, "organize_reference"),
    ("reference-candidates/", upload_candidates_page, "organize_reference_candidates"),
    ("pool/", upload_pool_page, "organize_pool"),
    ("verified-items.csv", verified_items_csv, "verified_items_csv"),
    # A run held for the organizers (its keys look like junk): release or reject it.
    ("runs/<int:run_id>/release/", release_held_run_page, "held_run_release"),
    ("runs/<int:run_id>/reject/", reject_held_run_page, "held_run_reject"),
    # A task's people: invitations by link, removing annotators and organizers (task_roles.py).
    ("invite/", task_invite, "task_invite"),
    ("invite/mail/", task_invite_mail, "task_invite_mail"),
    ("invitations/<int:invitation_id>/revoke/", task_invitation_revoke, "task_invitation_revoke"),
    ("annotators/<int:user_id>/remove/", task_annotator_remove, "task_annotator_remove"),
    ("organizers/<int:user_id>/remove/", task_organizer_remove, "task_organizer_remove"),
]

# Under runs/<id>/.
RUN_ROUTES = [
    ("", run_detail, "run_detail"),
    ("withdraw/", run_withdraw, "run_withdraw"),
    ("baseline/", run_baseline, "run_baseline"),
]

# Under teams/<id>/.
TEAM_ROUTES = [
    ("", team_detail, "team_detail"),
    ("invite/", team_invite, "team_invite"),
    ("invite/mail/", team_invite_mail, "team_invite_mail"),
    ("leave/", team_leave, "team_leave"),
    ("invitations/<int:invitation_id>/revoke/", team_invitation_revoke, "team_invitation_revoke"),
    ("members/<int:user_id>/remove/", team_member_remove, "team_member_remove"),
]

# The rest, from the site's root.
OTHER_ROUTES = [
    ("", home, "home"),
    ("invitations/<str:key>/", task_join, "task_join"),
    ("teams/", teams, "teams"),
    ("teams/join/<str:key>/", team_join, "team_join"),
    # Next to allauth's account pages (config/urls.py), which have no such path.
    ("accounts/notifications/", mail_settings, "mail_settings"),
]

urlpatterns = [
    *routes("tasks/new/", NEW_TASK_ROUTES),
    *routes("tasks/<slug:slug>/", TASK_ROUTES),
    *routes("tasks/<slug:slug>/organize/", ORGANIZE_ROUTES),
    # The data, people and board sections share one view.
    *(
        path(
            f"tasks/<slug:slug>/organize/{section}/",
            organize_section,
            {"section": section},
            name=f"organize_{section}",
        )
        for section in ("data", "people", "board")
    ),
    *routes("runs/<int:run_id>/", RUN_ROUTES),
    *routes("teams/<int:team_id>/", TEAM_ROUTES),
    *routes("", OTHER_ROUTES),
]
