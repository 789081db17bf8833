"""REST API actions on one run: withdraw it (its team, the task's organizers), mark it a baseline
(the task's organizers)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from site_platform.api.openapi import with_errors

from ..services.withdrawal import set_baseline, withdraw_run
from .serializers import BaselineSerializer, RunDetailSerializer
from .views import ApiView


class RunWithdrawView(ApiView):
    """Withdraw the run for good: it leaves the board and the planner, the requests no other
    run needs leave the queue, answers given stay. Its quota slot is given back if nothing was
    asked of annotators for it and no snapshot estimated it (``quota_refunded``). Idempotent."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=None, responses=with_errors({200: RunDetailSerializer}, 401, 403, 404, 409)
    )
    def post(self, request, run_id: int):
        run = withdraw_run(run=self.run(run_id), by=request.user)
        return Response(RunDetailSerializer(self.run(run.pk), context={"request": request}).data)


class RunBaselineView(ApiView):
    """Mark the run as a baseline (``{"baseline": true}``, the default) or rank it again
    (``false``): a baseline is listed on the board, marked, without a rank. Organizers of the
    task only; idempotent."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=BaselineSerializer,
        responses=with_errors({200: RunDetailSerializer}, 400, 401, 403, 404, 409),
    )
    def post(self, request, run_id: int):
        run = self.run(run_id)
        fields = self.validated(BaselineSerializer)
        set_baseline(run=run, by=request.user, baseline=fields["baseline"])
        return Response(RunDetailSerializer(self.run(run.pk), context={"request": request}).data)
