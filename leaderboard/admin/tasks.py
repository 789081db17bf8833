"""Admin for tasks (their settings form, phase dates and design), items and the reference
sample."""

from __future__ import annotations

from typing import Any, ClassVar

from django import forms
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.db import models
from django.db.models import Count, Q

from site_platform.admin import annotated_column

from ..forms import NestingSafeJSONField
from ..kinds import kind_for
from ..models import (
    Item,
    ReferenceCandidate,
    ReferenceItem,
    ReferenceSample,
    Task,
)
from ..selectors import is_organizer, organized_tasks
from ..services.task_validation import task_settings_problems
from ..services.tasks import FROZEN_ONCE_RUNS, mark_late_runs
from ..task_settings import groups
from ..task_settings import names as names_of
from .base import OrganizerScopedAdmin, RecordAdmin


class TaskAdminForm(forms.ModelForm):
    class Meta:
        model = Task
        fields = "__all__"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk is None:
            self.initial.setdefault("state", Task.State.DRAFT)  # as every new task

    def _check_opening(self, data: Any) -> None:
        """Opening here checks the task's readiness checklist, as the organize page does."""
        if data.get("state") != Task.State.OPEN:
            return
        if self.instance.pk is None:  # (a new instance is "open" by the model's default)
            self.add_error(
                "state",
                "a new task starts as a draft: open it once its checklist (organize page) is "
                "complete",
            )
            return
        if self.instance.state == Task.State.OPEN:
            return
        # The stored task with the settings sent (the instance takes them after clean()).
        changed = Task.objects.get(pk=self.instance.pk)
        concrete = {field.name for field in Task._meta.concrete_fields}
        for name in self.changed_data:
            if name in concrete and name in data:
                setattr(changed, name, data[name])
        readiness = kind_for(changed).readiness(changed)
        if not readiness.ready:
            missing = "; ".join(f"{c.label}: {c.state}" for c in readiness.missing)
            self.add_error("state", f"not ready to open: {missing}")

    def clean(self):
        data: Any = super().clean()  # the cleaned data (a ModelForm's is never None)
        self._check_opening(data)
        return data

    def _post_clean(self) -> None:
        # The instance has taken the settings sent and passed the model's checks: the rest is
        # the one validator's, as for the service, the pages and the API.
        super()._post_clean()  # type: ignore[misc]  # a private hook the stubs leave out
        for name, messages in task_settings_problems(self.instance, validate_unique=False).items():
            if name not in self.errors:
                self.add_error(name if name in self.fields else None, messages)


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
        "pool_loading",
        "labels_version",
        "reference_version",
        "reference_frame",
        "estimate_pending",
        "estimate_requested_at",
        "engine_lock_until",
    )
    # Which deadline's hold and which reveal the phases have applied (their bookkeeping).
    phase_fields = ("hold_applied_for", "reveal_applied_for")
    readonly_fields = (*engine_fields, *phase_fields)
    # Every setting, in its group (leaderboard.task_settings), then the people and the
    # bookkeeping (Any: the stubs' fieldset type is a TypedDict a derived dict does not match).
    fieldsets: ClassVar[Any] = (
        *((legend, {"fields": names}) for legend, names in groups(names_of())),
        ("People", {"fields": ("organizers", "annotators")}),
        ("Bookkeeping (read-only)", {"classes": ("collapse",), "fields": readonly_fields}),
    )

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .filter(pk__in=organized_tasks(request.user))
            .annotate(_runs=Count("runs", distinct=True))
        )

    run_count = annotated_column("_runs", "runs")

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        if isinstance(db_field, models.JSONField):  # decoded safely, as on the organize pages
            kwargs.setdefault("form_class", NestingSafeJSONField)
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def get_readonly_fields(self, request, obj=None):
        # As the service: once runs exist, a new design, kind or beta would change what earlier
        # estimates meant; once items exist, the kind stays.
        frozen: set[str] = set()
        if obj is not None and obj.runs.exists():
            frozen |= FROZEN_ONCE_RUNS
        if obj is not None and obj.n_items:
            frozen.add("kind")
        return (*self.readonly_fields, *sorted(frozen))

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if change and "submissions_close_at" in form.changed_data:
            mark_late_runs(obj)

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        # The organizer and annotator pickers listed every account to any staff organizer. They
        # offer the people already on the tasks the user organizes (and the user); others join
        # by the invitation links of the organize page.
        if db_field.name in ("organizers", "annotators") and not request.user.is_superuser:
            tasks = organized_tasks(request.user)
            kwargs["queryset"] = (
                get_user_model()
                .objects.filter(
                    Q(pk=request.user.pk)
                    | Q(organized_tasks__in=tasks)
                    | Q(annotated_tasks__in=tasks)
                )
                .distinct()
            )
        return super().formfield_for_manytomany(db_field, request, **kwargs)

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


@admin.register(ReferenceItem)
class ReferenceItemAdmin(RecordAdmin):
    # The reference sample is uploaded as a whole (`manage.py load_reference`).
    list_display = ("item", "task", "group", "settled")
    list_filter = ("task", "settled")
    search_fields = ("item__key", "group")
    list_select_related = ("item", "task")
    readonly_fields = ("task", "item", "group", "settled")
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

    list_display = (
        "task",
        "state",
        "size",
        "n_candidates",
        "n_resolved",
        "n_true",
        "n_looks",
        "created_at",
    )
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
        "frame",
        "replace",
        "n_resolved",
        "n_true",
        "n_looks",
        "stuck",
        "created_by",
        "created_at",
        "completed_at",
        "reference_version",
        "reference_items",
        "reference_documents",
        "cancelled_at",
        "cancelled_by",
        "settle_requested_at",
        "settle_requested_by",
        "settled",
    )
