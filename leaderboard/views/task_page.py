"""The task page (overview, rules, terms, data files), a team's acceptance of the terms, the
downloads of data files; and the organize pages' Task page section: the page's text with a live
preview, the acceptances, the data files (``section_contexts.task_page_context``)."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from site_platform.downloads import stored_file_response
from site_platform.errors import ServiceError, with_headers

from .. import selectors
from ..forms import TaskFileForm, TaskPageTextForm, TermsAcceptForm
from ..models import Task
from ..page_text import render_markdown
from ..services.task_files import (
    add_task_file,
    change_task_file,
    delete_task_file,
    task_file_limit,
)
from ..services.terms import accept_terms
from . import organize_sections
from .common import render_task_page
from .organize import JSON_HTML_ESCAPES, save_task_form, upload_to_task

OVERVIEW_PAGE = "leaderboard/task_overview.html"


def _overview(request, task: Task, *, error: ServiceError | None = None, status: int = 200):
    teams = list(selectors.teams_of(request.user))
    response = render_task_page(
        request,
        OVERVIEW_PAGE,
        task,
        {
            "terms_digest": selectors.terms_digest(task),
            "terms_teams": selectors.terms_of_teams(task=task, teams=teams),
            "files": list(selectors.task_files(task)),
            "data_access": selectors.data_access_for(task=task, user=request.user),
            "error": error,
        },
        status=error.http_status if error is not None else status,
    )
    return with_headers(response, error) if error is not None else response


@require_GET
def task_overview(request, slug: str):
    """The task page: overview, rules, terms (and where the user's teams stand), data files."""
    return _overview(request, selectors.task_for(slug, request.user))


@login_required
@require_POST
def terms_accept(request, slug: str):
    """A member accepts the version of the terms the page showed for their team."""
    task = selectors.task_for(slug, request.user)
    form = TermsAcceptForm(request.POST)
    if not form.is_valid():
        return _overview(
            request, task, error=ServiceError("choose a team and accept the terms shown")
        )
    team = selectors.team_for(team_id=form.cleaned_data["team"], user=request.user)
    try:
        accept_terms(task=task, team=team, user=request.user, digest=form.cleaned_data["digest"])
    except ServiceError as exc:
        return _overview(request, task, error=exc)
    messages.success(request, f"{team.name} accepted the terms of {task.title}.")
    if form.cleaned_data["next"] == "overview":
        return redirect("task_overview", slug=task.slug)
    return redirect("submit_run", slug=task.slug)


@require_GET
def task_file_download(request, slug: str, file_id: int):
    task = selectors.task_for(slug, request.user)
    task_file = selectors.task_file_for(task=task, file_id=file_id)
    access = selectors.data_access_for(task=task, user=request.user)
    if not access.allowed:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        error = ServiceError(access.reason, code="terms_not_accepted", http_status=403)
        return _overview(request, task, error=error)
    try:
        return stored_file_response(
            task_file.stored, file_name=task_file.file_name, size=task_file.size
        )
    except ServiceError as exc:  # the file storage failing (503)
        return _overview(request, task, error=exc)


# -- the organize pages' Task page section --------------------------------------------------------
@login_required
@require_http_methods(["GET", "POST"])
def organize_page_text(request, slug: str):
    """The Task page section; a POST saves the page's text."""
    task = selectors.task_for(slug, request.user, role="organizer")
    if request.method != "POST":
        return organize_sections.section_page(request, task, "task_page")
    form = TaskPageTextForm(request.POST, task=task)
    return save_task_form(request, task, form, action="page_text", kept="page_text_form")


@login_required
@require_POST
def page_text_preview(request):
    """Markdown as the task page shows it (JSON ``{"html"}`` for the organize page's script)."""
    if not selectors.may_set_up_tasks(request.user):
        raise PermissionDenied("only organizers and task creators preview task pages")
    text = json.dumps({"html": render_markdown(request.POST.get("text", ""))})
    # Markup characters escaped in the JSON, as the display template's preview does.
    return HttpResponse(text.translate(JSON_HTML_ESCAPES), content_type="application/json")


def _file_fields(form: TaskFileForm) -> dict:
    return {name: form.cleaned_data[name] for name in ("kind", "title", "description")}


@login_required
@require_POST
def organize_file_add(request, slug: str):
    def load(task, form):
        upload = form.cleaned_data["file"]
        added = add_task_file(
            task=task, user=request.user, upload=upload, file_name=upload.name, **_file_fields(form)
        )
        return f"Data file added: {added.title} ({added.file_name})."

    return upload_to_task(
        request,
        slug,
        load,
        what="task_file",
        form_class=TaskFileForm,
        limit=task_file_limit(),
        keep="task_file_form",
    )


@login_required
@require_POST
def organize_file_change(request, slug: str, file_id: int):
    def load(task, form):
        task_file = selectors.task_file_for(task=task, file_id=file_id)
        upload = form.cleaned_data["file"]
        changed = change_task_file(
            task_file=task_file,
            user=request.user,
            upload=upload,
            file_name=upload.name if upload else "",
            **_file_fields(form),
        )
        return f"Data file saved: {changed.title} ({changed.file_name})."

    def form_class(data, files, **kwargs):
        return TaskFileForm(data, files, file_required=False, **kwargs)

    return upload_to_task(
        request,
        slug,
        load,
        what="task_file",
        form_class=form_class,
        limit=task_file_limit(),
        auto_id=f"id_file{file_id}_%s",
        keep="changed_file_form",
    )


@login_required
@require_POST
def organize_file_delete(request, slug: str, file_id: int):
    task = selectors.task_for(slug, request.user, role="organizer")
    task_file = selectors.task_file_for(task=task, file_id=file_id)
    delete_task_file(task_file=task_file)
    messages.success(request, f"Data file deleted: {task_file.title} ({task_file.file_name}).")
    return organize_sections.to_section(task, "task_page")
