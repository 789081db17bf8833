"""REST API of a reference sample built in the product (a task's organizers), under
``/api/tasks/<slug>/reference-sample/``: its status (``GET``: the candidates, the sample's size,
the latest draw), and the upload of the documents' candidate items (``candidates/``). The draw,
which queues the candidates for verification, is the annotation app's
(``annotation.reference_sample_api``: ``draw/``)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from site_platform.api.openapi import with_errors

from ..models import OrganizerUpload
from ..selectors import reference_sample_status
from .task_serializers import ReferenceSizeSerializer
from .upload_views import ACCEPTED, OrganizerUploadView
from .views import ApiView


def _confirm_field() -> serializers.BooleanField:
    return serializers.BooleanField(
        required=False,
        default=False,
        help_text="Start a new sampling frame although complete draws of the current one built "
        "the reference sample: the next draw can then only replace the sample (refused with "
        "`confirmation_needed` without it).",
    )


class CandidatesConfirmSerializer(serializers.Serializer):
    confirm = _confirm_field()


CANDIDATES_REQUEST = inline_serializer(
    "ReferenceCandidatesUpload",
    {
        "file": serializers.FileField(
            help_text="UTF-8 text, one `key<TAB>document` line per candidate item, or JSON Lines "
            '(`{"key": ..., "document": ..., "payload": {...}}`, `.jsonl`). Replaces every '
            "candidate and starts a new sampling frame; refused while a sample is being "
            "verified."
        ),
        "confirm": _confirm_field(),
    },
)


class SettledCandidateSerializer(serializers.Serializer):
    key = serializers.CharField()
    posterior = serializers.FloatField()
    true = serializers.BooleanField()


class ReferenceSampleSerializer(serializers.Serializer):
    """One draw of documents and how far its verification is."""

    id = serializers.IntegerField(source="pk")
    state = serializers.CharField(
        help_text="`verifying`, then `complete`; or `cancelled` by an organizer."
    )
    seed = serializers.IntegerField(help_text="The draw's seed (it picks the same documents).")
    size = serializers.IntegerField(help_text="Documents drawn.")
    n_documents = serializers.IntegerField(
        help_text="Documents there were to draw from (those no complete draw of the sampling "
        "frame had taken, or every one for a draw that replaces the sample)."
    )
    documents = serializers.ListField(child=serializers.CharField(), help_text="Drawn, in order.")
    replace = serializers.BooleanField(
        help_text="Replaces the reference sample once complete (else adds to it)."
    )
    frame = serializers.IntegerField(help_text="The sampling frame the draw belongs to.")
    candidates = serializers.IntegerField(source="n_candidates")
    resolved = serializers.IntegerField(
        source="n_resolved",
        help_text="Candidates whose label is settled at the task's confidence (latest estimation).",
    )
    true = serializers.IntegerField(source="n_true", help_text="Resolved candidates found true.")
    looks = serializers.IntegerField(
        source="n_looks", help_text="Further judgments asked on doubtful candidates."
    )
    stuck_candidates = serializers.ListField(
        source="stuck",
        child=serializers.CharField(),
        help_text="Keys of candidates still doubtful that can get no further judgment from the "
        "task's annotators: the draw cannot complete until their label is exact (a gold "
        "answer), an annotator joins, its organizers settle it (`settle/`), or it is cancelled.",
    )
    settle_requested_at = serializers.DateTimeField(
        allow_null=True,
        help_text="When its organizers asked to settle it (decide its stuck candidates by their "
        "answers as they stand): the next estimation that finds every candidate in doubt stuck "
        "completes it.",
    )
    settled = serializers.SerializerMethodField(
        help_text="Stuck candidates its completion decided by their posterior, below the "
        "task's confidence."
    )
    settled_candidates = SettledCandidateSerializer(
        source="settled",
        many=True,
        help_text="Those candidates, by key: their posterior (the probability that each is "
        "true, as the answers stand) and the label it gave (true above one half).",
    )
    created_at = serializers.DateTimeField()
    completed_at = serializers.DateTimeField(allow_null=True)
    reference_version = serializers.IntegerField(
        allow_null=True, help_text="The reference version its completion wrote."
    )
    reference_items = serializers.IntegerField(
        allow_null=True, help_text="Items of the reference sample that version holds."
    )
    reference_documents = serializers.IntegerField(
        allow_null=True, help_text="Documents of the reference sample that version holds."
    )
    cancelled_at = serializers.DateTimeField(allow_null=True)

    def get_settled(self, sample) -> int:
        return len(sample.settled)


class ReferenceSampleStatusSerializer(serializers.Serializer):
    documents = serializers.IntegerField(help_text="Candidate documents uploaded.")
    candidates = serializers.IntegerField(help_text="Candidate items uploaded.")
    reference = ReferenceSizeSerializer(help_text="The reference sample now.")
    documents_drawn = serializers.IntegerField(
        help_text="Documents the complete draws of the current sampling frame took."
    )
    documents_left = serializers.IntegerField(help_text="Documents a further draw may take.")
    adds_to_sample = serializers.BooleanField(
        help_text="Whether a draw without `replace` adds to the reference sample (false: the "
        "sample was uploaded as a file, or drawn from candidates replaced since; a draw must "
        "replace it)."
    )
    sample = ReferenceSampleSerializer(allow_null=True, help_text="The latest draw, if any.")


class ReferenceSampleView(ApiView):
    """``GET``: the candidates uploaded and the latest draw's progress (its organizers)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="tasks_reference_sample_retrieve",
        responses=with_errors({200: ReferenceSampleStatusSerializer}, 401, 403, 404),
    )
    def get(self, request, slug: str):
        task = self.organized_task(slug)
        return Response(ReferenceSampleStatusSerializer(reference_sample_status(task)).data)


class ReferenceCandidatesView(OrganizerUploadView):
    """``POST``: receive the documents' candidate items that replace the task's (its
    organizers); a worker loads them, all or nothing, the first problems with their lines."""

    @extend_schema(
        operation_id="tasks_reference_sample_candidates_create",
        request={"multipart/form-data": CANDIDATES_REQUEST},
        responses=with_errors(ACCEPTED, 400, 401, 403, 404, 409, 413, 429),
    )
    def post(self, request, slug: str):
        def confirmed() -> dict:
            fields = CandidatesConfirmSerializer(
                data={"confirm": request.data.get("confirm", False)}
            )
            fields.is_valid(raise_exception=True)
            return {"options": {"confirm": fields.validated_data["confirm"]}}

        return self.receive(slug, OrganizerUpload.Kind.CANDIDATES, confirmed)
