"""The task list of the home page."""

from __future__ import annotations

from django.db.models import Count, QuerySet

from .. import selectors
from ..models import Task


def task_list(user) -> QuerySet[Task]:
    """Tasks the user may see, with their number of runs (``n_runs``), newest first."""
    return (
        selectors.visible_tasks(user)
        .annotate(n_runs=Count("runs", distinct=True))
        .order_by("-created_at")
    )
