"""Writes of a task's people: inviting annotators and co-organizers by a link, accepting it,
revoking a link, removing an annotator or an organizer.

An invitation to a task is a single-use link for one role (``annotator`` or ``organizer``) that
expires (``TASK_INVITATION_HOURS``), issued, checked and used by ``services.invitations`` like a
team's. The callers have checked that whoever issues, revokes or removes organizes the task
(``selectors.task_for(..., role="organizer")``). A person may not both annotate a task and be a
member of a team with runs on it unless the task allows it (``Task.annotators_may_compete``;
``selectors.annotator_conflicts``). Every refusal is a :class:`TaskRoleError` naming the problem,
and changes nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Unpack

from django.db import transaction

from ..models import Task, TaskInvitation
from ..selectors import annotator_conflicts
from .invitations import (
    InvitationError,
    InvitationKind,
    InvitationLookup,
    IssuedInvitation,
    revoke_invitation,
)
from .reference_candidates import recheck_reference_sample

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

ROLES = tuple(TaskInvitation.Role.values)


class TaskRoleError(InvitationError):
    """A role on a task that cannot be given or taken away (the message says why)."""

    statuses = {
        **InvitationError.statuses,
        "already_annotator": 409,
        "already_organizer": 409,
        "annotator_competes": 409,
        "last_organizer": 409,
    }


TASK_INVITATIONS = InvitationKind(
    TaskInvitation,
    hours_setting="TASK_INVITATION_HOURS",
    error=TaskRoleError,
    expired_hint="ask the task's organizers for a new one",
    related=("task",),
)


def check_role(role: str) -> None:
    """Refuse a role an invitation cannot be for."""
    if role not in ROLES:
        raise TaskRoleError(
            f"an invitation is for one of the roles {', '.join(ROLES)}, not {role!r}",
            code="invalid",
        )


def invite_to_task(
    *, task: Task, role: str, by: User, now: datetime | None = None, sent_to: str = ""
) -> IssuedInvitation[TaskInvitation]:
    """Make a single-use link that makes its user ``role`` of ``task``, valid for
    ``TASK_INVITATION_HOURS``; ``by`` organizes the task (the caller checked). ``sent_to``: the
    address it is mailed to (``services.invitation_mail``)."""
    check_role(role)
    return TASK_INVITATIONS.issue(by=by, now=now, task=task, role=role, sent_to=sent_to)


def check_task_invitation(
    *, user: User | AnonymousUser | None = None, **lookup: Unpack[InvitationLookup]
) -> TaskInvitation:
    """The invitation ``lookup`` finds (by its key, see :class:`.invitations.InvitationLookup`)
    if ``user`` (anyone, if ``None`` or signed out) could accept it now; else
    :class:`TaskRoleError` says why (unknown, used, revoked, expired, the role already held, an
    annotator in a team with runs on the task)."""
    invitation = TASK_INVITATIONS.find(**lookup)
    if user is None or not user.is_authenticated:
        return invitation
    task, role = invitation.task, invitation.role
    holders = task.annotators if role == TaskInvitation.Role.ANNOTATOR else task.organizers
    if holders.filter(pk=user.pk).exists():
        raise TaskRoleError(
            f"you are already an {role} of task {task.slug!r}", code=f"already_{role}"
        )
    if role == TaskInvitation.Role.ANNOTATOR:
        conflict = next(iter(annotator_conflicts(task=task, user=user)), None)
        if conflict is not None:
            raise TaskRoleError(
                f"you are a member of team {conflict.team.name!r}, which has runs on task "
                f"{task.slug!r}: a person may not both annotate a task and compete in it "
                "(its organizers may allow it)",
                code="annotator_competes",
            )
    return invitation


def accept_task_invitation(*, key: str, user: User, now: datetime | None = None) -> TaskInvitation:
    """Take the role of the invitation ``key`` on its task, using the invitation up (an account
    whose address is verified only)."""

    def grant(invitation: TaskInvitation) -> None:
        task = invitation.task
        if invitation.role == TaskInvitation.Role.ANNOTATOR:
            task.annotators.add(user)
            recheck_reference_sample(task)  # its doubtful candidates may get their looks now
        else:
            task.organizers.add(user)

    return TASK_INVITATIONS.accept(check_task_invitation, key=key, user=user, grant=grant, now=now)


def revoke_task_invitation(*, invitation: TaskInvitation, now: datetime | None = None) -> None:
    """Revoke an invitation of a task (its organizers; idempotent). A used one stays used."""
    revoke_invitation(invitation, now=now)


def remove_annotator(*, task: Task, user: User) -> None:
    """``user`` no longer annotates ``task``; their judgments stay (idempotent). Their leases on
    it are revoked at once, as a pause does (the queue's receiver of this change,
    ``annotation.signals``): the items go back to the queue."""
    task.annotators.remove(user)


def remove_organizer(*, task: Task, user: User) -> None:
    """``user`` no longer organizes ``task``; refused for its last organizer."""
    with transaction.atomic():
        Task.objects.select_for_update().filter(pk=task.pk).first()
        if not task.organizers.filter(pk=user.pk).exists():
            return
        if task.organizers.count() <= 1:
            raise TaskRoleError(
                f"{user.get_username()} is the last organizer of task {task.slug!r}: invite "
                "another one first",
                code="last_organizer",
            )
        task.organizers.remove(user)


def remove_from_task(*, task: Task, user: User, role: str) -> None:
    """``user`` no longer holds ``role`` on ``task``: :func:`remove_annotator` or
    :func:`remove_organizer` (the callers name the role, as the URLs do)."""
    check_role(role)
    remove = remove_annotator if role == TaskInvitation.Role.ANNOTATOR else remove_organizer
    remove(task=task, user=user)
