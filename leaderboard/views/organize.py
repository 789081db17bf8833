"""The organizer console: create a task (with a live preview of its display template), and a
task's organize page: its readiness checklist (``readiness.py``), settings, label budget, cost
per run, exports, hold/publish, and the uploads of its reference sample or pool (here) and gold
items (``annotation.views``, through :func:`upload_to_task`)."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from .. import presenters, selectors
from ..display_templates import preview_display
from ..errors import InvalidFields, ServiceError, with_headers
from ..exports import verified_items_rows
from ..forms import OrganizerUploadForm, PoolUploadForm, TaskCreateForm, TaskSettingsForm
from ..models import Task
from ..services.pool import upload_pool
from ..services.reference import upload_reference
from ..services.tasks import TaskNotReady, TaskSettingsError, create_task, update_task
from . import readiness, reference_sample, task_page
from .common import csv_download, render_task_page
from .task_roles import organize_people
from .uploads import refused_upload

NEW_TASK_PAGE = "leaderboard/task_new.html"
# The preview's JSON carries organizers' payload text: its markup characters are escaped, so
# that the body is inert even to a reader that mistakes it for HTML (as ``json_script`` does).
JSON_HTML_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026"}
# A sample item for the preview of a new task's display template (edited on the page).
SAMPLE_ITEM = (
    '{"left": {"name": "Ada Lovelace", "born": "1815"},\n'
    ' "right": {"name": "Augusta Ada King", "born": "1815"}}'
)


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
                return redirect("task_organize", slug=task.slug)
        status = 400
    context = {
        "form": form,
        "sample_item": SAMPLE_ITEM,
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
    task = selectors.task_for(slug, request.user, role="organizer")
    if request.method != "POST":
        return organize_page(request, task)
    form = TaskSettingsForm(request.POST, task=task)
    return save_task_form(request, task, form, saved="Settings saved") or organize_page(
        request, task, form=form, status=400
    )


def save_task_form(request, task, form, *, saved: str):
    """Save what a task form (:class:`~leaderboard.forms.TaskFieldsForm`) changed, through
    ``update_task``: the organize page again with ``saved`` and the fields changed (or with the
    checklist, for an opening it refused), or ``None`` when the form or the service refused
    (``form`` then carries the errors by field)."""
    if not form.is_valid():
        return None
    changes = form.changed_settings()
    try:
        update_task(task=task, **changes)
    except TaskNotReady as exc:  # an opening the checklist refused: shown with the checklist
        task.refresh_from_db()
        form.add_service_errors(exc.field_errors)
        return organize_page(request, task, form=form, state_error=exc)
    except TaskSettingsError as exc:
        task.refresh_from_db()
        form.add_service_errors(exc.field_errors)
        return None
    messages.success(
        request, f"{saved}: " + ", ".join(sorted(changes)) if changes else "Nothing changed."
    )
    return redirect("task_organize", slug=task.slug)


def organize_page(
    request,
    task,
    *,
    form: TaskSettingsForm | None = None,
    upload: str = "",
    error: ServiceError | None = None,
    state_error: TaskSettingsError | None = None,
    status: int = 200,
    sent: dict | None = None,
    page_text_form=None,
) -> HttpResponse:
    """The organize page of ``task``; with the settings ``form`` (or the task page's text,
    ``page_text_form``) as sent, or the ``upload`` (``reference``, ``pool``, ``gold``,
    ``candidates``, ``draw``, ``task_file``) or action on a held run (``release``, ``reject``)
    that ``error`` refused (its status and headers), or the change of state ``state_error``
    refused (an opening its checklist refused: :class:`TaskNotReady`, 409), shown with the
    checklist at the top; and ``sent``: forms as the organizer filled them, by their name in the
    page's context."""
    if state_error is not None:
        status = state_error.http_status
    response = render_task_page(
        request,
        "leaderboard/organize.html",
        task,
        {
            "form": form or TaskSettingsForm(task=task),
            "budget": presenters.budget_summary(task),
            "hold": presenters.hold_status(task),
            "queue_url": f"/annotate/{task.slug}/queue/",
            "approval_requests": selectors.approval_requests(task),
            "held_runs": selectors.held_runs(task),  # (views/held_runs.py)
            **organize_people(task),  # the task's people and invitations (task_roles.py)
            **reference_sample.reference_sample_context(task),  # (reference_sample.py)
            **readiness.readiness_context(task, state_error),  # the checklist (readiness.py)
            **task_page.organize_context(task, page_text_form),  # text, terms, files
            "upload_forms": _upload_forms(task),
            "sample_item": _sample_item(task),
            "upload": upload,
            "upload_error": error,
            **(sent or {}),
        },
        organizer=True,
        status=error.http_status if error is not None else status,
    )
    return with_headers(response, error) if error is not None else response


def _sample_item(task) -> str:
    """The sample item of the display template's preview: one of the task's items, if any."""
    payload = selectors.sample_payload(task)
    if payload is None:
        return SAMPLE_ITEM
    return json.dumps(payload, ensure_ascii=False, indent=1)


def _upload_forms(task) -> dict:
    """The upload forms the task takes, empty (a refused file is not kept)."""
    kinds = ("pool", "gold") if task.kind == Task.Kind.CLOSED_POOL else ("reference", "gold")
    return {
        kind: (PoolUploadForm if kind == "pool" else OrganizerUploadForm)(auto_id=f"id_{kind}_%s")
        for kind in kinds
    }


def upload_to_task(request, slug: str, load, *, what: str, form_class=None, limit=None):
    """An organizer's upload from the organize page: the page's upload guards (throttle, size
    ceilings, as the submit page; ``limit``: the bytes the upload may have, else the task's
    runs' limit), the form, then ``load(task, form)`` (one service call that returns the success
    message). A refusal shows the organize page with the problems by line and the refusal's
    status; nothing is stored then."""
    task = selectors.task_for(slug, request.user, role="organizer")
    refused = refused_upload(request, task, limit=limit)
    if refused is not None:
        return organize_page(request, task, upload=what, error=refused)
    form = (form_class or OrganizerUploadForm)(request.POST, request.FILES)
    if not form.is_valid():
        return organize_page(
            request,
            task,
            upload=what,
            error=InvalidFields(
                "choose a file to upload",
                {name: [str(e) for e in errors] for name, errors in form.errors.items()},
            ),
        )
    try:
        message = load(task, form)
    except ServiceError as exc:
        return organize_page(request, task, upload=what, error=exc)
    messages.success(request, message)
    return redirect("task_organize", slug=task.slug)


@login_required
@require_POST
def upload_reference_page(request, slug: str):
    def load(task, form):
        upload = form.cleaned_data["file"]
        upload_reference(task=task, user=request.user, upload=upload, file_name=upload.name)
        size = selectors.reference_size(task)
        return f"Reference sample replaced: {size.summary} (version {size.version})."

    return upload_to_task(request, slug, load, what="reference")


@login_required
@require_POST
def upload_pool_page(request, slug: str):
    def load(task, form):
        upload, payloads = form.cleaned_data["file"], form.cleaned_data["payloads"]
        n = upload_pool(task=task, user=request.user, upload=upload, payloads=payloads)
        return f"Pool uploaded: {n:,} item{pluralize(n)}."

    return upload_to_task(request, slug, load, what="pool", form_class=PoolUploadForm)


@login_required
@require_GET
def verified_items_csv(request, slug: str):
    task = selectors.task_for(slug, request.user, role="organizer")
    return csv_download(verified_items_rows(task), f"{task.slug}-verified-items.csv")
