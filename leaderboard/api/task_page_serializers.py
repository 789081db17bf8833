"""What the API shows and accepts of a task's page: its terms and who accepted them, its data
files."""

from __future__ import annotations

from rest_framework import serializers

from site_platform.api.serializers import RefuseUnknownFields

from ..models import TaskFile, TermsAcceptance
from .serializers import _absolute


class TeamTermsSerializer(serializers.Serializer):
    team = serializers.CharField(source="team.name")
    accepted = serializers.SerializerMethodField()
    accepted_at = serializers.DateTimeField(source="acceptance.accepted_at", allow_null=True)
    accepted_by = serializers.CharField(
        source="acceptance.accepted_by.username", allow_null=True, default=None
    )
    earlier = serializers.BooleanField(
        help_text="The team accepted an earlier version of the terms, changed since."
    )

    def get_accepted(self, entry) -> bool:
        return entry.acceptance is not None


class TermsSerializer(serializers.Serializer):
    """A task's terms (Markdown) and their version; for a signed-in caller, where each of their
    teams stands."""

    task = serializers.CharField()
    terms = serializers.CharField(help_text="Markdown; empty: the task has no terms.")
    digest = serializers.CharField(help_text="The version: SHA-256 of the text (empty: none).")
    must_accept = serializers.BooleanField(
        help_text="Whether a team must accept them before its next run (the task has terms)."
    )
    teams = TeamTermsSerializer(many=True)


class TermsAcceptSerializer(RefuseUnknownFields, serializers.Serializer):
    team = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        help_text="A team's name or id; needed only when you are in several teams.",
    )
    digest = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=64,
        help_text="The version you read (`digest`): refused with 409 `terms_changed` if the terms "
        "changed since.",
    )


class TermsAcceptanceSerializer(serializers.ModelSerializer):
    task = serializers.CharField(source="task.slug")
    team = serializers.CharField(source="team.name")
    accepted_by = serializers.CharField(
        source="accepted_by.username", allow_null=True, default=None
    )
    current = serializers.SerializerMethodField(
        help_text="Whether this is the task's current version of the terms."
    )

    class Meta:
        model = TermsAcceptance
        fields = ("task", "team", "digest", "current", "accepted_by", "accepted_at")
        read_only_fields = fields

    def get_current(self, acceptance: TermsAcceptance) -> bool:
        return acceptance.digest == self.context.get("digest")


class TaskFileSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()
    download_url = serializers.SerializerMethodField()

    class Meta:
        model = TaskFile
        fields = (
            "id",
            "kind",
            "title",
            "description",
            "file_name",
            "size",
            "sha256",
            "uploaded_at",
            "url",
            "download_url",
        )
        read_only_fields = fields

    def get_url(self, task_file: TaskFile) -> str:
        return _absolute(self, "api:task-file", task_file.task.slug, task_file.pk)

    def get_download_url(self, task_file: TaskFile) -> str:
        return _absolute(self, "api:task-file-download", task_file.task.slug, task_file.pk)


class TaskFilesSerializer(serializers.Serializer):
    task = serializers.CharField()
    data_access = serializers.CharField(
        help_text="Who may download: `public`, `signed_in` or `terms_accepted`."
    )
    may_download = serializers.BooleanField(help_text="Whether you may download the files.")
    reason = serializers.CharField(help_text="If you may not, what to do (else empty).")
    files = TaskFileSerializer(many=True)


class TaskFileFieldsSerializer(RefuseUnknownFields, serializers.Serializer):
    """A data file's listing; sent with its ``file`` (multipart) to add or replace it."""

    also_accepted = ("file",)

    kind = serializers.ChoiceField(choices=TaskFile.Kind.choices, required=False)
    title = serializers.CharField(required=False, allow_blank=True)
    description = serializers.CharField(required=False, allow_blank=True)
