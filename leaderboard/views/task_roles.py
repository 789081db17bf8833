"""A task's people on its organize pages (the People section): inviting annotators and
co-organizers by a link or by mail (the links shown once, at the top of the section), revoking a
link, removing an annotator or an organizer; and the page where an invited person accepts. A
refused action shows the section again with the refusal at its top and its status."""

from __future__ import annotations

from typing import Literal

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from site_platform.errors import ServiceError

from .. import selectors
from ..services.invitation_mail import invite_to_task_by_mail
from ..services.task_roles import (
    ROLES,
    TaskRoleError,
    accept_task_invitation,
    check_task_invitation,
    invite_to_task,
    remove_from_task,
    revoke_task_invitation,
)
from . import organize_sections
from .common import invitation_page, mailed_invitations

# Where the accept page keeps the digest of the invitation a signed-out visitor opened: with
# REGISTRATION = "invite", sign-up is open to whoever holds a valid one.
TASK_INVITATION_SESSION_KEY = "task_invitation"


@login_required
@require_POST
def task_invite(request, slug: str):
    task = selectors.task_for(slug, request.user, role="organizer")
    try:
        issued = invite_to_task(task=task, role=request.POST.get("role", ""), by=request.user)
    except TaskRoleError as exc:
        return organize_sections.refused(request, task, "invite", exc)
    link = request.build_absolute_uri(reverse("task_join", args=[issued.key]))
    # Shown on this response only: the key is not stored, so it cannot be shown again.
    return organize_sections.section_page(
        request, task, "people", new_invitation=issued.invitation, new_link=link
    )


@login_required
@require_http_methods(["GET", "POST"])
def task_invite_mail(request, slug: str):
    """Invitations by mail, from the People section's form (a GET goes there)."""
    task = selectors.task_for(slug, request.user, role="organizer")
    if request.method != "POST":
        return redirect(organize_sections.section_url(task, "people", "invite-by-mail"))
    role = request.POST.get("role") or ROLES[0]
    addresses = request.POST.get("addresses", "")
    try:
        issued = invite_to_task_by_mail(task=task, role=role, by=request.user, addresses=addresses)
    except ServiceError as exc:  # the addresses' problems, or too many invitations (429)
        kept = {"role": role, "addresses": addresses, "addresses_refused": True}
        return organize_sections.refused(request, task, "invite_mail", exc, kept=kept)
    # The links are shown on this response only, should a mail not arrive.
    mailed = mailed_invitations(request, issued, "task_join")
    return organize_sections.section_page(request, task, "people", mailed=mailed, role=role)


@login_required
@require_POST
def task_invitation_revoke(request, slug: str, invitation_id: int):
    task = selectors.task_for(slug, request.user, role="organizer")
    invitation = selectors.task_invitation_for(task=task, invitation_id=invitation_id)
    revoke_task_invitation(invitation=invitation)
    messages.success(request, f"The {invitation.role} invitation was revoked.")
    return organize_sections.to_section(task, "people")


def task_annotator_remove(request, slug: str, user_id: int):
    return _remove_member(request, slug, user_id, role="annotator")


def task_organizer_remove(request, slug: str, user_id: int):
    return _remove_member(request, slug, user_id, role="organizer")


@login_required
@require_POST
def _remove_member(request, slug: str, user_id: int, *, role: Literal["annotator", "organizer"]):
    task = selectors.task_for(slug, request.user, role="organizer")
    person = selectors.task_member_for(task=task, role=role, user_id=user_id)
    try:
        remove_from_task(task=task, user=person, role=role)
    except TaskRoleError as exc:  # the last organizer
        return organize_sections.refused(request, task, f"remove_{role}", exc)
    held = "annotates" if role == "annotator" else "organizes"
    messages.success(request, f"{person.get_username()} no longer {held} {task.slug}.")
    if person == request.user and not selectors.is_organizer(task=task, user=request.user):
        return redirect("task_board", slug=task.slug)
    return organize_sections.to_section(task, "people")


@require_http_methods(["GET", "POST"])
def task_join(request, key: str):
    def accept():
        invitation = accept_task_invitation(key=key, user=request.user)
        messages.success(request, f"You are now an {invitation.role} of {invitation.task.title}.")
        if invitation.role == "organizer":
            return redirect("task_organize", slug=invitation.task.slug)
        return redirect("annotation:task", slug=invitation.task.slug)

    return invitation_page(
        request,
        template="leaderboard/task_join.html",
        session_key=TASK_INVITATION_SESSION_KEY,
        error=TaskRoleError,
        check=lambda: check_task_invitation(key=key, user=request.user),
        accept=accept,
        context=lambda invitation: {"invitation": invitation, "task": invitation.task},
    )
