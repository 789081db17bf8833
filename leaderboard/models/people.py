"""Teams, invitations to teams and tasks, team approvals, API tokens: who takes part."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import models
from django.utils import timezone

from .tasks import Task, UniqueByLook


def key_digest(key: str) -> str:
    """The SHA-256 digest under which a random key (an API token, an invitation) is stored.

    Keys are 256 random bits, so a plain digest (no salt, no slow hash) cannot be reversed, and it
    lets a key be looked up by index.
    """
    return hashlib.sha256(key.encode()).hexdigest()


class Team(UniqueByLook, models.Model):
    """A group of participants; runs belong to teams, quotas count per team."""

    name = models.CharField(max_length=120, unique=True)
    # Names are unique by look, not by bytes (``leaderboard.lookalikes``): the digests of the
    # name's two lookalike keys, set on every save, under unique indexes so a race cannot pass.
    name_key = models.CharField(max_length=64, unique=True, editable=False)
    name_shape_key = models.CharField(max_length=64, unique=True, editable=False)
    look_field, look_kind = "name", "team"
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="teams", blank=True)
    # Who made the team: while a member, the one who may remove members (unknown for teams made
    # before it was recorded: their members can only leave).
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.name


class TeamDeparture(models.Model):
    """A person who left a team, or was removed from it, and when.

    Conflicts of interest follow membership history: whoever was a member of a team while a task
    existed never verifies that team's items on it (``selectors.conflicted_teams``), so leaving
    the team does not open its items to them. Recorded for every way a membership ends (leaving,
    removal, the admin), by ``services.teams.record_departures``.
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="departures")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_departures"
    )
    left_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["user", "team"], name="departure_by_user")]

    def __str__(self) -> str:
        return f"{self.user} left {self.team}"


class Invitation(models.Model):
    """A link that lets one person in, once, until it expires or is revoked: the fields and
    rules every invitation shares (a team's, :class:`TeamInvitation`; a role on a task,
    :class:`TaskInvitation`). ``leaderboard.services.invitations`` issues, checks and uses them.

    Only the key's digest (:func:`key_digest`) is stored: the link is shown once, when made.
    """

    digest = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    used_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)
    # Invitations sent by mail: the one address the link was sent to, and when it went out.
    sent_to = models.EmailField(blank=True)
    mailed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


class TeamInvitation(Invitation):
    """A link that lets one person join a team."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invitations")

    def __str__(self) -> str:
        return f"invitation to {self.team}"


class TeamApproval(models.Model):
    """A team's request to take part in a task that needs approval, and its approval."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="team_approvals")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="approvals")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    requested_at = models.DateTimeField(default=timezone.now)
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    approved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["requested_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["task", "team"], name="team_approval_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.team} on {self.task}"


class TaskInvitation(Invitation):
    """A link that makes one person an annotator or an organizer of a task."""

    class Role(models.TextChoices):
        ANNOTATOR = "annotator", "annotator"
        ORGANIZER = "organizer", "organizer"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="invitations")
    role = models.CharField(max_length=10, choices=Role.choices)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"invitation to {self.role} {self.task}"


class ApiToken(models.Model):
    """A user's API key, kept only as its SHA-256 digest: the key is shown once, when made.

    The digest is :func:`key_digest`'s.
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_token"
    )
    digest = models.CharField(max_length=64, unique=True)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"API token of {self.user}"

    @staticmethod
    def digest_of(key: str) -> str:
        return key_digest(key)
