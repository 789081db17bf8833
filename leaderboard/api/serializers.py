"""What the API shows of tasks and runs, and what it accepts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.urls import reverse
from rest_framework import serializers

from .. import phases
from ..board_text import RunWords, SnapshotTerms
from ..models import Run, RunEvent, Task, Team
from ..page_text import text_digest
from ..selectors import REFERENCE_MIN_DOCUMENTS, REFERENCE_MIN_ITEMS, reference_size, task_readiness

PUBLIC_TASK_FIELDS = (
    "slug",
    "title",
    "description",
    "rules",
    "terms",
    "data_access",
    "question",
    "display_template",
    "state",
    "kind",
    "measures",
    "f_beta",
    "target_half_width",
    "confidence",
    "label_budget",
    "judgments_per_item",
    "design",
    "max_runs_per_team",
    "max_runs_per_team_per_day",
    "max_upload_bytes",
    "max_predictions_per_run",
    "submissions_open_at",
    "submissions_close_at",
    "accept_late_runs",
    "reveal_at",
    "team_approval",
    "annotators_may_compete",
    "allowed_email_domains",
    "blocked_email_domains",
)
MAX_ERRORS_SHOWN = 50


if TYPE_CHECKING:
    _MixinBase = serializers.Serializer
else:
    _MixinBase = object


class RefuseUnknownFields(_MixinBase):
    """Serializer mixin: a body field the serializer does not know is refused (400, naming it),
    never silently dropped: a misspelt setting must not look applied. For every writable
    serializer of the leaderboard and annotation APIs."""

    # Sent with the fields but read by the view (e.g. an upload's ``file``).
    also_accepted: tuple[str, ...] = ()

    def to_internal_value(self, data: Any) -> Any:
        if hasattr(data, "keys"):
            known = [*self.fields, *self.also_accepted]
            unknown = sorted(set(data.keys()) - set(known))
            if unknown:
                message = f"unknown field (accepted: {', '.join(known)})"
                raise serializers.ValidationError({name: [message] for name in unknown})
        return super().to_internal_value(data)


def _absolute(request, url: str) -> str:
    return request.build_absolute_uri(url) if request is not None else url


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
        return _absolute(self.context.get("request"), reverse("api:task-detail", args=[task.slug]))

    def get_runs_url(self, task: Task) -> str:
        return _absolute(self.context.get("request"), reverse("api:task-runs", args=[task.slug]))

    def get_terms_digest(self, task: Task) -> str:
        return text_digest(task.terms)

    def get_terms_url(self, task: Task) -> str:
        return _absolute(self.context.get("request"), reverse("api:task-terms", args=[task.slug]))

    def get_files_url(self, task: Task) -> str:
        return _absolute(self.context.get("request"), reverse("api:task-files", args=[task.slug]))

    def get_submission_phase(self, task: Task) -> str:
        return phases.submission_phase(task)

    def get_board_held(self, task: Task) -> bool:
        return phases.board_held(task)

    def to_representation(self, task: Task) -> dict:
        data = super().to_representation(task)
        if self.context.get("organizer"):
            data["design_options"] = task.design_options
            data["readiness"] = ReadinessSerializer(task_readiness(task)).data
            # The reference sample's size beside its version (open-world tasks).
            data["reference_sample"] = (
                ReferenceSizeSerializer(reference_size(task)).data
                if task.kind == Task.Kind.OPEN
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
        fields = (*PUBLIC_TASK_FIELDS, "design_options")


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
        return _absolute(self.context.get("request"), reverse("api:run-detail", args=[run.pk]))

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


# -- error body (documentation of the shape every error of both APIs has) -----------------------
class ProblemSerializer(serializers.Serializer):
    line = serializers.IntegerField(allow_null=True)
    message = serializers.CharField()


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="What went wrong, for programs (see docs/API.md).")
    message = serializers.CharField(help_text="What went wrong, for people.")
    problems = ProblemSerializer(many=True, help_text="The first problems, by field or line.")
    total = serializers.IntegerField(help_text="How many problems there are in all.")
    run = serializers.JSONField(
        allow_null=True,
        help_text=(
            "The run the error concerns (a rejected upload, the run with a duplicate file), else "
            "null."
        ),
    )


class ErrorSerializer(serializers.Serializer):
    error = ErrorDetailSerializer()


# -- snapshots -----------------------------------------------------------------------------------
class _SnapshotProvenanceSerializer(serializers.Serializer):
    """What a snapshot rests on (shared by the list and the whole snapshot)."""

    version = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    published = serializers.BooleanField()
    published_at = serializers.DateTimeField(allow_null=True)
    engine_version = serializers.CharField()
    design = serializers.CharField()
    labels_version = serializers.IntegerField()
    reference_version = serializers.IntegerField()
    n_labels = serializers.IntegerField()
    n_reference = serializers.IntegerField(help_text="Reference items recall rests on.")
    n_reference_documents = serializers.IntegerField(
        allow_null=True,
        help_text="Documents those items come from; null for a snapshot stored before they "
        "were counted.",
    )
    confidence = serializers.FloatField()


class SnapshotSummarySerializer(_SnapshotProvenanceSerializer):
    """One snapshot in the list: what it rests on; ``published`` false means held."""

    n_runs = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()

    def get_n_runs(self, snapshot) -> int:
        return len(snapshot.rows or [])

    def get_url(self, snapshot) -> str:
        return _absolute(
            self.context.get("request"),
            reverse("api:snapshot-detail", args=[snapshot.task.slug, snapshot.version]),
        )


class ReferenceSupportSerializer(serializers.Serializer):
    """The reference sample an open task's recall rests on, and whether it is enough to present
    recall on (``min_items`` items in ``min_documents`` documents)."""

    items = serializers.IntegerField()
    documents = serializers.IntegerField(allow_null=True)
    min_items = serializers.IntegerField()
    min_documents = serializers.IntegerField()
    enough = serializers.BooleanField()
    text = serializers.CharField(help_text="What recall rests on, in words.")


class SnapshotSerializer(_SnapshotProvenanceSerializer):
    """A whole snapshot (see :func:`leaderboard.exports.snapshot_json`): rows as stored, with
    the board's words: each row's ``state_text``, each rank's ``text`` (``"2\u20135"``, an en
    dash) and, on an open task, ``reference_too_small`` on recall and F1."""

    task = serializers.CharField()
    reference = ReferenceSupportSerializer(
        allow_null=True, help_text="What recall rests on; null for a closed pool."
    )
    target_half_width = serializers.FloatField(
        help_text="The target the runs' states were decided on."
    )
    methods = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))
    details = serializers.DictField()
    rows = serializers.ListField(child=serializers.DictField())


class EstimateSerializer(serializers.Serializer):
    snapshot = serializers.IntegerField(source="snapshot.version")
    published = serializers.BooleanField(source="snapshot.published")
    created_at = serializers.DateTimeField(source="snapshot.created_at")
    value = serializers.FloatField(allow_null=True)
    low = serializers.FloatField()
    high = serializers.FloatField()
    level = serializers.FloatField()
    labels_used = serializers.IntegerField()
    method = serializers.CharField()
    reference_too_small = serializers.SerializerMethodField(
        help_text="Recall or F1 of an open task resting on a reference sample smaller than the "
        "minimum recall is presented on: not to be read as settled."
    )

    def get_reference_too_small(self, estimate) -> bool:
        task = self.context.get("task") or estimate.snapshot.task  # the view's: no query
        return SnapshotTerms.of(task, estimate.snapshot).reference_short(estimate.metric)


class RunHistorySerializer(serializers.Serializer):
    run = serializers.IntegerField()
    metrics = serializers.DictField(child=EstimateSerializer(many=True))


# -- quotas, spend, organizer actions -----------------------------------------------------------
class TeamQuotaSerializer(serializers.Serializer):
    team = serializers.CharField()
    used_total = serializers.IntegerField()
    limit_total = serializers.IntegerField()
    remaining_total = serializers.IntegerField()
    used_today = serializers.IntegerField()
    limit_today = serializers.IntegerField()
    remaining_today = serializers.IntegerField()
    remaining = serializers.IntegerField()
    next_slot_at = serializers.DateTimeField(allow_null=True)
    refunded = serializers.IntegerField(
        help_text="Runs whose slot was given back (failed for platform reasons, or withdrawn "
        "before anything was asked of annotators for them)."
    )


class QuotaSerializer(serializers.Serializer):
    task = serializers.CharField()
    max_upload_bytes = serializers.IntegerField(
        help_text="The most bytes a run file may have (a gzipped one once decompressed; the "
        "file as sent is checked against it too): the task's limit within the site's."
    )
    max_predictions_per_run = serializers.IntegerField(
        help_text="The most predictions (a closed pool's lines) a run file may have."
    )
    teams = TeamQuotaSerializer(many=True)


class RunCostSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    team = serializers.CharField()
    state = serializers.CharField()
    n_predictions = serializers.IntegerField()
    n_requested = serializers.IntegerField()
    n_verified = serializers.IntegerField()


class SpendSerializer(serializers.Serializer):
    task = serializers.CharField()
    label_budget = serializers.IntegerField(
        allow_null=True, help_text="Most judgments the task may ask, gold answers included."
    )
    labels_requested = serializers.IntegerField(
        help_text="Judgments asked of annotators, gold answers included: what the budget counts."
    )
    labels_verified = serializers.IntegerField(help_text="Judgments in, gold answers included.")
    remaining = serializers.IntegerField(allow_null=True, help_text="Budget less requested.")
    runs = RunCostSerializer(many=True)


class PublishSerializer(RefuseUnknownFields, serializers.Serializer):
    release_hold = serializers.BooleanField(
        default=True, help_text="Publish later snapshots as they come (false: one-off)."
    )


class BoardStateSerializer(serializers.Serializer):
    task = serializers.CharField()
    board_held = serializers.BooleanField()
    latest_published = serializers.IntegerField(allow_null=True)


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
