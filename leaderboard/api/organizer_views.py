"""REST API for a task's organizers: its readiness checklist, hold and publish the board, label
spend, the export of verified items; and every caller's submission quota."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from site_platform.api.openapi import FORMAT, errors, with_errors
from site_platform.api.views import CsvExportMixin
from site_platform.downloads import json_chunks_download

from .. import phases
from ..exports import verified_items_json_chunks, verified_items_rows
from ..kinds import kind_for
from ..selectors import (
    label_spend,
    latest_published_snapshot,
    quotas_for_user,
    runs_visible_to,
    upload_limits,
)
from ..services.board import hold_board, publish_board
from .board_serializers import (
    BoardStateSerializer,
    PublishSerializer,
    QuotaSerializer,
    SpendSerializer,
)
from .task_serializers import ReadinessSerializer
from .views import ApiView


def board_state(task) -> dict:
    latest = latest_published_snapshot(task)
    return {
        "task": task.slug,
        "board_held": phases.board_held(task),
        "latest_published": latest.version if latest else None,
    }


class ReadinessView(ApiView):
    """What the task needs before it opens, each with its state and where it is done. Opening
    (``PATCH`` ``state: open``) is refused (409 ``task_not_ready``) while one is missing."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses=with_errors({200: ReadinessSerializer}, 401, 403, 404))
    def get(self, request, slug: str):
        task = self.organized_task(slug)
        return Response(ReadinessSerializer(kind_for(task).readiness(task)).data)


class HoldBoardView(ApiView):
    """Hold the public board: new snapshots wait, unpublished, until the board is published.
    Idempotent."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses=with_errors({200: BoardStateSerializer}, 401, 403, 404))
    def post(self, request, slug: str):
        task = hold_board(task=self.organized_task(slug))
        return Response(board_state(task))


class PublishBoardView(ApiView):
    """Publish every held snapshot (the latest becomes the public board). With ``release_hold``
    (default true) the hold ends; false publishes once and keeps holding. Idempotent."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=PublishSerializer,
        responses=with_errors({200: BoardStateSerializer}, 400, 401, 403, 404),
    )
    def post(self, request, slug: str):
        task = self.organized_task(slug)
        options = self.validated(PublishSerializer)
        publish_board(task=task, release_hold=options["release_hold"])
        return Response(board_state(task))


class SpendView(ApiView):
    """The label budget (spent: items sent to annotators) and what each run cost (items
    requested and verified for it, from the stored counts)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses=with_errors({200: SpendSerializer}, 401, 403, 404))
    def get(self, request, slug: str):
        task = self.organized_task(slug)
        spend = label_spend(task)
        runs = [
            {
                "id": run.pk,
                "name": run.name,
                "team": run.team.name,
                "state": run.state,
                "n_predictions": run.n_predictions,
                "n_requested": run.n_requested,
                "n_verified": run.n_verified,
            }
            for run in runs_visible_to(task=task, user=request.user)
        ]
        return Response(
            {
                "task": task.slug,
                "label_budget": spend.budget,
                "labels_requested": spend.requested,
                "labels_verified": spend.verified,
                "remaining": spend.remaining,
                "runs": runs,
            }
        )


class VerifiedItemsExportView(CsvExportMixin, ApiView):
    """Every verified item of the task (key, posterior, judgments, says_correct, verified_at),
    streamed: JSON ``{"task", "items": [...]}`` or CSV with ``?format=csv``. Organizers only."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        parameters=[FORMAT],
        responses={
            (200, "application/json"): OpenApiTypes.OBJECT,
            (200, "text/csv"): OpenApiTypes.STR,
            **errors(401, 403, 404),
        },
    )
    def get(self, request, slug: str):
        task = self.organized_task(slug)
        if self.wants_csv():
            return self.csv_response(verified_items_rows(task), f"{task.slug}-verified-items.csv")
        return json_chunks_download(
            verified_items_json_chunks(task), f"{task.slug}-verified-items.json"
        )


class QuotaView(ApiView):
    """What the caller may upload to the task: the file's limits (bytes, predictions) and each
    of the caller's teams' submission quota, per day and in total, with refunds and when the
    next daily slot frees up."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses=with_errors({200: QuotaSerializer}, 401, 404))
    def get(self, request, slug: str):
        task = self.task(slug)
        limits = upload_limits(task)
        return Response(
            QuotaSerializer(
                {
                    "task": task.slug,
                    "max_upload_bytes": limits.max_bytes,
                    "max_predictions_per_run": limits.max_predictions,
                    "teams": quotas_for_user(task=task, user=request.user),
                }
            ).data
        )
