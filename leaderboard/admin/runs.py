"""Admin for runs, their events and stored outputs, and the snapshots, estimates, curves and
label-model fits computed from them (read-only: the pipeline writes them)."""

from __future__ import annotations

from django.contrib import admin
from django.db import models
from django.utils import timezone

from site_platform.admin import PackedSizes, ReadOnlyInline, ViewOnly

from ..models import (
    Estimate,
    LabelModelFit,
    LeaderboardSnapshot,
    PoolRunOutputs,
    Run,
    RunCurve,
    RunEvent,
    RunPredictions,
)
from .base import RecordAdmin


class RunEventInline(ReadOnlyInline):
    model = RunEvent
    fields = ("at", "state", "reason")


@admin.register(Run)
class RunAdmin(RecordAdmin):
    # Runs enter through validation (upload page, API or `manage.py submit_run`).
    list_display = (
        "id",
        "name",
        "task",
        "team",
        "state",
        "outcome",
        "n_predictions",
        "n_verified",
        "n_requested",
        "created_at",
    )
    list_filter = ("state", "outcome", "after_deadline", "task")
    search_fields = ("name", "team__name", "file_name", "sha256")
    list_select_related = ("task", "team")
    date_hierarchy = "created_at"
    inlines = (RunEventInline,)
    readonly_fields = (
        "task",
        "team",
        "submitted_by",
        "state",
        "reason",
        "errors",
        "error_count",
        "outcome",
        "file_name",
        "file_format",
        "file_bytes",
        "sha256",
        "n_predictions",
        "n_new_items",
        "n_requested",
        "n_verified",
        "rounds",
        "attempts",
        "quota_refunded",
        "after_deadline",
        "created_at",
        "state_changed_at",
        "finished_at",
    )
    fields = ("name", "description", "link", *readonly_fields)
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}


@admin.register(RunEvent)
class RunEventAdmin(RecordAdmin):
    task_path = "run__task"
    list_display = ("run", "state", "reason", "at")
    list_filter = ("state",)
    search_fields = ("run__name", "reason")
    list_select_related = ("run",)
    readonly_fields = ("run", "state", "reason", "at")


@admin.register(RunPredictions)
class RunPredictionsAdmin(PackedSizes, RecordAdmin):
    """Shows the sizes of the packed arrays, never their bytes."""

    task_path = "run__task"
    packed = ("items", "scores")
    list_display = ("run", "prediction_count", "items_size", "scores_size")
    search_fields = ("run__name",)
    list_select_related = ("run",)
    readonly_fields = ("run", "prediction_count", "items_size", "scores_size")

    @admin.display(description="predictions")
    def prediction_count(self, obj):
        return obj.run.n_predictions


@admin.register(PoolRunOutputs)
class PoolRunOutputsAdmin(PackedSizes, RecordAdmin):
    """A closed-pool run's packed scores and labels: their sizes, never their bytes."""

    task_path = "run__task"
    packed = ("scores", "labels")
    list_display = ("run", "scores_size", "labels_size")
    search_fields = ("run__name",)
    list_select_related = ("run",)
    readonly_fields = ("run", "scores_size", "labels_size")


class EstimateInline(ReadOnlyInline):
    model = Estimate
    fields = ("run", "metric", "value", "low", "high", "level", "labels_used", "method")


@admin.register(LeaderboardSnapshot)
class LeaderboardSnapshotAdmin(RecordAdmin):
    """Snapshots are immutable except for whether they are published."""

    list_display = (
        "task",
        "version",
        "published",
        "created_at",
        "n_labels",
        "n_reference",
        "confidence",
        "design",
        "engine_version",
    )
    list_filter = ("published", "task", "design")
    list_editable = ("published",)
    list_select_related = ("task",)
    inlines = (EstimateInline,)
    readonly_fields = (
        "task",
        "version",
        "created_at",
        "published_at",
        "engine_version",
        "design",
        "labels_version",
        "reference_version",
        "n_labels",
        "n_reference",
        "confidence",
        "details",
        "rows",
    )
    fields = ("published", *readonly_fields)

    def save_model(self, request, obj, form, change):
        # Publishing stamps the time (kept if it was published before); un-publishing clears it.
        if obj.published and obj.published_at is None:
            obj.published_at = timezone.now()
        elif not obj.published:
            obj.published_at = None
        super().save_model(request, obj, form, change)


@admin.register(Estimate)
class EstimateAdmin(RecordAdmin):
    task_path = "run__task"
    list_display = (
        "run",
        "metric",
        "value",
        "low",
        "high",
        "level",
        "labels_used",
        "method",
        "snapshot",
        "computed_at",
    )
    list_filter = ("metric", "method")
    search_fields = ("run__name",)
    list_select_related = ("run", "snapshot")
    readonly_fields = list_display  # written by the estimation job only
    show_full_result_count = False


@admin.register(LabelModelFit)
class LabelModelFitAdmin(ViewOnly, RecordAdmin):
    """The annotator model as last fitted: written by the estimation job only."""

    list_display = ("task", "snapshot", "level")
    list_select_related = ("task", "snapshot")
    fields = readonly_fields = ("task", "snapshot", "level", "annotators")


@admin.register(RunCurve)
class RunCurveAdmin(ViewOnly, RecordAdmin):
    """A closed-pool run's precision-recall curve in a snapshot: written by estimation only."""

    task_path = "run__task"
    list_display = ("run", "snapshot")
    list_select_related = ("run", "snapshot")
    fields = readonly_fields = ("run", "snapshot", "data")
