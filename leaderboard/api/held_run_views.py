"""REST API: the organizers' actions on a run held for them (most of its keys match no item of
the task and look malformed): release it or reject it. Held runs are listed with the task's runs
(``GET /api/tasks/<slug>/runs/?state=held``)."""

from __future__ import annotations

from collections.abc import Callable

from drf_spectacular.utils import extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from site_platform.api.openapi import with_errors

from ..models import Run
from ..services.held_runs import reject_held_run, release_run
from .serializers import RunDetailSerializer
from .views import ApiView


# The base of the two actions (a comment, not a docstring: the schema would show it).
class HeldRunActionView(ApiView):
    permission_classes = [IsAuthenticated]
    service: Callable[..., Run]  # set by each action

    def organized_run(self, run_id: int) -> Run:
        """The run if the user may see it (else 404) and organizes its task (else 403)."""
        run = self.run(run_id)
        slug = run.task.slug
        self.organized_task(
            slug, refusal=f"only the organizers of task {slug!r} may release or reject its runs"
        )
        return run

    @extend_schema(
        request=None, responses=with_errors({200: RunDetailSerializer}, 401, 403, 404, 409)
    )
    def post(self, request, run_id: int):
        self.service(run=self.organized_run(run_id))
        return Response(RunDetailSerializer(self.run(run_id), context={"request": request}).data)


class RunReleaseView(HeldRunActionView):
    """Release a held run (its task's organizers): it is validated again, not held again, and
    queued as usual. Idempotent; ``409 not_held`` for a run that was never held."""

    service = staticmethod(release_run)


class RunRejectView(HeldRunActionView):
    """Reject a held run (its task's organizers): it uses no quota, its team sees why.
    Idempotent; ``409 not_held`` for a run that is not held."""

    service = staticmethod(reject_held_run)
