"""What a task's page offers participants besides its text: the terms each team accepted, and
the data files its organizers upload."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from .people import Team
from .tasks import Task


class TermsAcceptance(models.Model):
    """A team's acceptance of one version of a task's terms: who accepted, when, the digest of
    the text (``leaderboard.page_text.text_digest``) and the text itself, so that what was
    accepted can be shown after the terms change. A change of the terms asks for a new one."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="terms_acceptances")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="terms_acceptances")
    digest = models.CharField(max_length=64)
    terms = models.TextField()
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    accepted_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-accepted_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["task", "team", "digest"], name="terms_acceptance_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.team} accepted the terms of {self.task} ({self.digest[:12]})"


class TaskFile(models.Model):
    """A file the organizers offer participants (input data, a sample run, a starter script),
    kept in Django's default storage under a name of the platform's (``stored``); ``file_name``
    is the name it is downloaded as. Replacing it keeps its id, title and place."""

    class Kind(models.TextChoices):
        INPUT_DATA = "input_data", "input data"
        SAMPLE_RUN = "sample_run", "sample run file"
        STARTER = "starter", "starter script"
        OTHER = "other", "other"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="files")
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.INPUT_DATA)
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    file_name = models.CharField(max_length=255)
    stored = models.CharField(max_length=255)
    size = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    uploaded_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["kind", "title", "id"]

    def __str__(self) -> str:
        return f"{self.task}: {self.file_name}"
