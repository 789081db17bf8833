"""Presenters: what the selectors (:mod:`leaderboard.selectors`) selected, shaped for the pages'
templates, from stored rows only. Who sees what is decided there, never here."""

from .board import (
    Board,
    BoardRow,
    HoldStatus,
    board_for,
    hold_status,
    parse_sort,
    safe_link,
    snapshot_board,
    snapshot_list,
)
from .cells import METRIC_LABELS, MetricCell, RankInterval
from .common import TaskPhases, task_list, task_phases
from .organize import BudgetSummary, budget_summary
from .runs import RunListRow, RunPage, SubmitLimits, my_runs, run_page, submit_limits

__all__ = [
    "METRIC_LABELS",
    "Board",
    "BoardRow",
    "BudgetSummary",
    "HoldStatus",
    "MetricCell",
    "RankInterval",
    "RunListRow",
    "RunPage",
    "SubmitLimits",
    "TaskPhases",
    "board_for",
    "budget_summary",
    "hold_status",
    "my_runs",
    "parse_sort",
    "run_page",
    "safe_link",
    "snapshot_board",
    "snapshot_list",
    "submit_limits",
    "task_list",
    "task_phases",
]
