"""The overview's checklist (``_readiness.html``): its open and close buttons
(:func:`set_state_page`); what the task needs before it opens is
``section_contexts.readiness_context``."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.views.decorators.http import require_POST

from .. import selectors
from ..models import Task
from ..services.tasks import TaskNotReady, TaskSettingsError, set_task_state
from . import organize_sections

# What the buttons may ask for: a task goes back to draft only from its settings form.
BUTTON_STATES = {Task.State.OPEN: "opened: it takes runs", Task.State.CLOSED: "closed"}


@login_required
@require_POST
def set_state_page(request, slug: str):
    """Open or close the task; an opening its checklist refuses shows the overview again (409)
    with what is missing at its top, each need linked to where it is done."""
    task = selectors.task_for(slug, request.user, role="organizer")
    state = request.POST.get("state", "")
    if state not in BUTTON_STATES:
        refused = TaskSettingsError(
            f"these buttons open or close the task, not {state!r}: nothing was changed",
            {"state": ["choose open or closed"]},
        )
        return organize_sections.refused(request, task, "state", refused)
    try:
        set_task_state(task=task, state=state)
    except TaskSettingsError as exc:
        task.refresh_from_db()
        what = "The task was not opened" if isinstance(exc, TaskNotReady) else ""
        return organize_sections.refused(request, task, "state", exc, what=what)
    messages.success(request, f"Task {task.slug} {BUTTON_STATES[state]}.")
    return organize_sections.to_section(task, "overview")
