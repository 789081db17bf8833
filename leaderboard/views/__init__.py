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
from .organize import organize, verified_items_csv
from .runs import run_detail, submit, task_runs
from .teams import (
    team_approve,
    team_detail,
    team_invite,
    team_join,
    team_leave,
    team_request,
    teams,
)

__all__ = [
    "board",
    "hold",
    "home",
    "organize",
    "publish",
    "run_detail",
    "snapshot_csv",
    "snapshot_detail",
    "snapshot_json",
    "snapshots",
    "submit",
    "task_runs",
    "team_approve",
    "team_detail",
    "team_invite",
    "team_join",
    "team_leave",
    "team_request",
    "teams",
    "verified_items_csv",
]
