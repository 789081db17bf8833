"""What annotators verify: requests for drawn items, leases on them, judgments, gold items.

A :class:`VerificationRequest` is one item the planner needs verified. Annotators are handed
requests through :class:`Assignment` rows (leases: short-lived, renewed by the page's heartbeat)
and answer them as :class:`Judgment` rows. :class:`GoldItem` rows are items with a known answer,
mixed into the queue to measure each annotator; their answers are :class:`GoldAnswer` rows. The
engine weighs every judgment and gold answer with each annotator's estimated error rates.
:class:`AnnotatorPause` keeps annotators whose gold accuracy fell too low away from the queue
until an organizer lifts the pause.
:class:`RequestConflict` names the teams whose runs predicted a request's item: their members never
get it. The rules are described in ``docs/ANNOTATION.md``.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class Answer(models.TextChoices):
    CORRECT = "correct", "correct"
    INCORRECT = "incorrect", "incorrect"
    CANNOT_TELL = "cannot_tell", "can't tell"


class VerificationRequest(models.Model):
    """An item the planner needs judged; resolved once every judgment asked of it is in.

    ``judgments_required`` starts at the judgments the planner asks of a new item (the task's
    judgments per item) and grows by one for every further look it asks; a "can't tell" is kept
    but counts for nothing, so the slot it leaves goes to another annotator.
    """

    class State(models.TextChoices):
        PENDING = "pending", "pending"
        RESOLVED = "resolved", "resolved"
        # No run or reference sample still needs it (its run was withdrawn); asked again (a new
        # run predicting the item, a reference draw, a look) it is pending once more.
        CANCELLED = "cancelled", "cancelled"

    task = models.ForeignKey(
        "leaderboard.Task", on_delete=models.CASCADE, related_name="verification_requests"
    )
    item = models.OneToOneField(
        "leaderboard.Item", on_delete=models.CASCADE, related_name="verification_request"
    )
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    judgments_required = models.PositiveSmallIntegerField(default=1)
    judgments_counted = models.PositiveSmallIntegerField(default=0)
    # Lower first: the order in which the pipeline wants items answered (the PlanRound pk).
    priority = models.BigIntegerField(default=0)
    # Bumped by every lease handed out: the compare-and-set token of claims on SQLite.
    lease_seq = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["priority", "id"]
        # In claim order, so a claim walks the index and stops at the first free request.
        indexes = [
            models.Index(fields=["task", "state", "priority", "id"], name="request_queue_order")
        ]


class GoldItem(models.Model):
    """An item of the task whose answer is known, served to annotators to measure accuracy."""

    class Source(models.TextChoices):
        ORGANIZER = "organizer", "loaded by an organizer"

    task = models.ForeignKey(
        "leaderboard.Task", on_delete=models.CASCADE, related_name="gold_items"
    )
    item = models.ForeignKey("leaderboard.Item", on_delete=models.CASCADE, related_name="+")
    answer = models.BooleanField(help_text="True: the prediction is correct.")
    source = models.CharField(max_length=20, choices=Source.choices, default=Source.ORGANIZER)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["task", "item"], name="gold_unique_item")]


class Assignment(models.Model):
    """A lease: one annotator may answer one request (or gold item) until ``expires_at``.

    ``token`` is the only id the annotator's page sees. A lease in state ``active`` whose
    ``expires_at`` has passed is expired: its slot is free at once, no sweeper needed, and it is
    never renewed again. A pause, or removing the annotator from the task, revokes their leases on
    it.
    """

    class State(models.TextChoices):
        ACTIVE = "active", "active"
        ANSWERED = "answered", "answered"
        RELEASED = "released", "released"
        EXPIRED = "expired", "expired"
        REVOKED = "revoked", "revoked (the annotator was paused or removed)"

    task = models.ForeignKey(
        "leaderboard.Task", on_delete=models.CASCADE, related_name="assignments"
    )
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments"
    )
    request = models.ForeignKey(
        VerificationRequest,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="assignments",
    )
    gold = models.ForeignKey(
        GoldItem, null=True, blank=True, on_delete=models.CASCADE, related_name="assignments"
    )
    token = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    state = models.CharField(max_length=10, choices=State.choices, default=State.ACTIVE)
    expires_at = models.DateTimeField()
    created_at = models.DateTimeField(default=timezone.now)
    # Set by the first heartbeat: a page holds this lease. A live lease never beaten was claimed
    # by a page that left before the reply arrived; the annotator's next claim adopts it.
    beat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=(
                    Q(request__isnull=False, gold__isnull=True)
                    | Q(request__isnull=True, gold__isnull=False)
                ),
                name="assignment_request_xor_gold",
            ),
            # One live lease per (request, annotator): two tabs never hold the same item.
            models.UniqueConstraint(
                fields=["request", "annotator"],
                condition=Q(state="active", request__isnull=False),
                name="assignment_one_active_request",
            ),
            models.UniqueConstraint(
                fields=["gold", "annotator"],
                condition=Q(state="active", gold__isnull=False),
                name="assignment_one_active_gold",
            ),
        ]
        indexes = [
            models.Index(fields=["request", "state", "expires_at"], name="assignment_slots"),
            models.Index(fields=["annotator", "task", "state"], name="assignment_of_annotator"),
        ]


class AnswerRecord(models.Model):
    """What every stored answer keeps, on an item to verify (``Judgment``) or on a gold item
    (``GoldAnswer``); rows are never deleted: an undo sets ``withdrawn_at``."""

    Answer = Answer

    answer = models.CharField(max_length=12, choices=Answer.choices)
    justification = models.CharField(max_length=500, blank=True)
    seconds_spent = models.FloatField(null=True, blank=True)
    # Given on a lease its annotator no longer held (expired, released, revoked by a pause):
    # kept as the audit trail, never counted and never measuring anybody.
    late = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    # Set when the annotator took the answer back (undo); the row stays as the audit trail.
    withdrawn_at = models.DateTimeField(null=True, blank=True)
    # The task's judgments version this counted answer is in, and the one its withdrawal made: a
    # reader of version ``v`` sees exactly the answers with ``seq <= v < withdrawn_seq``. A counted
    # judgment is stored without one and numbered by the next reader (``number_judgments``).
    seq = models.PositiveBigIntegerField(null=True, blank=True)
    withdrawn_seq = models.PositiveBigIntegerField(null=True, blank=True)

    class Meta:
        abstract = True


class Judgment(AnswerRecord):
    """One annotator's answer about one item; ``client_id`` makes retries idempotent."""

    request = models.ForeignKey(
        VerificationRequest, on_delete=models.CASCADE, related_name="judgments"
    )
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="judgments"
    )
    assignment = models.ForeignKey(
        Assignment, null=True, blank=True, on_delete=models.SET_NULL, related_name="judgments"
    )
    client_id = models.UUIDField(default=uuid.uuid4, unique=True)
    # False for skips and for answers the request no longer needed (kept, never counted twice).
    counted = models.BooleanField(default=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["request", "annotator"],
                condition=Q(withdrawn_at__isnull=True),
                name="judgment_unique_pair",
            ),
        ]
        indexes = [
            models.Index(fields=["annotator", "created_at"], name="judgment_by_annotator"),
            # The counted judgments no reader has numbered yet: few at any time.
            models.Index(
                fields=["request"],
                condition=Q(counted=True, seq__isnull=True),
                name="judgment_unnumbered",
            ),
        ]


class GoldAnswer(AnswerRecord):
    """An annotator's answer on a gold item; ``correct`` is None for "can't tell"."""

    gold = models.ForeignKey(GoldItem, on_delete=models.CASCADE, related_name="answers")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="gold_answers"
    )
    assignment = models.ForeignKey(
        Assignment, null=True, blank=True, on_delete=models.SET_NULL, related_name="gold_answers"
    )
    client_id = models.UUIDField(unique=True)
    correct = models.BooleanField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["gold", "annotator"],
                condition=Q(withdrawn_at__isnull=True),
                name="gold_answer_unique_pair",
            ),
        ]
        indexes = [
            models.Index(fields=["annotator", "created_at"], name="gold_answer_by_annotator")
        ]


class AnnotatorPause(models.Model):
    """An annotator kept away from a task's queue until an organizer lifts the pause."""

    task = models.ForeignKey("leaderboard.Task", on_delete=models.CASCADE, related_name="+")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="annotation_pauses"
    )
    reason = models.CharField(max_length=300)
    created_at = models.DateTimeField(default=timezone.now)
    lifted_at = models.DateTimeField(null=True, blank=True)
    lifted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["task", "annotator"],
                condition=Q(lifted_at__isnull=True),
                name="pause_one_open",
            ),
        ]


class RequestConflict(models.Model):
    """A team one of whose runs predicted the request's item: its members never get it."""

    request = models.ForeignKey(
        VerificationRequest, on_delete=models.CASCADE, related_name="conflicts"
    )
    team = models.ForeignKey("leaderboard.Team", on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["request", "team"], name="conflict_unique_pair"),
        ]
        indexes = [models.Index(fields=["team", "request"], name="conflict_by_team")]
