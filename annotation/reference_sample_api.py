"""The REST API's reference sample draw, ``POST /api/tasks/<slug>/reference-sample/draw/`` (a
task's organizers), beside its status and candidates upload in ``leaderboard.api``.

A draw queues verification requests (this app's), and the leaderboard app sits below this one,
so the view is here and ``config/urls.py`` serves it among the REST API's routes (``api``
namespace: ``api:task-reference-sample-draw``), with the cancel of a sample still being
verified, ``POST /api/tasks/<slug>/reference-sample/cancel/``, and its settling,
``POST /api/tasks/<slug>/reference-sample/settle/``.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from leaderboard.api.reference_sample_views import ReferenceSampleSerializer
from leaderboard.api.views import ApiView
from site_platform.api.openapi import with_errors

from .serializers import StrictSerializer
from .services import cancel_reference_sample, draw_reference_sample, settle_reference_sample


class DrawSerializer(StrictSerializer):
    size = serializers.IntegerField(min_value=1, help_text="Documents to draw.")
    seed = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        help_text="The draw's seed; a random one (recorded) when left out.",
    )
    replace = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Draw from every document and, once complete, replace the reference sample "
        "(a new sampling frame); without it the draw takes documents not drawn yet and adds "
        "to the sample.",
    )
    confirm = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Needed with `replace` while the reference sample has items.",
    )


class ReferenceSampleDrawView(ApiView):
    """``POST``: draw ``size`` of the candidate documents at random (seeded, recorded) and queue
    every candidate of them for verification: documents not drawn yet, whose true candidates
    are added to the sample, or (``replace``) any, to replace it. 409 while another sample is
    being verified, for a replacement not confirmed, for an addition to a sample that was not
    drawn from these candidates, and when every document is drawn."""

    permission_classes = [IsAuthenticated]
    throttle_scope = "uploads"

    @extend_schema(
        operation_id="tasks_reference_sample_draw_create",
        request=DrawSerializer,
        responses=with_errors({201: ReferenceSampleSerializer}, 400, 401, 403, 404, 409, 429),
    )
    def post(self, request, slug: str):
        task = self.organized_task(slug)
        fields = self.validated(DrawSerializer)
        sample = draw_reference_sample(
            task=task,
            user=request.user,
            size=fields["size"],
            seed=fields.get("seed"),
            replace=fields["replace"],
            confirm=fields["confirm"],
        )
        return Response(ReferenceSampleSerializer(sample).data, status=status.HTTP_201_CREATED)


class ReferenceSampleCancelView(ApiView):
    """``POST``: cancel the sample still being verified (the reference sample is unchanged; a
    new sample can then be drawn). A sample already cancelled is returned as it is (200); 409
    when the latest sample is complete (``sample_complete``) or none was drawn (``no_sample``)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="tasks_reference_sample_cancel_create",
        request=None,
        responses=with_errors({200: ReferenceSampleSerializer}, 401, 403, 404, 409, 429),
    )
    def post(self, request, slug: str):
        task = self.organized_task(slug)
        sample = cancel_reference_sample(task=task, by=request.user)
        return Response(ReferenceSampleSerializer(sample).data)


class ReferenceSampleSettleView(ApiView):
    """``POST``: ask that the draw being verified be completed with its stuck candidates decided
    by their answers as they stand (true when the posterior is above one half), below the task's
    confidence; the next estimation does it (202, the draw still verifying with
    ``settle_requested_at``; asking again returns it unchanged). 409 when no draw is verifying
    (``no_draw_verifying``), none of its candidates is stuck (``nothing_stuck``), or some still
    await a judgment (``answers_pending``)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="tasks_reference_sample_settle_create",
        request=None,
        responses=with_errors({202: ReferenceSampleSerializer}, 401, 403, 404, 409, 429),
    )
    def post(self, request, slug: str):
        task = self.organized_task(slug)
        sample = settle_reference_sample(task=task, by=request.user)
        return Response(ReferenceSampleSerializer(sample).data, status=status.HTTP_202_ACCEPTED)
