"""Admin for the sampling record: planning rounds, the items they drew and the further looks
they asked (append-only)."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Count

from leaderboard.admin import OrganizerScopedAdmin
from site_platform.admin import PackedSizes, ViewOnly, annotated_column

from .models import Draw, Look, PlanRound, PoolSamplingRecord


class ReadOnlyAdmin(ViewOnly, OrganizerScopedAdmin):
    """The sampling record is what estimates are recomputed from: never edited by hand."""

    task_path = "plan_round__task"

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(PlanRound)
class PlanRoundAdmin(ReadOnlyAdmin):
    task_path = "task"
    list_display = (
        "id",
        "task",
        "run",
        "round",
        "status",
        "n_items",
        "draw_count",
        "look_count",
        "predicted_half_width",
        "current_half_width",
        "expected_labels",
        "engine_version",
        "created_at",
    )
    list_filter = ("status", "task")
    search_fields = ("run__name",)
    list_select_related = ("task", "run")

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(_draws=Count("draws", distinct=True), _looks=Count("looks", distinct=True))
        )

    draw_count = annotated_column("_draws", "draws")
    look_count = annotated_column("_looks", "looks")


@admin.register(Draw)
class DrawAdmin(ReadOnlyAdmin):
    list_display = ("id", "item", "plan_round", "inclusion")
    search_fields = ("item__key",)
    list_select_related = ("item", "plan_round")
    show_full_result_count = False


@admin.register(Look)
class LookAdmin(ReadOnlyAdmin):
    list_display = ("id", "item", "plan_round")
    search_fields = ("item__key",)
    list_select_related = ("item", "plan_round")
    show_full_result_count = False


@admin.register(PoolSamplingRecord)
class PoolSamplingRecordAdmin(PackedSizes, ReadOnlyAdmin):
    """A closed pool's inclusion vector: its size and the rounds it reflects, not its bytes."""

    task_path = "task"
    packed = ("inclusion",)
    list_display = ("task", "rounds", "inclusion_size", "updated_at")
    list_select_related = ("task",)
    readonly_fields = ("task", "rounds", "inclusion_size", "updated_at")
