"""The task list, the public board, snapshot permalinks and downloads, hold and publish."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from site_platform.downloads import csv_download, json_download

from .. import phases, presenters, selectors
from ..exports import snapshot_csv_rows
from ..exports import snapshot_json as snapshot_json_data
from ..kinds import kind_for
from ..services.board import hold_board, publish_board
from . import organize_sections
from .common import render_task_page


def home(request):
    return render(
        request,
        "leaderboard/home.html",
        {
            "tasks": presenters.task_list(request.user),
            "can_create_tasks": selectors.can_create_tasks(request.user),
        },
    )


def _sort_or_400(request, task):
    metrics = kind_for(task).board_measures(task)
    sort = request.GET.get("sort", presenters.board.parse_sort(None, metrics))
    if sort not in metrics:
        return None, HttpResponseBadRequest(
            f"Unknown sort {sort!r}: use one of {', '.join(metrics)}.",
            content_type="text/plain; charset=utf-8",
        )
    return sort, None


def _render_board(request, task, board, *, permalink: bool):
    organizer = selectors.is_organizer(task=task, user=request.user)
    hold = presenters.hold_status(task) if organizer or phases.board_held(task) else None
    return render_task_page(
        request,
        "leaderboard/board.html",
        task,
        {"board": board, "hold": hold, "permalink": permalink},
        organizer=organizer,
    )


@require_GET
def board(request, slug: str):
    task = selectors.task_for(slug, request.user)
    sort, error = _sort_or_400(request, task)
    if error:
        return error
    board = presenters.board_for(task=task, sort=sort)
    return _render_board(request, task, board, permalink=False)


@require_GET
def snapshots(request, slug: str):
    task = selectors.task_for(slug, request.user)
    snapshots = presenters.snapshot_list(task=task, user=request.user)
    return render_task_page(request, "leaderboard/snapshots.html", task, {"snapshots": snapshots})


@require_GET
def snapshot_detail(request, slug: str, version: int):
    task = selectors.task_for(slug, request.user)
    sort, error = _sort_or_400(request, task)
    if error:
        return error
    board = presenters.snapshot_board(task=task, version=version, user=request.user, sort=sort)
    if board is None:
        raise Http404("No such snapshot.")
    return _render_board(request, task, board, permalink=True)


def _download_snapshot(request, slug: str, version: int):
    task = selectors.task_for(slug, request.user)
    snapshot = selectors.snapshot_for(task=task, version=version, user=request.user)
    if snapshot is None:
        raise Http404("No such snapshot.")
    return snapshot


@require_GET
def snapshot_csv(request, slug: str, version: int):
    snapshot = _download_snapshot(request, slug, version)
    return csv_download(snapshot_csv_rows(snapshot), f"{slug}-v{version}.csv")


@require_GET
def snapshot_json(request, slug: str, version: int):
    snapshot = _download_snapshot(request, slug, version)
    return json_download(snapshot_json_data(snapshot), f"{slug}-v{version}.json")


def _back(request, task):
    """Back to the organize section the buttons were on (``next``), else the board."""
    section = organize_sections.next_section(request, None)
    if section is not None:
        return organize_sections.to_section(task, section)
    return redirect(reverse("task_board", args=[task.slug]))


@login_required
@require_POST
def hold(request, slug: str):
    task = selectors.task_for(slug, request.user, role="organizer")
    hold_board(task=task)
    messages.success(request, "The public board is held: new snapshots wait until you publish.")
    return _back(request, task)


@login_required
@require_POST
def publish(request, slug: str):
    task = selectors.task_for(slug, request.user, role="organizer")
    snapshot = publish_board(task=task)
    if snapshot is None:
        messages.info(request, "There is no snapshot to publish yet; the board is no longer held.")
    else:
        messages.success(
            request,
            f"Published: the public board shows snapshot "
            f"v{snapshot.version}, and new snapshots publish as they come.",
        )
    return _back(request, task)
