"""Server-rendered pages of the leaderboard app (mounted at the site root)."""

from django.urls import path

from . import views

urlpatterns = [
    path("", views.home, name="home"),
    # Before tasks/<slug>/: "new" is no task's slug (create_task refuses it).
    path("tasks/new/", views.new_task, name="task_new"),
    path("tasks/new/preview/", views.display_preview, name="display_preview"),
    path("tasks/new/page-preview/", views.page_text_preview, name="page_text_preview"),
    path("tasks/<slug:slug>/", views.board, name="task_board"),
    # The task page: overview, rules, terms (accepted by a team), data files (task_page.py).
    path("tasks/<slug:slug>/overview/", views.task_overview, name="task_overview"),
    path("tasks/<slug:slug>/terms/accept/", views.terms_accept, name="terms_accept"),
    path(
        "tasks/<slug:slug>/files/<int:file_id>/",
        views.task_file_download,
        name="task_file_download",
    ),
    # The organize pages' Task page section (a POST saves the page's text).
    path("tasks/<slug:slug>/organize/page/", views.organize_page_text, name="organize_page_text"),
    path("tasks/<slug:slug>/organize/files/", views.organize_file_add, name="organize_file_add"),
    path(
        "tasks/<slug:slug>/organize/files/<int:file_id>/",
        views.organize_file_change,
        name="organize_file_change",
    ),
    path(
        "tasks/<slug:slug>/organize/files/<int:file_id>/delete/",
        views.organize_file_delete,
        name="organize_file_delete",
    ),
    path("tasks/<slug:slug>/snapshots/", views.snapshots, name="task_snapshots"),
    path(
        "tasks/<slug:slug>/snapshots/<int:version>/", views.snapshot_detail, name="snapshot_detail"
    ),
    path("tasks/<slug:slug>/snapshots/<int:version>.csv", views.snapshot_csv, name="snapshot_csv"),
    path(
        "tasks/<slug:slug>/snapshots/<int:version>.json", views.snapshot_json, name="snapshot_json"
    ),
    path("tasks/<slug:slug>/board/hold/", views.hold, name="board_hold"),
    path("tasks/<slug:slug>/board/publish/", views.publish, name="board_publish"),
    # A task's organize pages, one per section (views/organize_sections.py); the overview's
    # POST is the whole settings form, as when the organize page was one page.
    path("tasks/<slug:slug>/organize/", views.organize, name="task_organize"),
    path("tasks/<slug:slug>/organize/settings/", views.organize_settings, name="organize_settings"),
    path("tasks/<slug:slug>/organize/phases/", views.organize_phases, name="organize_phases"),
    path(
        "tasks/<slug:slug>/organize/data/",
        views.organize_section,
        {"section": "data"},
        name="organize_data",
    ),
    path(
        "tasks/<slug:slug>/organize/people/",
        views.organize_section,
        {"section": "people"},
        name="organize_people",
    ),
    path(
        "tasks/<slug:slug>/organize/board/",
        views.organize_section,
        {"section": "board"},
        name="organize_board",
    ),
    path("tasks/<slug:slug>/organize/state/", views.set_state_page, name="organize_state"),
    path(
        "tasks/<slug:slug>/organize/reference/",
        views.upload_reference_page,
        name="organize_reference",
    ),
    path(
        "tasks/<slug:slug>/organize/reference-candidates/",
        views.upload_candidates_page,
        name="organize_reference_candidates",
    ),
    path("tasks/<slug:slug>/organize/pool/", views.upload_pool_page, name="organize_pool"),
    path(
        "tasks/<slug:slug>/organize/verified-items.csv",
        views.verified_items_csv,
        name="verified_items_csv",
    ),
    # A run held for the organizers (its keys look like junk): release or reject it.
    path(
        "tasks/<slug:slug>/organize/runs/<int:run_id>/release/",
        views.release_held_run_page,
        name="held_run_release",
    ),
    path(
        "tasks/<slug:slug>/organize/runs/<int:run_id>/reject/",
        views.reject_held_run_page,
        name="held_run_reject",
    ),
    path("tasks/<slug:slug>/submit/", views.submit, name="submit_run"),
    path("tasks/<slug:slug>/runs/", views.task_runs, name="task_runs"),
    path("tasks/<slug:slug>/teams/<int:team_id>/request/", views.team_request, name="team_request"),
    path("tasks/<slug:slug>/teams/<int:team_id>/approve/", views.team_approve, name="team_approve"),
    # A task's people: invitations by link, removing annotators and organizers (task_roles.py).
    path("tasks/<slug:slug>/organize/invite/", views.task_invite, name="task_invite"),
    path(
        "tasks/<slug:slug>/organize/invite/mail/", views.task_invite_mail, name="task_invite_mail"
    ),
    path(
        "tasks/<slug:slug>/organize/invitations/<int:invitation_id>/revoke/",
        views.task_invitation_revoke,
        name="task_invitation_revoke",
    ),
    path(
        "tasks/<slug:slug>/organize/annotators/<int:user_id>/remove/",
        views.task_annotator_remove,
        name="task_annotator_remove",
    ),
    path(
        "tasks/<slug:slug>/organize/organizers/<int:user_id>/remove/",
        views.task_organizer_remove,
        name="task_organizer_remove",
    ),
    path("invitations/<str:key>/", views.task_join, name="task_join"),
    path("runs/<int:run_id>/", views.run_detail, name="run_detail"),
    path("runs/<int:run_id>/withdraw/", views.run_withdraw, name="run_withdraw"),
    path("runs/<int:run_id>/baseline/", views.run_baseline, name="run_baseline"),
    path("teams/", views.teams, name="teams"),
    path("teams/<int:team_id>/", views.team_detail, name="team_detail"),
    path("teams/<int:team_id>/invite/", views.team_invite, name="team_invite"),
    path("teams/<int:team_id>/invite/mail/", views.team_invite_mail, name="team_invite_mail"),
    path("teams/<int:team_id>/leave/", views.team_leave, name="team_leave"),
    path(
        "teams/<int:team_id>/invitations/<int:invitation_id>/revoke/",
        views.team_invitation_revoke,
        name="team_invitation_revoke",
    ),
    path(
        "teams/<int:team_id>/members/<int:user_id>/remove/",
        views.team_member_remove,
        name="team_member_remove",
    ),
    path("teams/join/<str:key>/", views.team_join, name="team_join"),
    # Next to allauth's account pages (config/urls.py), which have no such path.
    path("accounts/notifications/", views.mail_settings, name="mail_settings"),
]
