"""Admin bases of every app: what only superusers see, rows shown but never added or changed
here, read-only inlines, and list columns of annotated values."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin


class SuperusersOnly:
    """A model admin mixin for what is no organizer's business (who holds an API token, who was
    mailed, who invited whom): staff who are not superusers neither see it in the admin's index
    nor open its pages (403), and its rows are none for them should a page be reached anyway."""

    def has_module_permission(self, request):
        return request.user.is_superuser

    def has_view_permission(self, request, obj=None):
        return request.user.is_superuser

    def has_change_permission(self, request, obj=None):
        return request.user.is_superuser and super().has_change_permission(request, obj)  # type: ignore[misc]

    def has_delete_permission(self, request, obj=None):
        return request.user.is_superuser and super().has_delete_permission(request, obj)  # type: ignore[misc]

    def get_queryset(self, request):
        rows = super().get_queryset(request)  # type: ignore[misc]
        return rows if request.user.is_superuser else rows.none()


class ViewOnly:
    """A model admin mixin: rows made elsewhere (by their users, on the pages, through the API)
    are shown, never added or changed here; deleting one, where allowed, revokes it."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class ReadOnlyInline(admin.TabularInline):
    """Rows shown under their parent as they were recorded: none added, changed or deleted."""

    extra = 0
    can_delete = False

    def get_readonly_fields(self, request, obj=None):
        return self.fields

    def has_add_permission(self, request, obj=None):
        return False


def annotated_column(annotation: str, description: str) -> Callable[[Any, Any], Any]:
    """A list column showing the value the admin's queryset annotates each row with, and
    sorting by it: ``member_count = annotated_column("_members", "members")``."""

    @admin.display(description=description, ordering=annotation)
    def column(model_admin: Any, obj: Any) -> Any:
        return getattr(obj, annotation)

    return column
