"""What the API shows of a task's settings (never its items or labels), its readiness
checklist and its reference sample's size, and what a task's organizers may write."""

from __future__ import annotations

from rest_framework import serializers

from site_platform.api.serializers import RefuseUnknownFields

from .. import phases, task_settings
from ..kinds import kind_for
from ..models import Task
from ..page_text import text_digest
from ..selectors import REFERENCE_MIN_DOCUMENTS, REFERENCE_MIN_ITEMS, reference_size
from .serializers import _absolute

# What anyone who sees the task reads (its organizers also the organizers' settings), and what
# its organizers write: leaderboard.task_settings says which.
PUBLIC_TASK_FIELDS = task_settings.names(api="public")
ORGANIZER_TASK_FIELDS = task_settings.names(api="organizers")


class ReadinessCheckSerializer(serializers.Serializer):
    """One need of a task before it opens (``leaderboard.selectors.readiness.Check``)."""

    key = serializers.CharField(
        help_text="`annotators`, `reference_sample` (open world), `pool` (closed pool), `gold`, "
        "`phases`."
    )
    # The metaclass takes declared fields out of the class: this does not replace Field.label.
    label = serializers.CharField()  # type: ignore[assignment]
    ok = serializers.BooleanField()
    state = serializers.CharField(help_text="Where it stands, and what to do, in words.")
    blocking = serializers.BooleanField(
        help_text="Whether the task may open only once this is ok (false: information)."
    )
    missing = serializers.BooleanField(help_text="Blocking and not ok.")
    page = serializers.CharField(help_text="Where it is done on the organize page.")
    api = serializers.CharField(help_text="The API endpoint that does it (empty: none).")


class ReadinessSerializer(serializers.Serializer):
    """A task's readiness checklist, in the order an organizer works through it."""

    ready = serializers.BooleanField(help_text="Nothing is missing: the task may open.")
    checks = ReadinessCheckSerializer(many=True)


class TaskSerializer(serializers.ModelSerializer):
    """A task's public settings (never its items or labels); for its organizers also its
    ``design_options`` and ``readiness`` (its checklist: see ``/readiness/``)."""

    url = serializers.SerializerMethodField()
    runs_url = serializers.SerializerMethodField()
    submission_phase = serializers.SerializerMethodField(
        help_text="Where now falls in the submission window: `not_open`, `open` or "
        "`after_deadline` (runs then are marked so, or refused if `accept_late_runs` is false)."
    )
    board_held = serializers.SerializerMethodField(
        help_text="Whether the public board is held (by hand, or since the deadline until the "
        "reveal): new scores wait for publication."
    )
    # The task page (task_page_serializers): the terms' version, its files and terms.
    terms_digest = serializers.SerializerMethodField(
        help_text="The version of the terms (SHA-256 of their text; empty: no terms). A team "
        "accepts this version before its next run (`terms_url`)."
    )
    terms_url = serializers.SerializerMethodField()
    files_url = serializers.SerializerMethodField()

    class Meta:
        model = Task
        fields = (
            *PUBLIC_TASK_FIELDS,
            "terms_digest",
            "terms_url",
            "files_url",
            "submission_phase",
            "board_held",
            "n_items",
            "reference_version",
            "created_at",
            "url",
            "runs_url",
        )
        read_only_fields = fields

    def get_url(self, task: Task) -> str:
        return _absolute(self, "api:task-detail", task.slug)

    def get_runs_url(self, task: Task) -> str:
        return _absolute(self, "api:task-runs", task.slug)

    def get_terms_digest(self, task: Task) -> str:
        return text_digest(task.terms)

    def get_terms_url(self, task: Task) -> str:
        return _absolute(self, "api:task-terms", task.slug)

    def get_files_url(self, task: Task) -> str:
        return _absolute(self, "api:task-files", task.slug)

    def get_submission_phase(self, task: Task) -> str:
        return phases.submission_phase(task)

    def get_board_held(self, task: Task) -> bool:
        return phases.board_held(task)

    def to_representation(self, task: Task) -> dict:
        data = super().to_representation(task)
        if self.context.get("organizer"):
            data.update({name: getattr(task, name) for name in ORGANIZER_TASK_FIELDS})
            kind = kind_for(task)
            data["readiness"] = ReadinessSerializer(kind.readiness(task)).data
            # The reference sample's size beside its version (open-world tasks).
            data["reference_sample"] = (
                ReferenceSizeSerializer(reference_size(task)).data
                if kind.has_reference_sample
                else None
            )
        return data


class ReferenceSizeSerializer(serializers.Serializer):
    """The task's reference sample: its version and size, and whether recall is presented on it."""

    version = serializers.IntegerField()
    items = serializers.IntegerField()
    documents = serializers.IntegerField(help_text="An item without a group is one of its own.")
    enough = serializers.BooleanField(
        help_text=f"At least {REFERENCE_MIN_ITEMS} items in {REFERENCE_MIN_DOCUMENTS} documents."
    )
    settled = serializers.IntegerField(
        help_text="Items of it that an organizer's settling of a draw decided below the task's "
        "confidence (stuck candidates labelled true by their posterior)."
    )


class TaskWriteSerializer(RefuseUnknownFields, serializers.ModelSerializer):
    """Settings accepted when creating (slug and title required) or changing a task."""

    class Meta:
        model = Task
        fields = (*PUBLIC_TASK_FIELDS, *ORGANIZER_TASK_FIELDS)
