"""The organizer page of a task: settings, label budget, cost per run, exports, hold/publish."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_http_methods

from .. import presenters, selectors
from ..exports import verified_items_rows
from ..forms import TaskSettingsForm
from ..services.tasks import TaskSettingsError, update_task
from .common import csv_download, render_task_page


@login_required
@require_http_methods(["GET", "POST"])
def organize(request, slug: str):
    task = selectors.task_for(slug, request.user, role="organizer")
    form = TaskSettingsForm(task=task)
    status = 200
    if request.method == "POST":
        form = TaskSettingsForm(request.POST, task=task)
        if form.is_valid():
            changes = form.changed_settings()
            try:
                update_task(task=task, **changes)
            except TaskSettingsError as exc:
                task.refresh_from_db()
                form.add_service_errors(exc.field_errors)
            else:
                messages.success(
                    request,
                    "Settings saved: " + ", ".join(sorted(changes))
                    if changes
                    else "Nothing changed.",
                )
                return redirect("task_organize", slug=task.slug)
        status = 400
    return render_task_page(
        request,
        "leaderboard/organize.html",
        task,
        {
            "form": form,
            "budget": presenters.budget_summary(task),
            "hold": presenters.hold_status(task),
            "queue_url": f"/annotate/{task.slug}/queue/",
            "approval_requests": selectors.approval_requests(task),
        },
        organizer=True,
        status=status,
    )


@login_required
@require_GET
def verified_items_csv(request, slug: str):
    task = selectors.task_for(slug, request.user, role="organizer")
    return csv_download(verified_items_rows(task), f"{task.slug}-verified-items.csv")
