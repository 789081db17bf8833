"""Reads behind the server-rendered pages, shaped for templates, from stored rows only."""

from .board import (
    METRIC_LABELS,
    METRICS,
    Board,
    BoardRow,
    HoldStatus,
    MetricCell,
    RankInterval,
    board_for,
    hold_status,
    parse_sort,
    safe_link,
    snapshot_board,
    snapshot_for_download,
    snapshot_list,
)
from .common import (
    annotatable_task,
    is_annotator,
    is_organizer,
    task_list,
    tasks_annotated_by,
    teams_of,
    visible_task,
)
from .organize import BudgetSummary, budget_summary
from .runs import RunListRow, RunPage, TeamQuota, my_runs, run_for_viewer, run_page

__all__ = [
    "METRICS", "METRIC_LABELS", "Board", "BoardRow", "BudgetSummary", "HoldStatus", "MetricCell",
    "RankInterval", "RunListRow", "RunPage", "TeamQuota", "annotatable_task", "board_for",
    "budget_summary", "hold_status", "is_annotator", "is_organizer", "my_runs", "parse_sort",
    "run_for_viewer", "run_page", "safe_link", "snapshot_board", "snapshot_for_download",
    "snapshot_list", "task_list", "tasks_annotated_by", "teams_of", "visible_task",
]
