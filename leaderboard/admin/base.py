"""The organizer-scoped admin classes: a model admin that shows only the rows of the tasks the
user organizes, and read-only records and inlines for what the pipeline writes."""

from __future__ import annotations

from django.contrib import admin

from ..selectors import organized_tasks


class OrganizerScopedAdmin(admin.ModelAdmin):
    """Lists only rows of tasks the user organizes (``selectors.organized_tasks``)."""

    task_path = "task"

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .filter(**{f"{self.task_path}__in": organized_tasks(request.user)})
        )


class RecordAdmin(OrganizerScopedAdmin):
    """Rows only the product writes (through validation, the pipeline or the annotator pages):
    the admin shows them, and changes what its fields allow, but never adds one."""

    def has_add_permission(self, request, obj=None):
        return False


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
