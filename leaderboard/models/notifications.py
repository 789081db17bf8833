"""Mail the site sends on its own: each notification owed to one person for one event, and the
kinds of mail a person turned off.

A :class:`Notification` is written in the transaction of its event (a run's state change, a
team's request to take part), so the database says what is owed even when the message that
would send it is lost; ``leaderboard.services.notifications`` sends it once, from a worker.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from .people import TeamApproval
from .runs import RunEvent


class MailKind(models.TextChoices):
    """The kinds of notification a person can turn off, each on by default."""

    RUN_FINISHED = "run_finished", "a run of one of your teams is scored, partial or rejected"
    TEAM_REQUEST = "team_request", "a team asks to take part in a task you organize"


class Notification(models.Model):
    """One mail owed to ``recipient`` for one event (a run event or a team's request), sent at
    most once: ``pending`` (to send), ``held`` (the recipient may not see the event yet: the
    board is held), ``sending`` (claimed by a worker), ``sent``, ``skipped`` (turned off, no
    address, no longer theirs to see, superseded) or ``failed`` (the mail server kept refusing)."""

    class State(models.TextChoices):
        PENDING = "pending", "pending"
        HELD = "held", "held"
        SENDING = "sending", "sending"
        SENT = "sent", "sent"
        SKIPPED = "skipped", "skipped"
        FAILED = "failed", "failed"

    kind = models.CharField(max_length=20, choices=MailKind.choices)
    recipient = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications"
    )
    run_event = models.ForeignKey(
        RunEvent, on_delete=models.CASCADE, null=True, blank=True, related_name="notifications"
    )
    approval = models.ForeignKey(
        TeamApproval, on_delete=models.CASCADE, null=True, blank=True, related_name="notifications"
    )
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    note = models.CharField(max_length=300, blank=True, help_text="Why it was not sent.")
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    state_changed_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["run_event", "recipient"],
                condition=Q(run_event__isnull=False),
                name="notification_once_per_run_event",
            ),
            models.UniqueConstraint(
                fields=["approval", "recipient"],
                condition=Q(approval__isnull=False),
                name="notification_once_per_approval",
            ),
            models.CheckConstraint(
                condition=Q(run_event__isnull=False, approval__isnull=True)
                | Q(run_event__isnull=True, approval__isnull=False),
                name="notification_one_event",
            ),
        ]
        indexes = [models.Index(fields=["state", "state_changed_at"], name="notification_state")]

    def __str__(self) -> str:
        return f"{self.kind} to {self.recipient_id} ({self.state})"


class MailOptOut(models.Model):
    """A person turned one kind of notification off (no row: on)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="mail_opt_outs"
    )
    kind = models.CharField(max_length=20, choices=MailKind.choices)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "kind"], name="mail_opt_out_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} turned off {self.kind}"
