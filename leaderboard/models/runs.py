"""Runs, their lifecycle events, and their stored predictions (open tasks) or outputs (closed
pools), packed for the engine."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from django.conf import settings
from django.db import models
from django.utils import timezone
from numpy.typing import DTypeLike

from .people import Team
from .tasks import Task


class Run(models.Model):
    """One submission of a team to a task, and where it is in its lifecycle."""

    class State(models.TextChoices):
        RECEIVED = "received", "received"
        VALIDATING = "validating", "validating"
        # Most keys match no item and look malformed: an organizer releases or rejects it.
        HELD = "held", "held for the organizers"
        REJECTED = "rejected", "rejected"
        QUEUED = "queued", "queued"
        PLANNING = "planning", "planning"
        AWAITING_LABELS = "awaiting_labels", "awaiting labels"
        ESTIMATING = "estimating", "estimating"
        SCORED = "scored", "scored"
        PARTIAL = "partial", "partial"
        FAILED = "failed", "failed"
        WITHDRAWN = "withdrawn", "withdrawn"

    TERMINAL = (State.REJECTED, State.SCORED, State.PARTIAL, State.FAILED, State.WITHDRAWN)
    # States in which the pipeline still owes the run work (the watchdog watches these).
    ACTIVE = (State.QUEUED, State.PLANNING, State.AWAITING_LABELS, State.ESTIMATING)
    # States a run may be withdrawn from (``leaderboard.services.withdrawal``): a rejected or
    # failed run is on no board and uses no quota, so there is nothing to withdraw.
    WITHDRAWABLE = (
        State.RECEIVED,
        State.VALIDATING,
        State.HELD,
        *ACTIVE,
        State.SCORED,
        State.PARTIAL,
    )

    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="runs")
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="runs")
    submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="runs"
    )
    name = models.CharField(max_length=120)
    description = models.TextField(blank=True)
    link = models.URLField(
        max_length=500, blank=True, help_text="Paper, code or system description (http or https)."
    )
    state = models.CharField(max_length=20, choices=State.choices, default=State.RECEIVED)
    reason = models.TextField(blank=True, help_text="Why the run is in its state (terminal ones).")
    errors = models.JSONField(default=list, blank=True, help_text="Rejection problems by line.")
    error_count = models.PositiveIntegerField(default=0)
    # The planner's last verdict: "", "sample", "met", "exhausted", "budget_exhausted", "gave_up".
    outcome = models.CharField(max_length=20, blank=True)

    file_name = models.CharField(max_length=255, blank=True)
    file_format = models.CharField(max_length=10, blank=True)
    file_bytes = models.PositiveBigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)
    # The received file in default storage, until a worker has validated it ("" after).
    upload = models.CharField(max_length=255, blank=True)
    n_predictions = models.PositiveIntegerField(default=0)
    n_new_items = models.PositiveIntegerField(default=0)
    n_requested = models.PositiveIntegerField(default=0)
    n_verified = models.PositiveIntegerField(default=0)
    rounds = models.PositiveIntegerField(default=0)
    attempts = models.PositiveIntegerField(default=0)
    quota_refunded = models.BooleanField(default=False)
    # Marked by an organizer: listed on the board as a reference point, without a rank.
    baseline = models.BooleanField(
        default=False,
        help_text="A baseline: shown on the board and its run page as such, and not ranked.",
    )
    # Kept in step with the deadline when an organizer moves it.
    after_deadline = models.BooleanField(
        default=False,
        editable=False,
        help_text="Received after the task's official deadline (submissions_close_at).",
    )

    created_at = models.DateTimeField(default=timezone.now)
    state_changed_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    # Not a column: the events a page may show, set by ``leaderboard.selectors.runs_seen_by``.
    visible_events: list[RunEvent]

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["task", "state"], name="run_task_state"),
            models.Index(fields=["team", "task", "created_at"], name="run_team_quota"),
        ]

    def __str__(self) -> str:
        return f"{self.task_id}/{self.name}"

    @property
    def is_terminal(self) -> bool:
        return self.state in self.TERMINAL


class RunEvent(models.Model):
    """Every state change of a run, timestamped, with its reason."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    state = models.CharField(max_length=20, choices=Run.State.choices)
    reason = models.TextField(blank=True)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]


class PackedArrays:
    """A model mixin for a row of packed NumPy arrays: one binary field for each, named in
    ``packed`` with its dtype, in the order :meth:`arrays` returns them."""

    packed: ClassVar[dict[str, DTypeLike]]

    def arrays(self) -> tuple[np.ndarray, ...]:
        return tuple(
            np.frombuffer(bytes(getattr(self, field)), dtype=dtype)
            for field, dtype in self.packed.items()
        )


class RunPredictions(PackedArrays, models.Model):
    """A run's predictions as packed arrays: sorted ``int64`` item indices, ``float64`` scores."""

    run = models.OneToOneField(
        Run, on_delete=models.CASCADE, primary_key=True, related_name="predictions"
    )
    items = models.BinaryField()
    scores = models.BinaryField()
    packed = {"items": np.int64, "scores": np.float64}


class PoolRunOutputs(PackedArrays, models.Model):
    """A closed-pool run's output on every pool item, packed in item index order: ``float64``
    scores and ``uint8`` 0/1 labels. Its predicted positives are also its
    :class:`RunPredictions` (what the annotation queue's conflict rules read)."""

    run = models.OneToOneField(
        Run, on_delete=models.CASCADE, primary_key=True, related_name="pool_outputs"
    )
    scores = models.BinaryField()
    labels = models.BinaryField()
    packed = {"scores": "<f8", "labels": np.uint8}
