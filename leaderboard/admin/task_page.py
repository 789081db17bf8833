"""Admin for what a task's page records: terms acceptances, data files and organizers' uploads,
shown read-only (files are added, replaced and deleted on the organize page or through the API,
which keep the stored content in step; an acceptance is a record of what a team agreed to; an
upload's state is the worker's)."""

from __future__ import annotations

from django.contrib import admin

from site_platform.admin import ViewOnly

from ..models import OrganizerUpload, TaskFile, TermsAcceptance
from .base import RecordAdmin


class _Record(ViewOnly, RecordAdmin):
    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(TermsAcceptance)
class TermsAcceptanceAdmin(_Record):
    list_display = ("team", "task", "accepted_by", "accepted_at", "digest")
    list_filter = ("task",)
    search_fields = ("team__name", "digest")
    list_select_related = ("team", "task", "accepted_by")


@admin.register(TaskFile)
class TaskFileAdmin(_Record):
    list_display = ("title", "task", "kind", "file_name", "size", "uploaded_at")
    list_filter = ("task", "kind")
    search_fields = ("title", "file_name", "sha256")
    list_select_related = ("task",)


@admin.register(OrganizerUpload)
class OrganizerUploadAdmin(_Record):
    list_display = ("file_name", "task", "kind", "state", "problem_count", "created_at")
    list_filter = ("task", "kind", "state")
    search_fields = ("file_name", "sha256")
    list_select_related = ("task",)
