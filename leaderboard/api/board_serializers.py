"""What the API shows of a task's snapshots (the board), a run's estimates and history, and
teams' quotas and the label budget's spend; the publication of a held board."""

from __future__ import annotations

from rest_framework import serializers

from site_platform.api.serializers import RefuseUnknownFields

from ..board_text import SnapshotTerms
from .serializers import _absolute


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
        return _absolute(self, "api:snapshot-detail", snapshot.task.slug, snapshot.version)


class ReferenceSupportSerializer(serializers.Serializer):
    """The reference sample an open task's recall rests on, and whether it is enough to present
    recall on (``min_items`` items in ``min_documents`` documents)."""

    items = serializers.IntegerField()
    documents = serializers.IntegerField(allow_null=True)
    min_items = serializers.IntegerField()
    min_documents = serializers.IntegerField()
    enough = serializers.BooleanField()
    text = serializers.CharField(help_text="What recall rests on, in words.")


class PairSerializer(serializers.Serializer):
    """Two runs next to each other on a board sorted by ``metric`` (the pair view): ``above``
    minus ``below`` with its interval at the level the rank intervals tested each pair at."""

    metric = serializers.CharField()
    above = serializers.IntegerField(help_text="The run placed higher (run id).")
    below = serializers.IntegerField()
    above_name = serializers.CharField()
    below_name = serializers.CharField()
    difference = serializers.FloatField()
    low = serializers.FloatField()
    high = serializers.FloatField()
    confidence = serializers.FloatField(
        help_text="The board's family level: every pair's statement holds at once with it."
    )
    separated = serializers.BooleanField(
        help_text="The interval excludes 0: the ranks order the two runs."
    )
    text = serializers.CharField(
        help_text='"A above B with 95% confidence; difference 0.031 [0.012, 0.050]", or '
        '"A and B not separated at 95% confidence; ...".'
    )


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
    pairs = serializers.DictField(
        child=PairSerializer(many=True),
        help_text="Per measure whose ranks come from paired differences: every two ranked runs "
        "next to each other on the board sorted by it (of the rows shown). Empty for a board "
        "ranked otherwise (closed pools: Bonferroni).",
    )


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
    neighbours = serializers.DictField(
        child=PairSerializer(many=True),
        help_text="Per measure with paired differences, the run against the ranked runs just "
        "above and below it on the board of the newest snapshot the viewer may see.",
    )


# -- quotas, spend, organizer actions -----------------------------------------------------------
class TeamQuotaSerializer(serializers.Serializer):
    team = serializers.CharField(source="team.name")
    used_total = serializers.IntegerField()
    limit_total = serializers.IntegerField()
    remaining_total = serializers.IntegerField()
    used_today = serializers.IntegerField()
    limit_today = serializers.IntegerField()
    remaining_today = serializers.IntegerField()
    remaining = serializers.IntegerField()
    next_slot_at = serializers.DateTimeField(allow_null=True)
    refunded = serializers.IntegerField(
        source="n_refunded",
        help_text="Runs whose slot was given back (failed for platform reasons, or withdrawn "
        "before anything was asked of annotators for them).",
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
