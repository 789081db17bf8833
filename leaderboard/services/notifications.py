"""Notifications by mail: a run of your team scored, partial or rejected (to the team's members);
a team asking to take part in a task (to its organizers).

Owing and sending are apart. The event's own transaction writes one :class:`Notification` per
recipient (:func:`owe_run_notifications` from ``lifecycle.transition_run``,
:func:`owe_approval_notifications` from ``teams.request_approval``) and enqueues the sending on
commit: nothing is sent from a request or inside a worker's transaction, and a lost message is
sent again by the watchdog (:func:`resend_stuck_notifications`). :func:`send_notification`
claims its row by compare-and-set before sending, so a retried or duplicated message never mails
anyone twice; a worker killed between the claim and the mail loses that one mail (at most once).

What a mail says of a run is what its recipient may see of it now (``selectors.run_for``): while
the board is held, a scored or partial run's mail waits (``held``) until a publication shows its
state (:func:`release_held_notifications`, from ``board``'s publication). Each person may turn
each kind off (:func:`set_mail_preferences`); every mail says where.
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db.models import F, QuerySet
from django.utils import timezone

from site_platform.errors import ServiceError

from .. import jobs
from ..models import MailKind, MailOptOut, Notification, Run, RunEvent, Task, TeamApproval
from ..selectors import mail_preferences, run_for
from .mail import send_site_mail, site_link

if TYPE_CHECKING:
    from django.contrib.auth.models import User

log = logging.getLogger(__name__)

# The run states whose mail the team gets, and how many of a rejection's problems it shows.
NOTIFIED_STATES = frozenset({Run.State.SCORED, Run.State.PARTIAL, Run.State.REJECTED})
PROBLEMS_IN_MAIL = 5
State = Notification.State


# -- owing (in the event's transaction) -----------------------------------------------------------


def _mailable(people: QuerySet[User], kind: str) -> QuerySet[User]:
    return (
        people.filter(is_active=True)
        .exclude(email="")
        .exclude(mail_opt_outs__kind=kind)
        .order_by("pk")
    )


def _owe(kind: str, people: QuerySet[User], **event: object) -> list[int]:
    ids = [
        Notification.objects.create(kind=kind, recipient=person, **event).pk
        for person in _mailable(people, kind)
    ]
    if ids:
        jobs.enqueue_notifications(ids)
    return ids


def owe_run_notifications(event: RunEvent) -> list[int]:
    """In the transaction that logged ``event``: a mail to each member of the run's team if
    the run became scored, partial or rejected. Returns the notifications' ids."""
    if event.state not in NOTIFIED_STATES:
        return []
    return _owe(MailKind.RUN_FINISHED, event.run.team.members.all(), run_event=event)


def owe_approval_notifications(approval: TeamApproval) -> list[int]:
    """In the transaction that recorded a team's request to take part: a mail to each organizer
    of the task (its organizer list). Returns the notifications' ids."""
    return _owe(MailKind.TEAM_REQUEST, approval.task.organizers.all(), approval=approval)


# -- sending (a worker) ---------------------------------------------------------------------------


def send_notifications(notification_ids: list[int]) -> dict[str, int]:
    """Send each of ``notification_ids`` still pending (the Celery task's service); returns how
    many ended in each state."""
    return dict(Counter(send_notification(pk) for pk in notification_ids))


def send_notification(notification_id: int) -> str:
    """Send notification ``notification_id`` if it is pending, at most once; returns its state
    after (or ``"not pending"``). A mail the backend refuses goes back to pending and the error
    is raised (the task is retried), until ``PIPELINE_MAX_ATTEMPTS`` attempts: then ``failed``."""
    now = timezone.now()
    claimed = Notification.objects.filter(pk=notification_id, state=State.PENDING).update(
        state=State.SENDING, state_changed_at=now, attempts=F("attempts") + 1
    )
    if not claimed:
        return "not pending"
    notification = Notification.objects.select_related(
        "recipient",
        "run_event__run__task",
        "run_event__run__team",
        "approval__task",
        "approval__team",
        "approval__requested_by",
    ).get(pk=notification_id)
    try:
        state, note = _deliver(notification)
    except Exception as exc:
        if notification.attempts >= settings.PIPELINE_MAX_ATTEMPTS:
            log.exception("notification %s could not be sent; giving up", notification_id)
            return _settle(notification, State.FAILED, f"{type(exc).__name__}: {exc}")
        _settle(notification, State.PENDING, f"{type(exc).__name__}: {exc}")
        raise
    return _settle(notification, state, note)


def _settle(notification: Notification, state: str, note: str = "") -> str:
    now = timezone.now()
    Notification.objects.filter(pk=notification.pk).update(
        state=state,
        note=note[:300],
        state_changed_at=now,
        sent_at=now if state == State.SENT else None,
    )
    return state


def _deliver(notification: Notification) -> tuple[str, str]:
    """Send the mail if it is still owed; ``(state, note)`` after."""
    person = notification.recipient
    if not person.is_active or not person.email:
        return State.SKIPPED, "no address to send to"
    if MailOptOut.objects.filter(user=person, kind=notification.kind).exists():
        return State.SKIPPED, "turned off by its recipient"
    if notification.run_event is not None:
        return _deliver_run_event(notification.run_event, person)
    assert notification.approval is not None  # a notification has one event (a constraint)
    return _deliver_approval(notification.approval, person)


def _deliver_run_event(event: RunEvent, person: User) -> tuple[str, str]:
    seen = run_for(run_id=event.run_id, user=person)
    if seen is None:
        return State.SKIPPED, "its recipient no longer sees the run"
    visible = {shown.pk for shown in seen.visible_events}
    if event.pk not in visible:
        return State.HELD, "waiting for the board's publication"
    later = Notification.objects.filter(
        recipient=person, run_event__run_id=event.run_id, run_event_id__gt=event.pk
    ).values_list("run_event_id", flat=True)
    if visible.intersection(later):
        return State.SKIPPED, "superseded by a later state of the run"
    run = event.run
    return _mailed(
        person,
        "run_finished",
        run=run,
        task=run.task,
        state=event.state,
        reason=event.reason,
        problems=run.errors[:PROBLEMS_IN_MAIL] if event.state == Run.State.REJECTED else [],
        n_problems=run.error_count,
        run_link=site_link("run_detail", run.pk),
        board_link=site_link("task_board", run.task.slug),
    )


def _deliver_approval(approval: TeamApproval, person: User) -> tuple[str, str]:
    if not approval.task.organizers.filter(pk=person.pk).exists():
        return State.SKIPPED, "its recipient no longer organizes the task"
    if approval.approved_at is not None:
        return State.SKIPPED, "already approved"
    return _mailed(
        person,
        "team_request",
        approval=approval,
        task=approval.task,
        team=approval.team,
        organize_link=site_link("task_organize", approval.task.slug),
    )


def _mailed(person: User, template: str, **context: Any) -> tuple[str, str]:
    """Mail ``person`` the ``template`` (its context: ``person`` and ``context``): sent."""
    send_site_mail(to=person.email, template=template, context={"person": person, **context})
    return State.SENT, ""


# -- held and lost mail ---------------------------------------------------------------------------


def release_held_notifications(task: Task) -> list[int]:
    """The task's board was published: its held mail is owed again (the sender checks what each
    recipient may see now). In the publication's transaction; returns the ids."""
    held = Notification.objects.filter(state=State.HELD, run_event__run__task=task)
    ids = list(held.values_list("pk", flat=True))
    if ids:
        Notification.objects.filter(pk__in=ids, state=State.HELD).update(
            state=State.PENDING, state_changed_at=timezone.now()
        )
        jobs.enqueue_notifications(ids)
    return ids


def resend_stuck_notifications(*, now: datetime | None = None) -> int:
    """The watchdog's: send again the notifications pending for ``PIPELINE_STUCK_SECONDS`` (their
    message was lost, or the mail server refused them), and look again at those held as long (a
    board may stop being held without a publication: its deadline moved, say); each is checked
    at most once per period. Returns how many."""
    now = now or timezone.now()
    deadline = now - timedelta(seconds=settings.PIPELINE_STUCK_SECONDS)
    stuck = Notification.objects.filter(
        state__in=(State.PENDING, State.HELD), state_changed_at__lt=deadline
    )
    ids = list(stuck.values_list("pk", flat=True)[:1000])
    if ids:
        Notification.objects.filter(pk__in=ids, state__in=(State.PENDING, State.HELD)).update(
            state=State.PENDING, state_changed_at=now
        )
        jobs.enqueue_notifications(ids)
    return len(ids)


# -- preferences ----------------------------------------------------------------------------------


class MailPreferenceError(ServiceError):
    """A setting that is not a kind of notification."""


def set_mail_preferences(*, user: User, **kinds: bool) -> dict[str, bool]:
    """Turn each kind of notification named in ``kinds`` on (``True``) or off, for ``user``;
    idempotent. Returns every kind's setting after."""
    unknown = sorted(set(kinds) - set(MailKind.values))
    if unknown:
        raise MailPreferenceError(
            f"not a kind of notification: {', '.join(unknown)} "
            f"(the kinds: {', '.join(MailKind.values)})"
        )
    for kind, on in kinds.items():
        if on:
            MailOptOut.objects.filter(user=user, kind=kind).delete()
        else:
            MailOptOut.objects.get_or_create(user=user, kind=kind)
    return mail_preferences(user)
