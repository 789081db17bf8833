"""Who may create tasks through the API. Organizer rights are checked by the views, by one
method: ``ApiView.organized_task`` (``task_for(..., role="organizer")``)."""

from __future__ import annotations

from rest_framework.permissions import SAFE_METHODS, BasePermission

from ..selectors import can_create_tasks


class CanCreateTasksOrReadOnly(BasePermission):
    """Anyone may list tasks; who may create one: ``leaderboard.selectors.can_create_tasks``."""

    message = "creating tasks needs staff status or the permission leaderboard.add_task"

    def has_permission(self, request, view) -> bool:
        return request.method in SAFE_METHODS or can_create_tasks(request.user)
