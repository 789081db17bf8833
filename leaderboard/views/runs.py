"""Participant pages: upload a run, the team's runs with quotas, one run (editing it, withdrawing
it, marking it a baseline), and its public page."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods, require_POST

from site_platform.errors import ServiceError, with_headers

from .. import presenters, selectors
from ..forms import RunDetailsForm, RunUploadForm
from ..services.board import RunDetailsError, update_run_details
from ..services.runs import submit_run
from ..services.withdrawal import RunActionError, set_baseline, withdraw_run
from .common import render_task_page
from .uploads import refused_upload

SUBMIT_PAGE = "leaderboard/submit.html"


@login_required
@require_http_methods(["GET", "POST"])
def submit(request, slug: str):
    task = selectors.task_for(slug, request.user)
    teams = list(selectors.teams_of(request.user))
    context: dict = {
        "teams": teams,
        "approvals": _approvals(task, teams),
        "limits": presenters.submit_limits(task=task, user=request.user),
        # The task's terms and where each team stands (templates/_terms_accept.html).
        "terms_teams": selectors.terms_of_teams(task=task, teams=teams),
        "terms_digest": selectors.terms_digest(task),
    }
    if not teams:
        return render_task_page(request, SUBMIT_PAGE, task, context, status=403)
    if request.method != "POST":
        context["form"] = RunUploadForm(teams=teams)
        return render_task_page(request, SUBMIT_PAGE, task, context)
    refused = refused_upload(request, task)
    if refused is not None:
        return _refused(request, task, context | {"form": RunUploadForm(teams=teams)}, refused)

    form = RunUploadForm(request.POST, request.FILES, teams=teams)
    context["form"] = form
    if not form.is_valid():
        return render_task_page(request, SUBMIT_PAGE, task, context, status=400)
    upload = form.cleaned_data["file"]
    try:
        run = submit_run(
            task=task,
            team=form.cleaned_data["team"],
            user=request.user,
            upload=upload,
            file_name=upload.name,
            name=form.cleaned_data["name"],
            description=form.cleaned_data["description"],
        )
    except ServiceError as exc:  # a refusal, or the file storage failing (503)
        return _refused(request, task, context, exc)
    return redirect("run_detail", run_id=run.pk)


def _approvals(task, teams) -> list[tuple]:
    """On a task that needs approval: each of the user's teams with its request (or None)."""
    if not task.team_approval:
        return []
    approvals = selectors.approvals_of(task=task, teams=teams)
    return [(team, approvals.get(team.pk)) for team in teams]


def _refused(request, task, context: dict, error: ServiceError):
    """The form again with why the upload was refused, with the refusal's status and headers."""
    response = render_task_page(
        request, SUBMIT_PAGE, task, context | {"error": error}, status=error.http_status
    )
    return with_headers(response, error)


@login_required
def task_runs(request, slug: str):
    task = selectors.task_for(slug, request.user)
    try:
        mine = presenters.my_runs(task=task, user=request.user, sort=request.GET.get("sort"))
    except ValueError as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
    return render_task_page(request, "leaderboard/runs.html", task, {"mine": mine})


RUN_PAGE = "leaderboard/run_detail.html"


@require_http_methods(["GET", "POST"])
def run_detail(request, run_id: int):
    """A run's page: all of it for its team and its task's organizers (who edit it there), its
    public page for anyone else while it is on the public board."""
    run = selectors.run_for(run_id=run_id, user=request.user)
    if run is None:
        public = selectors.public_run_for(run_id=run_id, user=request.user)
        if public is not None and request.method == "GET":
            page = presenters.run_page(run=public, user=request.user, public=True)
            context = {"run": public, "page": page, "form": None}
            return render_task_page(request, RUN_PAGE, public.task, context, organizer=False)
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        raise Http404("No such run.")
    page = presenters.run_page(run=run, user=request.user)
    form = RunDetailsForm.for_run(run) if page.can_edit else None
    status = 200
    if request.method == "POST":
        if not page.can_edit:
            raise PermissionDenied("Only the run's team can edit it.")
        form = RunDetailsForm.for_run(run, request.POST)
        if form.is_valid():
            try:
                update_run_details(run=run, **form.cleaned_data)
            except RunDetailsError as exc:
                form.add_service_errors(exc.field_errors)
            else:
                messages.success(request, "Run details saved.")
                return redirect("run_detail", run_id=run.pk)
        status = 400
    return render_task_page(
        request,
        RUN_PAGE,
        run.task,
        {"run": run, "page": page, "form": form},
        organizer=page.organizer,
        status=status,
    )


@login_required
@require_POST
def run_withdraw(request, run_id: int):
    """Withdraw the run (its team, the task's organizers); the run page says what happened."""
    run = _seen_run(request, run_id)
    try:
        withdrawn = withdraw_run(run=run, by=request.user)
    except RunActionError as exc:
        return _refused_action(request, run, exc)
    messages.success(request, f"Run withdrawn: {withdrawn.reason}.")
    return redirect("run_detail", run_id=run.pk)


@login_required
@require_POST
def run_baseline(request, run_id: int):
    """Mark the run as a baseline, or unmark it (``baseline``: ``1`` or ``0``; organizers)."""
    run = _seen_run(request, run_id)
    value = request.POST.get("baseline", "1")
    if value not in ("0", "1"):
        return HttpResponseBadRequest(
            "baseline must be 1 (mark) or 0 (unmark)", content_type="text/plain; charset=utf-8"
        )
    try:
        marked = set_baseline(run=run, by=request.user, baseline=value == "1")
    except RunActionError as exc:
        return _refused_action(request, run, exc)
    messages.success(
        request,
        "Marked as a baseline: the board lists it without a rank."
        if marked.baseline
        else "No longer a baseline: it is ranked with the other runs.",
    )
    return redirect("run_detail", run_id=run.pk)


def _seen_run(request, run_id: int):
    """The run as its team or its task's organizers see it; 404 for anyone else."""
    run = selectors.run_for(run_id=run_id, user=request.user)
    if run is None:
        raise Http404("No such run.")
    return run


def _refused_action(request, run, error: RunActionError):
    """The run's page with why the action was refused (at the top), with the refusal's status."""
    page = presenters.run_page(run=run, user=request.user)
    form = RunDetailsForm.for_run(run) if page.can_edit else None
    return render_task_page(
        request,
        RUN_PAGE,
        run.task,
        {"run": run, "page": page, "form": form, "action_error": error},
        organizer=page.organizer,
        status=error.http_status,
    )
