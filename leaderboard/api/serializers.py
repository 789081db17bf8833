"""What the API shows of runs and accounts and what it accepts (the error body and the mixin
every writable serializer uses are the platform's, ``site_platform.api.serializers``). A task's
settings are in :mod:`.task_serializers`, snapshots, estimates and quotas in
:mod:`.board_serializers`."""

from __future__ import annotations

from django.urls import reverse
from rest_framework import serializers

from site_platform.api.serializers import RefuseUnknownFields

from ..board_text import RunWords, SnapshotTerms
from ..models import Run, RunEvent, Task, Team

MAX_ERRORS_SHOWN = 50


def _absolute(serializer: serializers.BaseSerializer, route: str, *args: object) -> str:
    """The URL of the API route ``route`` with ``args``: absolute for the request in
    ``serializer``'s context, relative without one."""
    url = reverse(route, args=args)
    request = serializer.context.get("request")
    return request.build_absolute_uri(url) if request is not None else url


class RunSerializer(serializers.ModelSerializer):
    """A run as its viewer may see it (``leaderboard.selectors.runs_seen_by``)."""

    task: serializers.SlugRelatedField[Task] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )
    link = serializers.CharField(read_only=True, help_text="http(s) URL, or empty.")
    team: serializers.SlugRelatedField[Team] = serializers.SlugRelatedField(
        slug_field="name", read_only=True
    )
    url = serializers.SerializerMethodField()
    outcome = serializers.CharField(
        read_only=True,
        allow_null=True,
        help_text=("The planner's last verdict; null for participants while the board is held."),
    )
    n_new_items = serializers.IntegerField(
        read_only=True,
        allow_null=True,
        help_text=(
            "Items no earlier run had predicted; for the task's organizers only (else null)."
        ),
    )
    n_requested = serializers.IntegerField(
        read_only=True,
        help_text=(
            "Items drawn for verification; while the board is held, participants see the count "
            "of the latest published snapshot."
        ),
    )
    n_verified = serializers.IntegerField(
        read_only=True,
        help_text=("Items verified; while the board is held, as of the latest published snapshot."),
    )
    state_text = serializers.SerializerMethodField(
        help_text="What the state means in words, and for a finished run what was met: "
        "`precision ±0.041, target ±0.05: met`, `budget spent: precision ±0.080, target ±0.05` "
        "(read against the newest snapshot the caller may see; on an open task, a reference "
        "sample too small for recall is said too). `state` stays the machine value."
    )

    class Meta:
        model = Run
        fields: tuple[str, ...] = (
            "id",
            "name",
            "description",
            "link",
            "task",
            "team",
            "state",
            "state_text",
            "reason",
            "outcome",
            "n_predictions",
            "n_new_items",
            "n_requested",
            "n_verified",
            "error_count",
            "file_name",
            "file_format",
            "file_bytes",
            "sha256",
            "after_deadline",
            "baseline",
            "created_at",
            "state_changed_at",
            "finished_at",
            "url",
        )
        read_only_fields = fields

    def get_url(self, run: Run) -> str:
        return _absolute(self, "api:run-detail", run.pk)

    def get_state_text(self, run: Run) -> str:
        words = self.context.get("words")
        if not isinstance(words, RunWords):  # no snapshot at hand: the words need none
            words = RunWords(SnapshotTerms.of(run.task, None))
        return words.state_text(run)


class RunEventSerializer(serializers.ModelSerializer):
    class Meta:
        model = RunEvent
        fields = ("state", "reason", "at")
        read_only_fields = fields


class RunDetailSerializer(RunSerializer):
    """A run with its problems (the first 50) and its event log."""

    # A declared field, not the ``errors`` property: the serializer metaclass takes it out of the
    # class (the stubs cannot know).
    errors = serializers.SerializerMethodField()  # type: ignore[assignment]
    rounds = serializers.IntegerField(
        read_only=True,
        allow_null=True,
        help_text=("Planning rounds; null for participants while the board is held."),
    )
    events = RunEventSerializer(
        source="visible_events",
        many=True,
        read_only=True,
        help_text=(
            "While the board is held, participants see the events up to the latest published "
            "snapshot, and later ones only of upload and failure."
        ),
    )

    class Meta(RunSerializer.Meta):
        fields = (
            *RunSerializer.Meta.fields,
            "rounds",
            "attempts",
            "quota_refunded",
            "errors",
            "events",
        )
        read_only_fields = fields

    def get_errors(self, run: Run) -> list:
        return list(run.errors or [])[:MAX_ERRORS_SHOWN]


class RunUploadSerializer(RefuseUnknownFields, serializers.Serializer):
    """The form fields sent with a run file (the file itself is read from ``request.FILES``)."""

    also_accepted = ("file",)

    name = serializers.CharField(
        max_length=Run._meta.get_field("name").max_length,
        required=False,
        allow_blank=True,
        default="",
    )
    description = serializers.CharField(required=False, allow_blank=True, default="")
    team = serializers.CharField(max_length=120, required=False, allow_blank=True, default="")


class BaselineSerializer(RefuseUnknownFields, serializers.Serializer):
    """Mark a run as a baseline, or unmark it."""

    baseline = serializers.BooleanField(
        default=True, help_text="true: a baseline (listed without a rank); false: ranked again."
    )


class RunDetailsSerializer(RefuseUnknownFields, serializers.Serializer):
    """What a run's team may change: its public name, description and link."""

    name = serializers.CharField(required=False, allow_blank=True)
    description = serializers.CharField(required=False, allow_blank=True)
    link = serializers.CharField(required=False, allow_blank=True)


# -- tokens and the caller ----------------------------------------------------------------------
class CredentialsSerializer(RefuseUnknownFields, serializers.Serializer):
    """Username and password, for clients without a session (e.g. the CLI's first login)."""

    username = serializers.CharField(required=False)
    password = serializers.CharField(
        required=False, style={"input_type": "password"}, trim_whitespace=False
    )


class TokenStatusSerializer(serializers.Serializer):
    exists = serializers.BooleanField()
    created = serializers.DateTimeField(allow_null=True)


class TokenKeySerializer(serializers.Serializer):
    key = serializers.CharField(help_text="Shown once: send it as `Authorization: Token <key>`.")
    created = serializers.DateTimeField()


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    is_staff = serializers.BooleanField()
    teams = serializers.ListField(child=serializers.CharField())
    organizes = serializers.ListField(child=serializers.CharField())
    annotates = serializers.ListField(child=serializers.CharField())


class MailPreferencesSerializer(RefuseUnknownFields, serializers.Serializer):
    """One switch per kind of notification by mail (``leaderboard.models.MailKind``)."""

    run_finished = serializers.BooleanField(
        help_text="A run of one of your teams is scored, partial or rejected."
    )
    team_request = serializers.BooleanField(
        help_text="A team asks to take part in a task you organize."
    )
