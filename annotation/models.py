"""What annotators verify: one request per drawn item, and the judgments it collects."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone


class VerificationRequest(models.Model):
    """An item the planner needs verified; resolved once it has enough counted judgments."""

    class State(models.TextChoices):
        PENDING = "pending", "pending"
        RESOLVED = "resolved", "resolved"

    task = models.ForeignKey("leaderboard.Task", on_delete=models.CASCADE,
                             related_name="verification_requests")
    item = models.OneToOneField("leaderboard.Item", on_delete=models.CASCADE,
                                related_name="verification_request")
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    judgments_required = models.PositiveSmallIntegerField(default=1)
    judgments_counted = models.PositiveSmallIntegerField(default=0)
    # Lower first: the order in which the pipeline wants items answered.
    priority = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["priority", "id"]
        indexes = [models.Index(fields=["task", "state", "priority"], name="request_queue")]


class Judgment(models.Model):
    """One annotator's answer about one item; ``client_id`` makes retries idempotent."""

    class Answer(models.TextChoices):
        CORRECT = "correct", "correct"
        INCORRECT = "incorrect", "incorrect"
        CANNOT_TELL = "cannot_tell", "can't tell"

    request = models.ForeignKey(VerificationRequest, on_delete=models.CASCADE,
                                related_name="judgments")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT,
                                  related_name="judgments")
    client_id = models.UUIDField(default=uuid.uuid4, unique=True)
    answer = models.CharField(max_length=12, choices=Answer.choices)
    justification = models.CharField(max_length=500, blank=True)
    seconds_spent = models.FloatField(null=True, blank=True)
    # False for answers that arrive after the request resolved (kept, never counted twice).
    counted = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["request", "annotator"], name="judgment_unique_pair"),
        ]
