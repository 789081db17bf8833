"""Writes of the pipeline: plan a run's next round, estimate a task, recover stuck work."""

from .estimation import estimate_task
from .planning import plan_run
from .watchdog import watchdog

__all__ = ["estimate_task", "plan_run", "watchdog"]
