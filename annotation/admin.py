"""Admin for the verification queue: requests with their judgments, and judgments alone.

Everything is read-only: answers enter through the annotator pages (or the API), where they are
made idempotent and aggregated; an edit here would not update the item's label. Gold items are
loaded with ``manage.py load_gold``; pauses are lifted from the organizer's queue page.
"""

from __future__ import annotations

from django.contrib import admin

from leaderboard.admin import RecordAdmin
from site_platform.admin import ReadOnlyInline

from .models import (
    AnnotatorPause,
    Assignment,
    GoldAnswer,
    GoldItem,
    Judgment,
    RequestConflict,
    VerificationRequest,
)


class JudgmentInline(ReadOnlyInline):
    model = Judgment
    fields = (
        "annotator",
        "answer",
        "counted",
        "seconds_spent",
        "justification",
        "created_at",
        "withdrawn_at",
        "client_id",
    )


@admin.register(VerificationRequest)
class VerificationRequestAdmin(RecordAdmin):
    list_display = (
        "id",
        "item",
        "task",
        "state",
        "judgments_counted",
        "judgments_required",
        "priority",
        "created_at",
        "resolved_at",
    )
    list_filter = ("state", "task")
    search_fields = ("item__key",)
    list_select_related = ("item", "task")
    readonly_fields = (
        "task",
        "item",
        "state",
        "judgments_required",
        "judgments_counted",
        "priority",
        "created_at",
        "resolved_at",
    )
    inlines = (JudgmentInline,)
    show_full_result_count = False


@admin.register(Judgment)
class JudgmentAdmin(RecordAdmin):
    task_path = "request__task"
    list_display = (
        "id",
        "item_key",
        "annotator",
        "answer",
        "counted",
        "seq",
        "seconds_spent",
        "created_at",
        "withdrawn_at",
    )
    list_filter = ("answer", "counted", "request__task")
    search_fields = ("annotator__username", "request__item__key", "client_id")
    list_select_related = ("annotator", "request__item")
    readonly_fields = (
        "request",
        "annotator",
        "assignment",
        "client_id",
        "answer",
        "justification",
        "seconds_spent",
        "counted",
        "seq",
        "created_at",
        "withdrawn_at",
        "withdrawn_seq",
    )
    date_hierarchy = "created_at"
    show_full_result_count = False

    @admin.display(description="item", ordering="request__item__key")
    def item_key(self, obj):
        return obj.request.item.key


@admin.register(Assignment)
class AssignmentAdmin(RecordAdmin):
    list_display = (
        "id",
        "task",
        "annotator",
        "request",
        "gold",
        "state",
        "expires_at",
        "created_at",
    )
    list_filter = ("state", "task")
    search_fields = ("annotator__username", "token")
    list_select_related = ("task", "annotator")
    readonly_fields = (
        "task",
        "annotator",
        "request",
        "gold",
        "token",
        "state",
        "expires_at",
        "created_at",
    )
    show_full_result_count = False


@admin.register(GoldItem)
class GoldItemAdmin(RecordAdmin):
    list_display = ("id", "task", "item", "answer", "source", "created_at")
    list_filter = ("task", "answer", "source")
    search_fields = ("item__key",)
    list_select_related = ("task", "item")
    readonly_fields = ("task", "item", "answer", "source", "created_at")


@admin.register(GoldAnswer)
class GoldAnswerAdmin(RecordAdmin):
    task_path = "gold__task"
    list_display = ("id", "gold", "annotator", "answer", "correct", "created_at", "withdrawn_at")
    list_filter = ("correct", "gold__task")
    search_fields = ("annotator__username", "gold__item__key")
    list_select_related = ("gold", "annotator")
    readonly_fields = (
        "gold",
        "annotator",
        "assignment",
        "client_id",
        "answer",
        "correct",
        "justification",
        "seconds_spent",
        "seq",
        "created_at",
        "withdrawn_at",
        "withdrawn_seq",
    )


@admin.register(AnnotatorPause)
class AnnotatorPauseAdmin(RecordAdmin):
    list_display = ("id", "task", "annotator", "reason", "created_at", "lifted_at", "lifted_by")
    list_filter = ("task",)
    search_fields = ("annotator__username",)
    readonly_fields = ("task", "annotator", "reason", "created_at", "lifted_at", "lifted_by")


@admin.register(RequestConflict)
class RequestConflictAdmin(RecordAdmin):
    task_path = "request__task"
    list_display = ("id", "request", "team")
    list_select_related = ("request", "team")
    readonly_fields = ("request", "team")
