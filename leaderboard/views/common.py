"""Helpers every page view uses: finding the task, the organizer check, file downloads."""

from __future__ import annotations

import json

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, StreamingHttpResponse

from .. import page_selectors
from ..exports import csv_lines


def task_or_404(request, slug: str):
    task = page_selectors.visible_task(request.user, slug)
    if task is None:
        raise Http404("No such task.")
    return task


def organized_task_or_403(request, slug: str):
    """The task if the (signed-in) user organizes it; 404 unknown, 403 otherwise."""
    task = task_or_404(request, slug)
    if not page_selectors.is_organizer(task=task, user=request.user):
        raise PermissionDenied("Only the task's organizers can do this.")
    return task


def csv_download(rows, filename: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(csv_lines(rows), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def json_download(data, filename: str) -> HttpResponse:
    response = HttpResponse(json.dumps(data, ensure_ascii=False),
                            content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
