"""The organizer console: create a task (with a live preview of its display template), and a
task's organize pages (``organize_sections.py``): the overview, the settings and phases forms,
the sections that only show, the uploads of its reference sample or pool (here), gold items
(``annotation.views``) and data files (``task_page.py``) through :func:`upload_to_task`, and the
verified items' export."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from site_platform.downloads import csv_download
from site_platform.errors import ServiceError

from .. import selectors
from ..display_templates import preview_display
from ..exports import verified_items_rows
from ..forms import (
    PHASE_FIELDS,
    SETTINGS_PAGE_FIELDS,
    OrganizerUploadForm,
    PoolUploadForm,
    TaskCreateForm,
    TaskSettingsForm,
)
from ..ingestion import human_bytes
from ..models import OrganizerUpload, Task
from ..services.organizer_uploads import receive_upload
from ..services.tasks import TaskNotReady, TaskSettingsError, create_task, update_task
from . import organize_sections as sections
from .uploads import refused_upload

NEW_TASK_PAGE = "leaderboard/task_new.html"
# The preview's JSON carries organizers' payload text: its markup characters are escaped, so
# that the body is inert even to a reader that mistakes it for HTML (as ``json_script`` does).
JSON_HTML_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026"}


@login_required
@require_http_methods(["GET", "POST"])
def new_task(request):
    """Create a task; its creator organizes it (``selectors.can_create_tasks`` says who may)."""
    if not selectors.can_create_tasks(request.user):
        raise PermissionDenied("creating tasks needs the task creator role")
    form = TaskCreateForm()
    status = 200
    if request.method == "POST":
        form = TaskCreateForm(request.POST)
        if form.is_valid():
            try:
                task = create_task(organizers=[request.user], **form.task_settings())
            except TaskSettingsError as exc:
                form.add_service_errors(exc.field_errors)
            else:
                messages.success(request, f"Task {task.slug} created: you organize it.")
                return sections.to_section(task, "overview")
        status = 400
    context = {
        "form": form,
        "sample_item": sections.SAMPLE_ITEM,
        "reference_min_items": selectors.REFERENCE_MIN_ITEMS,
        "reference_min_documents": selectors.REFERENCE_MIN_DOCUMENTS,
        "gold_min_answers": Task._meta.get_field("gold_min_answers").get_default(),
    }
    return render(request, NEW_TASK_PAGE, context, status=status)


@login_required
@require_POST
def display_preview(request):
    """A sample item laid out with a display template, as annotators would see it (JSON for the
    page's script, which draws it with the annotator page's own code), with the template's and
    the sample's problems and the fields the template names that the sample does not have."""
    if not selectors.may_set_up_tasks(request.user):
        raise PermissionDenied("only organizers and task creators preview display templates")
    preview = preview_display(
        request.POST.get("display_template", ""), request.POST.get("sample", "")
    )
    text = json.dumps(preview.as_dict(), ensure_ascii=False)
    return HttpResponse(
        text.translate(JSON_HTML_ESCAPES),
        content_type="application/json",
        status=400 if preview.problems else 200,
    )


@login_required
@require_http_methods(["GET", "POST"])
def organize(request, slug: str):
    """The overview (checklist, what needs attention); a POST is the whole settings form, phases
    included, as this page took it before it had sections."""
    task = selectors.task_for(slug, request.user, role="organizer")
    if request.method != "POST":
        return sections.section_page(request, task, "overview")
    return save_task_form(
        request, task, TaskSettingsForm(request.POST, task=task), action="settings"
    )


@login_required
@require_GET
def organize_section(request, slug: str, section: str):
    """A section that only shows what it holds (its forms post elsewhere)."""
    task = selectors.task_for(slug, request.user, role="organizer")
    return sections.section_page(request, task, section)


def _task_form_page(request, slug: str, *, action: str, field_names):
    task = selectors.task_for(slug, request.user, role="organizer")
    if request.method != "POST":
        return sections.section_page(request, task, sections.REFUSED[action].section)
    form = TaskSettingsForm(request.POST, task=task, field_names=field_names)
    return save_task_form(request, task, form, action=action)


@login_required
@require_http_methods(["GET", "POST"])
def organize_settings(request, slug: str):
    return _task_form_page(request, slug, action="settings", field_names=SETTINGS_PAGE_FIELDS)


@login_required
@require_http_methods(["GET", "POST"])
def organize_phases(request, slug: str):
    return _task_form_page(request, slug, action="phases", field_names=PHASE_FIELDS)


SAVED = {"settings": "Settings saved", "phases": "Dates saved", "page_text": "Task page saved"}


def save_task_form(request, task, form, *, action: str, kept: str = "form"):
    """Save what a task form (:class:`~leaderboard.forms.TaskFieldsForm`) changed, through
    ``update_task``: back to the section of ``action`` saying which fields changed, or that
    section again with the refusal at its top and the form as sent (``kept``: its name in the
    section's context)."""
    error: TaskSettingsError | None = None
    if form.is_valid():
        changes = form.changed_settings()
        try:
            update_task(task=task, **changes)
        except TaskSettingsError as exc:
            task.refresh_from_db()
            form.add_service_errors(exc.field_errors)
            error = exc
        else:
            changed = ", ".join(sorted(changes))
            messages.success(
                request, f"{SAVED[action]}: {changed}" if changes else "Nothing changed."
            )
            return sections.to_section(task, sections.REFUSED[action].section)
    not_opened = "The task was not opened, and nothing else was saved"
    return sections.refused(
        request,
        task,
        action,
        error,
        form=form,
        what=not_opened if isinstance(error, TaskNotReady) else "",
        anchor="id_state" if isinstance(error, TaskNotReady) else "",
        kept={kept: form},
    )


def upload_to_task(
    request, slug: str, load, *, what: str, form_class=None, limit=None, auto_id="", keep=""
):
    """An organizer's upload from the organize pages: the pages' upload guards (throttle, size
    ceilings, as the submit page; ``limit``: the bytes the upload may have, else the task's
    runs' limit), the form (``auto_id``: its inputs' ids on the page, else those of the action
    ``what``), then ``load(task, form)`` (one service call that returns the success message;
    a gold, pool or reference file: :func:`receive_from_page`, a worker loads it).
    A refusal shows the section again with the banner at its top, the problems by line and the
    refusal's status (``keep``: the form's name in the section's context, to show it as sent);
    nothing is stored then. Success: back to the section with the message."""
    task = selectors.task_for(slug, request.user, role="organizer")
    spec = sections.REFUSED.get(what, sections.OTHER)
    form = (form_class or OrganizerUploadForm)(
        request.POST, request.FILES, auto_id=auto_id or spec.auto_id
    )
    kept = {keep: form} if keep else None
    anchor = (auto_id or spec.auto_id) % "file"
    stopped = refused_upload(request, task, limit=limit)
    if stopped is not None:
        return sections.refused(request, task, what, stopped, anchor=anchor, kept=kept)
    if not form.is_valid():
        return sections.refused(request, task, what, None, form=form, anchor=anchor, kept=kept)
    try:
        message = load(task, form)
    except ServiceError as exc:
        return sections.refused(request, task, what, exc, form=form, anchor=anchor, kept=kept)
    messages.success(request, message)
    return sections.to_section(task, spec.section)


def receive_from_page(request, task: Task, kind: str, upload, **fields) -> str:
    """Receive an organizer's upload of ``kind`` from the Data section (a worker loads it);
    the message that says so."""
    received = receive_upload(task=task, user=request.user, kind=kind, upload=upload, **fields)
    what = OrganizerUpload.Kind(kind).label
    return (
        f"Received your {what} file {received.file_name} ({human_bytes(received.n_bytes)}): "
        "it is being checked and loaded; its state is under Uploads below."
    )


def organizer_file_page(request, slug: str, kind: str, *, form_class=None, fields=None, keep=""):
    """The Data section's upload of an organizer file of ``kind`` (gold, pool, reference,
    candidates) through :func:`upload_to_task`, received for a worker to load
    (:func:`receive_from_page`); ``fields(form)``: what else the upload takes from the form."""

    def load(task, form):
        extra = fields(form) if fields else {}
        return receive_from_page(request, task, kind, form.cleaned_data["file"], **extra)

    return upload_to_task(request, slug, load, what=kind, form_class=form_class, keep=keep)


@login_required
@require_POST
def upload_reference_page(request, slug: str):
    return organizer_file_page(request, slug, "reference")


@login_required
@require_POST
def upload_pool_page(request, slug: str):
    return organizer_file_page(
        request,
        slug,
        "pool",
        form_class=PoolUploadForm,
        fields=lambda form: {"payloads": form.cleaned_data["payloads"]},
    )


@login_required
@require_GET
def verified_items_csv(request, slug: str):
    task = selectors.task_for(slug, request.user, role="organizer")
    return csv_download(verified_items_rows(task), f"{task.slug}-verified-items.csv")
