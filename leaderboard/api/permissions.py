"""Who may do what through the API (object permissions take a :class:`~leaderboard.models.Task`)."""

from __future__ import annotations

from rest_framework.permissions import SAFE_METHODS, BasePermission

from ..selectors import can_create_tasks, is_organizer


class CanCreateTasksOrReadOnly(BasePermission):
    """Anyone may list tasks; who may create one: ``leaderboard.selectors.can_create_tasks``."""

    message = "creating tasks needs staff status or the permission leaderboard.add_task"

    def has_permission(self, request, view) -> bool:
        return request.method in SAFE_METHODS or can_create_tasks(request.user)


class IsTaskOrganizer(BasePermission):
    """The organizers of the task (``leaderboard.selectors.is_organizer``)."""

    message = "only the organizers of this task may do this"

    def has_object_permission(self, request, view, obj) -> bool:
        if not is_organizer(task=obj, user=request.user):
            self.message = f"only the organizers of task {obj.slug!r} may do this"
            return False
        return True


class IsTaskOrganizerOrReadOnly(IsTaskOrganizer):
    def has_object_permission(self, request, view, obj) -> bool:
        return request.method in SAFE_METHODS or super().has_object_permission(request, view, obj)
