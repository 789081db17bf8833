"""The organizer-scoped admin classes: a model admin that shows only the rows of the tasks the
user organizes (and offers only those tasks in its filters), and read-only records for what the
pipeline writes. The generic bases (superusers only, view only, read-only inlines) are the
platform's, ``site_platform.admin``."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.utils import get_fields_from_path

from ..models import Task
from ..selectors import organized_tasks


class OrganizedTaskFilter(admin.RelatedFieldListFilter):
    """A filter by task offering only the tasks the user organizes: Django's own lists every
    task, which told a staff organizer other organizers' slugs, drafts included."""

    def field_choices(self, field, request, model_admin):
        return field.get_choices(
            include_blank=False,
            limit_choices_to={"pk__in": organized_tasks(request.user)},
            ordering=self.field_admin_ordering(field, request, model_admin),
        )


def scoped_list_filters(model, list_filter) -> list:
    """``list_filter`` with every filter on a relation scoped like the rows: a task filter offers
    the tasks the user organizes, any other relation only the objects the admin's own rows (its
    scoped ``get_queryset``) refer to. Filters given with their own class are kept as they are."""
    scoped: list = []
    for spec in list_filter:
        field = get_fields_from_path(model, spec)[-1] if isinstance(spec, str) else None
        if field is None or not field.is_relation:
            scoped.append(spec)
        elif field.related_model is Task:
            scoped.append((spec, OrganizedTaskFilter))
        else:
            scoped.append((spec, admin.RelatedOnlyFieldListFilter))
    return scoped


class OrganizerScopedAdmin(admin.ModelAdmin):
    """Lists only rows of tasks the user organizes (``selectors.organized_tasks``), and offers
    only those tasks in its filters (``scoped_list_filters``)."""

    task_path = "task"

    def get_list_filter(self, request):
        return scoped_list_filters(self.model, super().get_list_filter(request))

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
