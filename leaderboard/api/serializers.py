"""What the API shows of tasks and runs, and what it accepts."""

from __future__ import annotations

from django.urls import reverse
from rest_framework import serializers

from ..models import Run, RunEvent, Task

PUBLIC_TASK_FIELDS = (
    "slug", "title", "description", "question", "display_template", "state",
    "target_half_width", "confidence", "label_budget", "judgments_per_item", "design",
    "max_runs_per_team", "max_runs_per_team_per_day", "max_upload_bytes",
    "max_predictions_per_run",
)
MAX_ERRORS_SHOWN = 50


def _absolute(request, url: str) -> str:
    return request.build_absolute_uri(url) if request is not None else url


class TaskSerializer(serializers.ModelSerializer):
    """A task's public settings (never its items or labels)."""

    url = serializers.SerializerMethodField()
    runs_url = serializers.SerializerMethodField()

    class Meta:
        model = Task
        fields = (*PUBLIC_TASK_FIELDS, "n_items", "reference_version", "created_at", "url",
                  "runs_url")
        read_only_fields = fields

    def get_url(self, task: Task) -> str:
        return _absolute(self.context.get("request"), reverse("api:task-detail", args=[task.slug]))

    def get_runs_url(self, task: Task) -> str:
        return _absolute(self.context.get("request"), reverse("api:task-runs", args=[task.slug]))

    def to_representation(self, task: Task) -> dict:
        data = super().to_representation(task)
        if self.context.get("organizer"):
            data["design_options"] = task.design_options
        return data


class TaskWriteSerializer(serializers.ModelSerializer):
    """Settings accepted when creating (slug and title required) or changing a task."""

    class Meta:
        model = Task
        fields = (*PUBLIC_TASK_FIELDS, "design_options")


class RunSerializer(serializers.ModelSerializer):
    task = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    team = serializers.SlugRelatedField(slug_field="name", read_only=True)
    url = serializers.SerializerMethodField()

    class Meta:
        model = Run
        fields = ("id", "name", "description", "task", "team", "state", "reason", "outcome",
                  "n_predictions", "n_new_items", "n_requested", "n_verified", "error_count",
                  "file_name", "file_format", "file_bytes", "sha256", "created_at",
                  "state_changed_at", "finished_at", "url")
        read_only_fields = fields

    def get_url(self, run: Run) -> str:
        return _absolute(self.context.get("request"), reverse("api:run-detail", args=[run.pk]))


class RunEventSerializer(serializers.ModelSerializer):
    class Meta:
        model = RunEvent
        fields = ("state", "reason", "at")
        read_only_fields = fields


class RunDetailSerializer(RunSerializer):
    """A run with its problems (the first 50) and its event log."""

    errors = serializers.SerializerMethodField()
    events = RunEventSerializer(many=True, read_only=True)

    class Meta(RunSerializer.Meta):
        fields = (*RunSerializer.Meta.fields, "rounds", "attempts", "quota_refunded", "errors",
                  "events")
        read_only_fields = fields

    def get_errors(self, run: Run) -> list:
        return list(run.errors or [])[:MAX_ERRORS_SHOWN]


class RunUploadSerializer(serializers.Serializer):
    """The form fields sent with a run file (the file itself is read from ``request.FILES``)."""

    name = serializers.CharField(max_length=Run._meta.get_field("name").max_length,
                                 required=False, allow_blank=True, default="")
    description = serializers.CharField(required=False, allow_blank=True, default="")
    team = serializers.CharField(max_length=120, required=False, allow_blank=True, default="")
