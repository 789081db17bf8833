"""Annotator pages: the tasks one annotates, the item page shell, and the organizers' queue view.

The item page is a shell: its script claims items through the JSON API (``annotation/api*``)
and shows each one from :func:`annotation.display.item_display`. The page shows the task's
question and the item's payload only: never which run predicted an item, its team, any score or
other annotators' answers, so that answers stay blind.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from leaderboard import selectors as leaderboard_selectors
from leaderboard.forms import ReferenceSampleDrawForm
from leaderboard.views.organize import organizer_file_page
from leaderboard.views.organize_sections import refused, to_section
from site_platform.downloads import csv_download
from site_platform.errors import ServiceError

from . import selectors, services


@login_required
@require_GET
def home(request):
    annotated = [
        {"task": task, "progress": selectors.annotator_progress(task=task, annotator=request.user)}
        for task in leaderboard_selectors.annotated_tasks(request.user).order_by("title")
    ]
    organized = list(leaderboard_selectors.user_roles(request.user)["organized"])
    return render(request, "annotation/home.html", {"annotated": annotated, "organized": organized})


@login_required
@require_GET
def annotate(request, slug: str):
    try:
        task = leaderboard_selectors.task_for(slug, request.user, role="annotator")
    except leaderboard_selectors.TaskForbidden as refused:
        return render(request, "annotation/not_annotator.html", {"task": refused.task}, status=403)
    config = {
        "slug": task.slug,
        "user": request.user.pk,
        "api": reverse("annotation:home") + "api/",
        # The page holds as many items as the server lets one annotator hold.
        "prefetch": settings.ANNOTATION_MAX_CLAIM,
    }
    return render(request, "annotation/annotate.html", {"task": task, "config": config})


@login_required
@require_GET
def queue(request, slug: str):
    task = leaderboard_selectors.task_for(slug, request.user, role="organizer")
    health = selectors.queue_health(task=task)
    export_url = reverse("verified_items_csv", args=[task.slug])
    answers_url = reverse("annotation:answers_csv", args=[task.slug])
    return render(
        request,
        "annotation/queue.html",
        {"task": task, "health": health, "export_url": export_url, "answers_url": answers_url},
    )


@login_required
@require_GET
def answers_csv(request, slug: str):
    """Every answer of the task as CSV (organizers only), streamed."""
    task = leaderboard_selectors.task_for(slug, request.user, role="organizer")
    response = csv_download(selectors.answers_export_rows(task=task), f"{task.slug}-answers.csv")
    response["X-Content-Type-Options"] = "nosniff"
    return response


@login_required
@require_POST
def unpause(request, slug: str):
    task = leaderboard_selectors.task_for(slug, request.user, role="organizer")
    username = request.POST.get("username", "")
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        messages.error(request, "No such annotator.")
        return redirect("annotation:queue", slug=task.slug)
    try:
        lifted = services.unpause_annotator(task=task, annotator=user, by=request.user)
    except services.JudgmentError as exc:
        messages.error(request, exc.message)
        return redirect("annotation:queue", slug=task.slug)
    if lifted:
        messages.success(request, f"{user.get_username()} may answer again.")
    else:
        messages.info(request, f"{user.get_username()} was not paused.")
    return redirect("annotation:queue", slug=task.slug)


@login_required
@require_POST
def upload_gold(request, slug: str):
    """Gold items from the organize pages' Data section (its upload guards), received for a
    worker to load."""
    return organizer_file_page(request, slug, "gold")


@login_required
@require_POST
def draw_reference_sample_page(request, slug: str):
    """Draw the reference sample's documents from the Data section and queue their candidates
    (this app's queue); a refusal shows the section with the reason at its top, its status and
    the form as it was filled."""
    task = leaderboard_selectors.task_for(slug, request.user, role="organizer")
    form = ReferenceSampleDrawForm(request.POST, auto_id="id_draw_%s")
    if not form.is_valid():
        return refused(request, task, "draw", None, form=form, kept={"draw_form": form})
    try:
        sample = services.draw_reference_sample(
            task=task,
            user=request.user,
            size=form.cleaned_data["size"],
            seed=form.cleaned_data["seed"],
            replace=form.cleaned_data["replace"],
            confirm=form.cleaned_data["confirm"],
        )
    except ServiceError as exc:
        return refused(request, task, "draw", exc, form=form, kept={"draw_form": form})
    size = leaderboard_selectors.reference_size(task)
    then = (
        f"once they are all settled, their true ones replace the reference sample ({size.summary})"
        if sample.replace and not size.empty
        else f"once they are all settled, their true ones are added to the reference sample "
        f"({size.summary})"
        if not size.empty
        else "once they are all settled, their true ones are the reference sample"
    )
    messages.success(
        request,
        f"Drew {sample.size:,} of {sample.n_documents:,} document{pluralize(sample.n_documents)}"
        f" (seed {sample.seed}): {sample.n_candidates:,} candidate"
        f"{pluralize(sample.n_candidates)} queued for verification; {then}.",
    )
    return to_section(task, "data")


@login_required
@require_POST
def cancel_reference_sample_page(request, slug: str):
    """Cancel the reference sample still being verified from the Data section (a new one can
    then be drawn); a refusal shows the section with the reason at its top and its status."""
    task = leaderboard_selectors.task_for(slug, request.user, role="organizer")
    try:
        sample = services.cancel_reference_sample(task=task, by=request.user)
    except ServiceError as exc:
        return refused(request, task, "cancel", exc)
    messages.success(
        request,
        f"Cancelled the reference sample of {sample.size:,} document{pluralize(sample.size)} "
        f"({sample.n_resolved:,} of {sample.n_candidates:,} candidates verified); the reference "
        "sample is unchanged and a new one can be drawn.",
    )
    return to_section(task, "data")


@login_required
@require_POST
def settle_reference_sample_page(request, slug: str):
    """Ask from the Data section that the draw being verified be completed with its stuck
    candidates decided by their answers as they stand; a refusal shows the section with the
    reason at its top and its status."""
    task = leaderboard_selectors.task_for(slug, request.user, role="organizer")
    try:
        sample = services.settle_reference_sample(task=task, by=request.user)
    except ServiceError as exc:
        return refused(request, task, "settle", exc)
    stuck = len(sample.stuck)
    messages.success(
        request,
        f"The {stuck:,} stuck candidate{pluralize(stuck)} will be decided by "
        f"{pluralize(stuck, 'its,their')} answers as they stand (true when more likely true "
        "than not), below the task's confidence, at the next estimation, in a few seconds: the "
        "draw then completes. Reload this page to see it.",
    )
    return to_section(task, "data")
