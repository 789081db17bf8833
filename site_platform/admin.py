"""Admin bases of every app: what only superusers see, rows shown but never added or changed
here, read-only inlines, list columns of annotated values, and packed arrays shown by their
size."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.db.models.functions import Length


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


class PackedSizes:
    """A model admin mixin for binary fields that hold packed arrays (``packed``): never loaded
    nor shown, each is a column of its size in bytes, ``<field>_size``, to name in
    ``list_display`` and ``readonly_fields``."""

    packed: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.exclude = cls.packed  # type: ignore[attr-defined]  # a ModelAdmin's, in the subclass
        for field in cls.packed:
            setattr(cls, f"{field}_size", annotated_column(f"_{field}_bytes", f"{field} (bytes)"))

    def get_queryset(self, request):
        rows = super().get_queryset(request)  # type: ignore[misc]
        sizes = {f"_{field}_bytes": Length(field) for field in self.packed}
        return rows.defer(*self.packed).annotate(**sizes)
