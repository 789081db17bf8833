"""Invitations sent by mail: to a team (by a member), or to a role on a task (by its organizers),
for a list of addresses, each address getting a single-use link of its own, as a link made on
the page is (``services.invitations``).

The list is checked as a whole before anything is made: an address that is not one, an address
listed twice, one of a person who already holds what the link gives, or more addresses than one
person may invite by mail in ``INVITATION_MAIL_WINDOW`` (``INVITATION_MAIL_LIMIT``, counted in
``CACHES["throttle"]`` as the account forms' brakes are) refuses the whole list, each problem
naming its address, and nothing is made or sent. The invitations are made in one transaction and
each is mailed by a worker after it commits (:func:`send_invitation_mail`), at most once. The
link's key is never stored: it travels to the worker in the message, and the inviter is shown
the links too (a lost message is not sent again). An invitation goes only to its address; it is
sent because someone asked, so it is not a notification a person can turn off.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from .. import jobs
from ..email_domains import normalize_email
from ..models import Invitation, Task, TaskInvitation, Team, TeamInvitation, key_digest
from .invitations import InvitationError, IssuedInvitation
from .mail import send_site_mail, site_link
from .sign_in import INVITATION_MAIL, check_allowed, count_attempt
from .task_roles import check_role, invite_to_task
from .teams import invite_to_team

if TYPE_CHECKING:
    from django.contrib.auth.models import User

InvitationT = TypeVar("InvitationT", bound=Invitation)
# Addresses are separated by line breaks, spaces, commas or semicolons.
SEPARATORS = re.compile(r"[\s,;]+")
KINDS: dict[str, type[TeamInvitation] | type[TaskInvitation]] = {
    "team": TeamInvitation,
    "task": TaskInvitation,
}


class InvitationAddressError(InvitationError):
    """A list of addresses that cannot be invited (its problems name each address)."""

    statuses = {**InvitationError.statuses, "invalid_addresses": 400}


def parse_addresses(
    addresses: str | Iterable[str], *, taken: Iterable[str] = (), taken_reason: str = ""
) -> list[str]:
    """The addresses of ``addresses`` (text, or a list), in order, normalised
    (``email_domains.normalize_email``: the spelling mailed and compared); else
    :class:`InvitationAddressError` lists each one that is not an address, is listed twice, or
    is in ``taken`` (``taken_reason`` says why; compared normalised)."""
    parts = SEPARATORS.split(addresses) if isinstance(addresses, str) else list(addresses)
    given = [str(part).strip() for part in parts if str(part).strip()]
    if not given:
        raise InvitationAddressError(
            "give at least one email address to invite", code="invalid_addresses"
        )
    limit = settings.INVITATION_MAIL_LIMIT
    if len(given) > limit:
        raise InvitationAddressError(
            f"{len(given)} addresses: at most {limit} may be invited by mail at once",
            code="invalid_addresses",
        )
    taken_folded = {_folded(address) for address in taken}
    seen: set[str] = set()
    problems = []
    normalized = []
    for address in given:
        folded = _folded(address)
        try:
            validate_email(address)
            normalized.append(normalize_email(address))
        except (ValidationError, ValueError):
            problems.append(f"{address!r} is not an email address")
        else:
            if folded in seen:
                problems.append(f"{address} is listed twice")
            elif folded in taken_folded:
                problems.append(f"{address} {taken_reason}")
        seen.add(folded)
    if problems:
        raise InvitationAddressError(
            f"{len(problems)} of the {len(given)} addresses cannot be invited, so nothing was "
            "sent: correct them and send the list again",
            code="invalid_addresses",
            problems=[{"line": None, "message": problem} for problem in problems],
        )
    return normalized


def _folded(address: str) -> str:
    try:
        return normalize_email(address)
    except ValueError:
        return address.casefold()


def _emails_of(people: QuerySet[User]) -> list[str]:
    return [email for email in people.values_list("email", flat=True) if email]


def invite_to_team_by_mail(
    *, team: Team, by: User, addresses: str | Iterable[str], now: datetime | None = None
) -> list[IssuedInvitation[TeamInvitation]]:
    """Invite each of ``addresses`` to ``team`` by mail (``by``: a member); the invitations
    made, their keys shown once."""
    emails = parse_addresses(
        addresses,
        taken=_emails_of(team.members.all()),
        taken_reason=f"is already a member of {team.name!r}",
    )
    return _issue_and_mail(
        "team", emails, by, lambda email: invite_to_team(team=team, by=by, now=now, sent_to=email)
    )


def invite_to_task_by_mail(
    *,
    task: Task,
    role: str,
    by: User,
    addresses: str | Iterable[str],
    now: datetime | None = None,
) -> list[IssuedInvitation[TaskInvitation]]:
    """Invite each of ``addresses`` to be ``role`` of ``task`` by mail (``by`` organizes it: the
    caller checked); the invitations made, their keys shown once."""
    check_role(role)
    holders = task.annotators if role == TaskInvitation.Role.ANNOTATOR else task.organizers
    emails = parse_addresses(
        addresses,
        taken=_emails_of(holders.all()),
        taken_reason=f"is already an {role} of {task.slug!r}",
    )
    return _issue_and_mail(
        "task",
        emails,
        by,
        lambda email: invite_to_task(task=task, role=role, by=by, now=now, sent_to=email),
    )


def _issue_and_mail(
    kind: str,
    emails: list[str],
    by: User,
    issue: Callable[[str], IssuedInvitation[InvitationT]],
) -> list[IssuedInvitation[InvitationT]]:
    keys = [f"{INVITATION_MAIL.prefix}:user:{by.pk}"]
    check_allowed(keys, INVITATION_MAIL, attempts=len(emails))
    with transaction.atomic():
        issued = [issue(email) for email in emails]
        for one in issued:
            jobs.enqueue_invitation_mail(kind, one.invitation.pk, one.key)
    count_attempt(keys, INVITATION_MAIL, attempts=len(emails))
    return issued


def send_invitation_mail(*, kind: str, invitation_id: int, key: str) -> str:
    """Mail invitation ``invitation_id`` (of ``kind``, ``team`` or ``task``) with its ``key`` to
    its address, at most once (the Celery task's service); returns what happened. A key that is
    not the invitation's sends nothing; an invitation used, revoked or expired meanwhile is not
    sent. A mail the backend refuses may be tried again: the error is raised."""
    model = KINDS.get(kind)
    if model is None:
        return "unknown"
    invitation = (
        model._default_manager.select_related("created_by")
        .filter(pk=invitation_id, digest=key_digest(key))
        .first()
    )
    if invitation is None or not invitation.sent_to:
        return "unknown"
    now = timezone.now()
    if invitation.used_at or invitation.revoked_at or invitation.expires_at <= now:
        return "no longer valid"
    claimed = model._default_manager.filter(pk=invitation.pk, mailed_at__isnull=True).update(
        mailed_at=now
    )
    if not claimed:
        return "already mailed"
    try:
        send_site_mail(
            to=invitation.sent_to,
            template=f"{kind}_invitation",
            context=_context(invitation, key),
        )
    except Exception:
        model._default_manager.filter(pk=invitation.pk).update(mailed_at=None)
        raise
    return "sent"


def _context(invitation: TeamInvitation | TaskInvitation, key: str) -> dict[str, object]:
    inviter = invitation.created_by.get_username() if invitation.created_by else "someone"
    context: dict[str, object] = {"invitation": invitation, "inviter": inviter}
    if isinstance(invitation, TeamInvitation):
        return {**context, "team": invitation.team, "link": site_link("team_join", key)}
    return {
        **context,
        "task": invitation.task,
        "role": invitation.role,
        "link": site_link("task_join", key),
    }
