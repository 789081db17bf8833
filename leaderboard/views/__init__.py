"""Server-rendered pages: the public board and snapshots, participant pages, organizer pages.

Each view validates its input, calls one service or page selector, and renders. Results come from
stored snapshots and estimates only: nothing here computes statistics.
"""

from .board import (
    board,
    hold,
    home,
    publish,
    snapshot_csv,
    snapshot_detail,
    snapshot_json,
    snapshots,
)
from .held_runs import reject_held_run_page, release_held_run_page
from .mail_settings import mail_settings
from .organize import (
    display_preview,
    new_task,
    organize,
    organize_phases,
    organize_section,
    organize_settings,
    upload_pool_page,
    upload_reference_page,
    verified_items_csv,
)
from .readiness import set_state_page
from .reference_sample import upload_candidates_page
from .runs import run_baseline, run_detail, run_withdraw, submit, task_runs
from .task_page import (
    organize_file_add,
    organize_file_change,
    organize_file_delete,
    organize_page_text,
    page_text_preview,
    task_file_download,
    task_overview,
    terms_accept,
)
from .task_roles import (
    task_annotator_remove,
    task_invitation_revoke,
    task_invite,
    task_invite_mail,
    task_join,
    task_organizer_remove,
)
from .teams import (
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
)

__all__ = [
    "board",
    "display_preview",
    "hold",
    "home",
    "mail_settings",
    "new_task",
    "organize",
    "organize_file_add",
    "organize_file_change",
    "organize_file_delete",
    "organize_page_text",
    "organize_phases",
    "organize_section",
    "organize_settings",
    "page_text_preview",
    "publish",
    "reject_held_run_page",
    "release_held_run_page",
    "run_baseline",
    "run_detail",
    "run_withdraw",
    "set_state_page",
    "snapshot_csv",
    "snapshot_detail",
    "snapshot_json",
    "snapshots",
    "submit",
    "task_annotator_remove",
    "task_file_download",
    "task_invitation_revoke",
    "task_invite",
    "task_invite_mail",
    "task_join",
    "task_organizer_remove",
    "task_overview",
    "task_runs",
    "team_approve",
    "team_detail",
    "team_invitation_revoke",
    "team_invite",
    "team_invite_mail",
    "team_join",
    "team_leave",
    "team_member_remove",
    "team_request",
    "teams",
    "terms_accept",
    "upload_candidates_page",
    "upload_pool_page",
    "upload_reference_page",
    "verified_items_csv",
]
