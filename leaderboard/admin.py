"""Admin for tasks, teams, items, runs and results.

Organizers (staff users without superuser rights) see and edit only the tasks they organize;
a task created in the admin gets its creator as an organizer. Engine bookkeeping, verified
labels, predictions and snapshots are read-only here: they are written by the pipeline, and an
edit in the admin would bypass the label and reference versions the estimator relies on.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db import models
from django.db.models import Count, Q
from django.db.models.functions import Length
from django.utils import timezone

from .models import (
    ApiToken,
    Estimate,
    Item,
    LabelModelFit,
    LeaderboardSnapshot,
    PoolRunOutputs,
    ReferenceCandidate,
    ReferenceItem,
    ReferenceSample,
    Run,
    RunCurve,
    RunEvent,
    RunPredictions,
    Task,
    TaskInvitation,
    Team,
    TeamApproval,
    TeamInvitation,
)
from .selectors import is_organizer, organized_tasks
from .services.tasks import PHASE_DATE_FIELDS, mark_late_runs, phase_date_problems, task_design


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


class ReadOnlyInline(admin.TabularInline):
    """Rows shown under their parent as they were recorded: none added, changed or deleted."""

    extra = 0
    can_delete = False

    def get_readonly_fields(self, request, obj=None):
        return self.fields

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("name", "member_count", "run_count", "created_at")
    search_fields = ("name", "members__username")
    filter_horizontal = ("members",)

    def get_queryset(self, request):
        # Teams belong to no task: an organizer sees the teams with runs on their tasks, and
        # counts only those runs (a team's work elsewhere is not theirs to see).
        tasks = organized_tasks(request.user)
        teams = super().get_queryset(request)
        if not request.user.is_superuser:
            teams = teams.filter(pk__in=Run.objects.filter(task__in=tasks).values("team"))
        return teams.annotate(
            _members=Count("members", distinct=True),
            _runs=Count("runs", distinct=True, filter=Q(runs__task__in=tasks)),
        )

    @admin.display(description="members", ordering="_members")
    def member_count(self, obj):
        return obj._members

    @admin.display(description="runs", ordering="_runs")
    def run_count(self, obj):
        return obj._runs


class TaskAdminForm(forms.ModelForm):
    class Meta:
        model = Task
        fields = "__all__"

    def clean(self):
        data: Any = super().clean()  # the cleaned data (a ModelForm's is never None)
        design = data.get("design", getattr(self.instance, "design", None))
        options = data.get("design_options", getattr(self.instance, "design_options", None))
        dated = Task(**{name: data.get(name) for name in PHASE_DATE_FIELDS})
        for name, messages in phase_date_problems(dated).items():
            if name in self.fields and name not in self.errors:
                self.add_error(name, messages)
        if self.errors or design is None:
            return data
        if not isinstance(options, dict):
            self.add_error("design_options", "must be a JSON object")
            return data
        try:
            task_design(
                Task(
                    design=design,
                    design_options=options,
                    target_half_width=data.get("target_half_width"),
                    confidence=data.get("confidence"),
                    label_budget=data.get("label_budget"),
                    judgments_per_item=data.get("judgments_per_item") or 1,
                )
            )
        except (TypeError, ValueError) as exc:
            self.add_error("design_options" if options else "design", str(exc))
        return data


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    form = TaskAdminForm
    list_display = (
        "slug",
        "title",
        "state",
        "n_items",
        "run_count",
        "target_half_width",
        "confidence",
        "label_budget",
        "submissions_close_at",
        "created_at",
    )
    list_filter = ("state", "design")
    search_fields = ("slug", "title")
    prepopulated_fields = {"slug": ("title",)}
    filter_horizontal = ("organizers", "annotators")
    engine_fields = (
        "seed",
        "n_items",
        "labels_version",
        "reference_version",
        "estimate_pending",
        "estimate_requested_at",
        "engine_lock_until",
    )
    readonly_fields = (*engine_fields, "hold_applied_for", "reveal_applied_for")
    fieldsets = (
        (None, {"fields": ("slug", "title", "description", "state")}),
        (
            "Annotation",
            {
                "fields": (
                    "question",
                    "display_template",
                    "judgments_per_item",
                    "label_budget",
                    "annotators",
                )
            },
        ),
        ("Targets", {"fields": ("target_half_width", "confidence", "design", "design_options")}),
        (
            "Quality control",
            {
                "fields": (
                    "annotator_daily_cap",
                    "gold_rate",
                    "gold_min_accuracy",
                    "gold_min_answers",
                )
            },
        ),
        (
            "Submission limits",
            {
                "fields": (
                    "max_runs_per_team",
                    "max_runs_per_team_per_day",
                    "max_upload_bytes",
                    "max_predictions_per_run",
                )
            },
        ),
        (
            "Phases (UTC)",
            {
                "fields": (
                    "submissions_open_at",
                    "submissions_close_at",
                    "accept_late_runs",
                    "reveal_at",
                    "hold_applied_for",
                    "reveal_applied_for",
                )
            },
        ),
        ("Publication", {"fields": ("board_held",)}),
        ("People", {"fields": ("organizers",)}),
        ("Engine (read-only)", {"classes": ("collapse",), "fields": engine_fields}),
    )

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .filter(pk__in=organized_tasks(request.user))
            .annotate(_runs=Count("runs", distinct=True))
        )

    @admin.display(description="runs", ordering="_runs")
    def run_count(self, obj):
        return obj._runs

    def get_readonly_fields(self, request, obj=None):
        # Once runs exist, a new design would change what earlier estimates meant.
        if obj is not None and obj.runs.exists():
            return (*self.readonly_fields, "design", "design_options")
        return self.readonly_fields

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if change and "submissions_close_at" in form.changed_data:
            mark_late_runs(obj)

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        if not change and not is_organizer(task=form.instance, user=request.user):
            form.instance.organizers.add(request.user)


@admin.register(Item)
class ItemAdmin(OrganizerScopedAdmin):
    list_display = ("key", "task", "index", "verified_at")
    list_filter = ("task",)
    search_fields = ("key",)
    list_select_related = ("task",)
    readonly_fields = ("task", "key", "index", "verified_at")
    # Tasks may have millions of items: skip the unfiltered COUNT(*).
    show_full_result_count = False


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
class RunPredictionsAdmin(RecordAdmin):
    """Shows the sizes of the packed arrays, never their bytes."""

    task_path = "run__task"
    list_display = ("run", "prediction_count", "items_size", "scores_size")
    search_fields = ("run__name",)
    list_select_related = ("run",)
    exclude = ("items", "scores")
    readonly_fields = ("run", "prediction_count", "items_size", "scores_size")

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .defer("items", "scores")
            .annotate(_items_bytes=Length("items"), _scores_bytes=Length("scores"))
        )

    @admin.display(description="predictions")
    def prediction_count(self, obj):
        return obj.run.n_predictions

    @admin.display(description="items (bytes)", ordering="_items_bytes")
    def items_size(self, obj):
        return obj._items_bytes

    @admin.display(description="scores (bytes)", ordering="_scores_bytes")
    def scores_size(self, obj):
        return obj._scores_bytes


@admin.register(PoolRunOutputs)
class PoolRunOutputsAdmin(RecordAdmin):
    """A closed-pool run's packed scores and labels: their sizes, never their bytes."""

    task_path = "run__task"
    list_display = ("run", "scores_size", "labels_size")
    search_fields = ("run__name",)
    list_select_related = ("run",)
    exclude = ("scores", "labels")
    readonly_fields = ("run", "scores_size", "labels_size")

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .defer("scores", "labels")
            .annotate(_scores_bytes=Length("scores"), _labels_bytes=Length("labels"))
        )

    @admin.display(description="scores (bytes)", ordering="_scores_bytes")
    def scores_size(self, obj):
        return obj._scores_bytes

    @admin.display(description="labels (bytes)", ordering="_labels_bytes")
    def labels_size(self, obj):
        return obj._labels_bytes


@admin.register(ReferenceItem)
class ReferenceItemAdmin(RecordAdmin):
    # The reference sample is uploaded as a whole (`manage.py load_reference`).
    list_display = ("item", "task", "group")
    list_filter = ("task",)
    search_fields = ("item__key", "group")
    list_select_related = ("item", "task")
    readonly_fields = ("task", "item", "group")
    show_full_result_count = False


@admin.register(ReferenceCandidate)
class ReferenceCandidateAdmin(RecordAdmin):
    # Uploaded as a whole from the organize page or the API (a document's candidate items).
    list_display = ("item", "task", "document")
    list_filter = ("task",)
    search_fields = ("item__key", "document")
    list_select_related = ("item", "task")
    readonly_fields = ("task", "item", "document")
    show_full_result_count = False


@admin.register(ReferenceSample)
class ReferenceSampleAdmin(RecordAdmin):
    """A draw of documents is a record (seed and documents drawn, for an audit): read only."""

    list_display = ("task", "state", "size", "n_candidates", "n_resolved", "n_true", "created_at")
    list_filter = ("task", "state")
    list_select_related = ("task",)
    readonly_fields = (
        "task",
        "state",
        "seed",
        "size",
        "documents",
        "n_documents",
        "n_candidates",
        "n_resolved",
        "n_true",
        "created_by",
        "created_at",
        "completed_at",
        "reference_version",
    )


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
    readonly_fields = (
        "snapshot",
        "run",
        "metric",
        "value",
        "low",
        "high",
        "level",
        "labels_used",
        "method",
        "computed_at",
    )
    show_full_result_count = False


@admin.register(LabelModelFit)
class LabelModelFitAdmin(RecordAdmin):
    """The annotator model as last fitted: written by the estimation job only."""

    list_display = ("task", "snapshot", "level")
    list_select_related = ("task", "snapshot")
    fields = readonly_fields = ("task", "snapshot", "level", "annotators")

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(RunCurve)
class RunCurveAdmin(RecordAdmin):
    """A closed-pool run's precision-recall curve in a snapshot: written by estimation only."""

    task_path = "run__task"
    list_display = ("run", "snapshot")
    list_select_related = ("run", "snapshot")
    fields = readonly_fields = ("run", "snapshot", "data")

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Who has an API token, since when. Only the key's digest is stored, and not shown; deleting
    a token revokes it. Tokens are made by their users (API, CLI) or ``manage.py api_token``."""

    list_display = ("user", "created")
    search_fields = ("user__username",)
    fields = ("user", "created")
    readonly_fields = fields

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(TeamInvitation)
class TeamInvitationAdmin(admin.ModelAdmin):
    """Invitation links to teams: who made them, until when, who used them. Only the key's digest
    is stored, and not shown. A team's invitations are its members' business: superusers only
    (an organizer sees the teams with runs on their tasks, not who invited whom)."""

    list_display = (
        "team",
        "created_by",
        "created_at",
        "expires_at",
        "used_by",
        "used_at",
        "revoked_at",
    )
    list_select_related = ("team", "created_by", "used_by")
    fields = list_display
    readonly_fields = fields

    def get_queryset(self, request):
        invitations = super().get_queryset(request)
        return invitations if request.user.is_superuser else invitations.none()

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(TaskInvitation)
class TaskInvitationAdmin(OrganizerScopedAdmin):
    """Invitation links to annotate or co-organize the tasks one organizes: who made them, until
    when, who used them (made and revoked on the organize page or through the API). Only the
    key's digest is stored, and not shown."""

    list_display = (
        "task",
        "role",
        "created_by",
        "created_at",
        "expires_at",
        "used_by",
        "used_at",
        "revoked_at",
    )
    list_select_related = ("task", "created_by", "used_by")
    list_filter = ("role",)
    fields = list_display
    readonly_fields = fields

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(TeamApproval)
class TeamApprovalAdmin(admin.ModelAdmin):
    """Teams' requests to take part in tasks that need approval, of the tasks one organizes
    (approved on the organize page or through the API)."""

    list_display = ("task", "team", "requested_by", "requested_at", "approved_by", "approved_at")
    list_select_related = ("task", "team", "requested_by", "approved_by")
    fields = ("task", "team", "requested_by", "requested_at", "approved_by", "approved_at")
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).filter(task__in=organized_tasks(request.user))

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
