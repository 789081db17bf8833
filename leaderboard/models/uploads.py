"""An organizer's upload of a task's data (gold items, a closed pool, a reference sample,
reference candidates): received by a web request, parsed and loaded by a worker, the way runs go.

The web request only streams the file to Django's default storage under the caps of
:func:`leaderboard.services.organizer_uploads.receive_upload`; the row records it ``received``.
A worker (``evaluation.load_upload``) moves it to ``parsing``, then ``loaded`` (with its counts,
the load all or nothing) or ``rejected`` (its first problems, capped, and how many there were).
Pages and the API only read this row: no response grows with the file.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from .tasks import Task


class OrganizerUpload(models.Model):
    class Kind(models.TextChoices):
        GOLD = "gold", "gold items"
        POOL = "pool", "pool"
        REFERENCE = "reference", "reference sample"
        CANDIDATES = "candidates", "reference candidates"

    class State(models.TextChoices):
        RECEIVED = "received", "received"
        PARSING = "parsing", "parsing"
        LOADED = "loaded", "loaded"
        REJECTED = "rejected", "rejected"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="organizer_uploads")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    state = models.CharField(max_length=20, choices=State.choices, default=State.RECEIVED)
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    file_name = models.CharField(max_length=255, blank=True)
    # Names in default storage while the upload waits for a worker ("" once it is settled).
    stored = models.CharField(max_length=255, blank=True)
    payloads_name = models.CharField(max_length=255, blank=True)
    payloads_stored = models.CharField(max_length=255, blank=True)
    n_bytes = models.PositiveBigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)
    # What the upload asked for beyond its file (reference candidates: ``confirm``).
    options = models.JSONField(default=dict, blank=True)
    # Loaded: what was loaded (counts by name). Rejected: the first problems and their total.
    counts = models.JSONField(default=dict, blank=True)
    message = models.TextField(blank=True)
    problems = models.JSONField(default=list, blank=True)
    problem_count = models.PositiveIntegerField(default=0)
    # Times the watchdog sent it to a worker again (a lost message, a killed worker).
    attempts = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["task", "-created_at"], name="organizer_upload_recent")]

    SETTLED = (State.LOADED, State.REJECTED)

    def __str__(self) -> str:
        return f"{self.task}: {self.kind} upload {self.pk} ({self.state})"
