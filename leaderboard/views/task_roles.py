"""A task's people on its organize page: inviting annotators and co-organizers by a link (shown
once) or by mail (a page of its own), revoking a link, removing an annotator or an organizer; and
the page where an invited person accepts. A refused action shows its :class:`TaskRoleError` with
its status."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from .. import selectors
from ..errors import ServiceError, with_headers
from ..models import Task
from ..services.invitation_mail import invite_to_task_by_mail
from ..services.task_roles import (
    ROLES,
    TaskRoleError,
    accept_task_invitation,
    check_task_invitation,
    invite_to_task,
    remove_annotator,
    remove_organizer,
    revoke_task_invitation,
)
from .common import mailed_invitations, render_task_page

# Where the accept page keeps the digest of the invitation a signed-out visitor opened: with
# REGISTRATION = "invite", sign-up is open to whoever holds a valid one.
TASK_INVITATION_SESSION_KEY = "task_invitation"


def organize_people(task: Task) -> dict:
    """What the organize page shows of the task's people (its "People" block)."""
    return {
        "task_annotators": selectors.task_annotators(task),
        "task_organizers": selectors.task_organizers(task),
        "task_invitations": selectors.open_task_invitations(task),
        "invitation_roles": ROLES,
    }


def _error_page(request, task: Task, error: TaskRoleError):
    return render(
        request,
        "leaderboard/task_role_error.html",
        {"task": task, "error": error},
        status=error.http_status,
    )


@login_required
@require_POST
def task_invite(request, slug: str):
    task = selectors.task_for(slug, request.user, role="organizer")
    try:
        issued = invite_to_task(task=task, role=request.POST.get("role", ""), by=request.user)
    except TaskRoleError as exc:
        return _error_page(request, task, exc)
    link = request.build_absolute_uri(reverse("task_join", args=[issued.key]))
    # Shown on this response only: the key is not stored, so it cannot be shown again.
    return render(
        request,
        "leaderboard/task_invitation.html",
        {"task": task, "invitation": issued.invitation, "new_link": link},
    )


@login_required
@require_http_methods(["GET", "POST"])
def task_invite_mail(request, slug: str):
    task = selectors.task_for(slug, request.user, role="organizer")
    role = request.POST.get("role") or request.GET.get("role") or ROLES[0]
    addresses = request.POST.get("addresses", "")
    context = {"invitation_roles": ROLES, "role": role, "hours": settings.TASK_INVITATION_HOURS}
    if request.method == "POST":
        try:
            issued = invite_to_task_by_mail(
                task=task, role=role, by=request.user, addresses=addresses
            )
        except ServiceError as exc:  # the addresses' problems, or too many invitations (429)
            context |= {"mail_error": exc, "addresses": addresses}
            page = render_task_page(
                request,
                "leaderboard/task_invite_mail.html",
                task,
                context,
                organizer=True,
                status=exc.http_status,
            )
            return with_headers(page, exc)
        context["mailed"] = mailed_invitations(request, issued, "task_join")
    return render_task_page(
        request, "leaderboard/task_invite_mail.html", task, context, organizer=True
    )


@login_required
@require_POST
def task_invitation_revoke(request, slug: str, invitation_id: int):
    task = selectors.task_for(slug, request.user, role="organizer")
    invitation = selectors.task_invitation_for(task=task, invitation_id=invitation_id)
    revoke_task_invitation(invitation=invitation)
    messages.success(request, f"The {invitation.role} invitation was revoked.")
    return redirect("task_organize", slug=task.slug)


@login_required
@require_POST
def task_annotator_remove(request, slug: str, user_id: int):
    task = selectors.task_for(slug, request.user, role="organizer")
    person = selectors.task_member_for(task=task, role="annotator", user_id=user_id)
    remove_annotator(task=task, user=person)
    messages.success(request, f"{person.get_username()} no longer annotates {task.slug}.")
    return redirect("task_organize", slug=task.slug)


@login_required
@require_POST
def task_organizer_remove(request, slug: str, user_id: int):
    task = selectors.task_for(slug, request.user, role="organizer")
    person = selectors.task_member_for(task=task, role="organizer", user_id=user_id)
    try:
        remove_organizer(task=task, user=person)
    except TaskRoleError as exc:
        return _error_page(request, task, exc)
    messages.success(request, f"{person.get_username()} no longer organizes {task.slug}.")
    if person == request.user and not selectors.is_organizer(task=task, user=request.user):
        return redirect("task_board", slug=task.slug)
    return redirect("task_organize", slug=task.slug)


@require_http_methods(["GET", "POST"])
def task_join(request, key: str):
    if request.method == "POST" and not request.user.is_authenticated:
        return redirect(f"{reverse('login')}?next={request.path}")
    try:
        if request.method == "POST":
            invitation = accept_task_invitation(key=key, user=request.user)
            messages.success(
                request, f"You are now an {invitation.role} of {invitation.task.title}."
            )
            if invitation.role == "organizer":
                return redirect("task_organize", slug=invitation.task.slug)
            return redirect("annotation:task", slug=invitation.task.slug)
        invitation = check_task_invitation(key=key, user=request.user)
    except TaskRoleError as exc:
        return render(request, "leaderboard/task_join.html", {"error": exc}, status=exc.http_status)
    if not request.user.is_authenticated:
        request.session[TASK_INVITATION_SESSION_KEY] = invitation.digest  # never the key itself
    return render(
        request,
        "leaderboard/task_join.html",
        {
            "invitation": invitation,
            "task": invitation.task,
            "registration_closed": settings.REGISTRATION == "closed",
        },
    )
