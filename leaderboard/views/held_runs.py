"""The organizers' actions on a run held for them (its keys look like junk): release it (it is
validated again and queued) or reject it (it uses no quota). The organize overview lists held
runs (``_held_runs.html``); a refusal shows it again with the reason at its top and its
status."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.views.decorators.http import require_POST

from site_platform.errors import ServiceError

from .. import selectors
from ..models import Run
from ..services.held_runs import reject_held_run, release_run
from .organize_sections import refused, to_section


def _act(request, slug: str, run_id: int, *, action: str):
    task = selectors.task_for(slug, request.user, role="organizer")
    run = Run.objects.filter(task=task, pk=run_id).select_related("team").first()
    if run is None:
        raise Http404(f"task {task.slug} has no run {run_id}")
    service = release_run if action == "release" else reject_held_run
    try:
        service(run=run)
    except ServiceError as exc:
        return refused(request, task, action, exc)
    done = (
        "released: it is validated again, then evaluated"
        if action == "release"
        else "rejected: it uses no quota"
    )
    messages.success(request, f"Run {run.name!r} of team {run.team.name} {done}.")
    return to_section(task, "overview")


@login_required
@require_POST
def release_held_run_page(request, slug: str, run_id: int):
    return _act(request, slug, run_id, action="release")


@login_required
@require_POST
def reject_held_run_page(request, slug: str, run_id: int):
    return _act(request, slug, run_id, action="reject")
