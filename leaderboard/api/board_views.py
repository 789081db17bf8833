"""REST API of the public board: the latest published snapshot, snapshot permalinks, CSV/JSON
exports, and a run's estimates across snapshots.

Held snapshots (written while an organizer holds the board) are visible to the task's organizers
only; everyone else gets 404 for them, as for a version that does not exist.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions
from rest_framework.response import Response

from evaluation.core.closed_pool import CLOSED_POOL_MEASURES
from evaluation.core.measures import OPEN_MEASURES
from site_platform.api.openapi import FORMAT, PAGE, errors, page_of, with_errors
from site_platform.api.views import CsvExportMixin

from ..board_pairs import snapshot_neighbours
from ..exports import snapshot_csv_rows, snapshot_json, snapshot_metrics
from ..models import LeaderboardSnapshot
from ..selectors import (
    board_order,
    latest_published_snapshot,
    run_estimates_visible_to,
    snapshot_for,
    snapshots_visible_to,
    without_withdrawn,
)
from .board_serializers import (
    EstimateSerializer,
    RunHistorySerializer,
    SnapshotSerializer,
    SnapshotSummarySerializer,
)
from .views import ApiView

SORT = OpenApiParameter(
    "sort",
    OpenApiTypes.STR,
    # Every metric a task may show (an open task's three, a closed pool's measures); a task
    # answers 400 for one it does not show.
    enum=list(dict.fromkeys((*OPEN_MEASURES, *CLOSED_POOL_MEASURES))),
    description="Order the rows by this metric's value (runs without a "
    "value last): one of the task's measures (a closed pool's `measures`; else precision, "
    "recall, f1), 400 otherwise. Default: the stored order.",
)
ORDER = OpenApiParameter(
    "order",
    OpenApiTypes.STR,
    enum=["desc", "asc"],
    description="With `sort`: descending (default) or ascending.",
)
SNAPSHOT_RESPONSES = {
    (200, "application/json"): SnapshotSerializer,
    (200, "text/csv"): OpenApiTypes.STR,
}


def sorted_rows(
    rows: list[dict],
    *,
    sort: str | None,
    order: str | None,
    metrics: tuple[str, ...] = OPEN_MEASURES,
) -> list[dict]:
    """``rows`` in the board order (``selectors.board_order``) of one of ``metrics`` (the
    snapshot's: a closed pool's measures), or as stored."""
    if sort is None:
        if order is not None:
            raise exceptions.ValidationError({"order": ["only together with `sort`"]})
        return rows
    if sort not in metrics:
        raise exceptions.ValidationError({"sort": [f"one of {', '.join(metrics)}"]})
    if order not in (None, "asc", "desc"):
        raise exceptions.ValidationError({"order": ["`asc` or `desc`"]})
    return board_order(rows, sort, descending=order != "asc")


class SnapshotResponseMixin(CsvExportMixin):
    # The board leaves out runs withdrawn since the snapshot; a snapshot by version is its record.
    board = False

    def snapshot_response(self, snapshot: LeaderboardSnapshot):
        if self.wants_csv():
            return self.csv_response(
                snapshot_csv_rows(snapshot), f"{snapshot.task.slug}-snapshot-{snapshot.version}.csv"
            )
        data = snapshot_json(snapshot)
        if self.board:
            data["rows"] = without_withdrawn(snapshot.task, data["rows"])
        data["rows"] = sorted_rows(
            data["rows"],
            sort=self.request.query_params.get("sort"),
            order=self.request.query_params.get("order"),
            metrics=snapshot_metrics(snapshot),
        )
        # The pair view of the rows shown (a board leaves out the runs withdrawn since).
        data["pairs"] = {
            metric: [pair.as_dict() for pair in pairs]
            for metric, pairs in snapshot_neighbours(
                snapshot, snapshot_metrics(snapshot), rows=data["rows"]
            ).items()
        }
        return Response(data)


class BoardView(SnapshotResponseMixin, ApiView):
    """The public board: the task's latest published snapshot, less the runs withdrawn since
    (in CSV, the snapshot as computed)."""

    board = True

    @extend_schema(
        parameters=[FORMAT, SORT, ORDER], responses={**SNAPSHOT_RESPONSES, **errors(400, 404)}
    )
    def get(self, request, slug: str):
        task = self.task(slug)
        snapshot = latest_published_snapshot(task)
        if snapshot is None:
            raise exceptions.NotFound(
                f"task {slug!r} has no published leaderboard yet", code="no_snapshot"
            )
        return self.snapshot_response(snapshot)


class SnapshotListView(ApiView):
    """The task's snapshots, newest first (published ones; organizers also see held ones)."""

    @extend_schema(
        operation_id="tasks_snapshots_list",
        parameters=[PAGE],
        responses=with_errors({200: page_of(SnapshotSummarySerializer)}, 404),
    )
    def get(self, request, slug: str):
        task = self.task(slug)
        return self.paginated(
            snapshots_visible_to(task=task, user=request.user), SnapshotSummarySerializer
        )


class SnapshotDetailView(SnapshotResponseMixin, ApiView):
    """One snapshot by version (a permalink): JSON, or CSV with ``?format=csv``."""

    @extend_schema(
        parameters=[FORMAT, SORT, ORDER], responses={**SNAPSHOT_RESPONSES, **errors(400, 404)}
    )
    def get(self, request, slug: str, version: int):
        task = self.task(slug)
        snapshot = snapshot_for(task=task, version=version, user=request.user)
        if snapshot is None:
            raise exceptions.NotFound(f"task {slug!r} has no snapshot {version}")
        return self.snapshot_response(snapshot)


class RunHistoryView(ApiView):
    """A run's estimates per metric across snapshots, oldest first (published ones; the task's
    organizers also see held ones). Visible to the run's team and the task's organizers."""

    @extend_schema(responses=with_errors({200: RunHistorySerializer}, 404))
    def get(self, request, run_id: int):
        run = self.run(run_id)
        metrics: dict[str, list] = {metric: [] for metric in OPEN_MEASURES}
        context = {"task": run.task}
        newest = None
        for estimate in run_estimates_visible_to(run=run, user=request.user):
            metrics.setdefault(estimate.metric, []).append(
                EstimateSerializer(estimate, context=context).data
            )
            newest = estimate.snapshot
        neighbours = (
            {} if newest is None else snapshot_neighbours(newest, snapshot_metrics(newest), run.pk)
        )
        return Response(
            {
                "run": run.pk,
                "metrics": metrics,
                "neighbours": {
                    metric: [pair.as_dict() for pair in pairs]
                    for metric, pairs in neighbours.items()
                },
            }
        )
