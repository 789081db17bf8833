"""The organize page's checklist (``_readiness.html``): what the task needs before it opens
(:func:`readiness_context`), and its open and close buttons (:func:`set_state_page`)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from .. import selectors
from ..models import Task
from ..services.tasks import TaskNotReady, TaskSettingsError, set_task_state
from . import organize

# What the buttons may ask for: a task goes back to draft only from its settings form.
BUTTON_STATES = {Task.State.OPEN: "opened: it takes runs", Task.State.CLOSED: "closed"}


def readiness_context(task: Task, refused: TaskSettingsError | None = None) -> dict:
    """The checklist as it stands (as the refusal to open found it, if one did), and the
    refused change of state."""
    found = refused.readiness if isinstance(refused, TaskNotReady) else None
    return {
        "readiness": found or selectors.task_readiness(task),
        "state_refused": refused,
        "not_ready": found is not None,
    }


@login_required
@require_POST
def set_state_page(request, slug: str):
    """Open or close the task; an opening its checklist refuses shows the page again (409)
    with the checklist at the top saying what is missing."""
    task = selectors.task_for(slug, request.user, role="organizer")
    state = request.POST.get("state", "")
    if state not in BUTTON_STATES:
        refused = TaskSettingsError(
            f"these buttons open or close the task, not {state!r}: nothing was changed",
            {"state": ["choose open or closed"]},
        )
        return organize.organize_page(request, task, state_error=refused)
    try:
        set_task_state(task=task, state=state)
    except TaskSettingsError as exc:
        task.refresh_from_db()
        return organize.organize_page(request, task, state_error=exc)
    messages.success(request, f"Task {task.slug} {BUTTON_STATES[state]}.")
    return redirect("task_organize", slug=task.slug)
