"""Tasks, teams, items, runs and their predictions, the reference sample, estimates and snapshots.

A task's items get dense indices ``0 .. n_items - 1`` in arrival order: the engine
(:mod:`evaluation.core`) works on those integers. A run's predictions are stored as two packed
arrays (item indices, scores), so a million-line run is one row of ~16 MB that loads into the engine
with two ``numpy.frombuffer`` calls.
"""

from __future__ import annotations

import hashlib
import secrets

import numpy as np
from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone


def _new_seed() -> int:
    return secrets.randbits(62)


def key_digest(key: str) -> str:
    """The SHA-256 digest under which a random key (an API token, an invitation) is stored.

    Keys are 256 random bits, so a plain digest (no salt, no slow hash) cannot be reversed, and it
    lets a key be looked up by index.
    """
    return hashlib.sha256(key.encode()).hexdigest()


def default_measures() -> list[str]:
    """The measures a task shows unless its organizer picks others."""
    return ["precision", "recall", "f1"]


class Team(models.Model):
    """A group of participants; runs belong to teams, quotas count per team."""

    name = models.CharField(max_length=120, unique=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="teams", blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.name


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

    class Meta:
        abstract = True


class TeamInvitation(Invitation):
    """A link that lets one person join a team."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invitations")

    def __str__(self) -> str:
        return f"invitation to {self.team}"


class Task(models.Model):
    """A shared task: what annotators are asked, the precision target, budget and limits."""

    class State(models.TextChoices):
        DRAFT = "draft", "draft"
        OPEN = "open", "open"
        CLOSED = "closed", "closed"

    class Kind(models.TextChoices):
        OPEN = "open", "open world (a run is a set of predicted items)"
        CLOSED_POOL = "closed_pool", "closed pool (every run scores every pool item)"

    slug = models.SlugField(max_length=80, unique=True)
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    question = models.TextField(
        default="Is this prediction correct?",
        help_text="Shown to annotators above every item.",
    )
    display_template = models.TextField(
        blank=True, help_text="How an item's payload is shown to annotators (empty: as a table)."
    )
    state = models.CharField(max_length=10, choices=State.choices, default=State.OPEN)
    kind = models.CharField(
        max_length=20,
        choices=Kind.choices,
        default=Kind.OPEN,
        help_text="Closed pool: the organizer uploads every item once; each run scores them all.",
    )
    measures = models.JSONField(
        default=default_measures,
        blank=True,
        help_text="Measures the board shows (closed pools: any of precision, recall, f1, "
        "accuracy, balanced_accuracy, mcc, fbeta; open tasks: precision, recall, f1).",
    )
    f_beta = models.FloatField(
        default=1.0,
        validators=[MinValueValidator(0.1), MaxValueValidator(10.0)],
        help_text="The beta of the measure fbeta (closed pools), shown as F0.5, F2, ...: "
        "recall weighs beta times as much as precision.",
    )
    organizers = models.ManyToManyField(
        settings.AUTH_USER_MODEL, related_name="organized_tasks", blank=True
    )
    annotators = models.ManyToManyField(
        settings.AUTH_USER_MODEL, related_name="annotated_tasks", blank=True
    )

    # What every run's estimates must reach.
    target_half_width = models.FloatField(
        default=0.05, validators=[MinValueValidator(0.001), MaxValueValidator(0.5)]
    )
    confidence = models.FloatField(
        default=0.95, validators=[MinValueValidator(0.5), MaxValueValidator(0.999)]
    )
    label_budget = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Most judgments the task may ask annotators for, gold answers included "
        "(empty: none).",
    )
    judgments_per_item = models.PositiveSmallIntegerField(
        default=1,
        validators=[MinValueValidator(1), MaxValueValidator(9)],
        help_text="Judgments each new item gets at first, each by another annotator: a minimum "
        "(the planner asks more where answers are doubtful).",
    )
    design = models.CharField(max_length=40, default="default")
    design_options = models.JSONField(default=dict, blank=True)

    # Annotator quality control (enforced by the annotation queue).
    annotator_daily_cap = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Most answers one annotator may give per day (empty: none).",
    )
    gold_rate = models.FloatField(
        default=0.05,
        validators=[MinValueValidator(0.0), MaxValueValidator(0.5)],
        help_text="Share of served items that are gold items with known answers.",
    )
    gold_min_accuracy = models.FloatField(
        default=0.7,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Annotators whose gold accuracy falls below this are paused for review.",
    )
    gold_min_answers = models.PositiveIntegerField(
        default=10, help_text="Gold answers needed before an annotator's accuracy is judged."
    )

    # Submission limits, per team.
    max_runs_per_team = models.PositiveIntegerField(default=20)
    max_runs_per_team_per_day = models.PositiveIntegerField(default=5)
    max_upload_bytes = models.PositiveBigIntegerField(default=512 * 1024 * 1024)
    max_predictions_per_run = models.PositiveIntegerField(default=5_000_000)

    team_approval = models.BooleanField(
        default=False,
        help_text="Teams ask to take part and an organizer approves them before their runs are "
        "accepted.",
    )
    annotators_may_compete = models.BooleanField(
        default=False,
        help_text="Let a person annotate this task and be a member of a team with runs on it "
        "(off: one or the other). Nobody ever verifies their own team's items.",
    )
    # Who may submit, by the domain of a verified email address (leaderboard.email_domains).
    allowed_email_domains = models.TextField(
        blank=True,
        help_text="Only people with a verified email address at one of these domains (or their "
        "subdomains) may submit; comma-separated (empty: anyone).",
    )
    blocked_email_domains = models.TextField(
        blank=True,
        help_text="People with a verified email address at one of these domains (or their "
        "subdomains) may not submit; comma-separated.",
    )

    # While held, new snapshots are stored unpublished: the public board keeps showing the last
    # published one until an organizer publishes (e.g. after a deadline).
    board_held = models.BooleanField(
        default=False, help_text="Hold the public leaderboard: new snapshots wait for publishing."
    )

    # Phases (UTC; all optional). Runs are refused before ``submissions_open_at``; after
    # ``submissions_close_at`` they are accepted and marked after the deadline (or refused when
    # ``accept_late_runs`` is off), and the board is held; ``reveal_at`` publishes it.
    submissions_open_at = models.DateTimeField(
        null=True, blank=True, help_text="Runs are refused before this time (empty: no start)."
    )
    submissions_close_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="The official deadline: the board is held from then on, and later runs are "
        "marked after the deadline (empty: none).",
    )
    reveal_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the held board is published (empty: an organizer publishes by hand).",
    )
    accept_late_runs = models.BooleanField(
        default=True,
        help_text="Keep scoring runs submitted after the deadline, marked as such (off: refuse "
        "them).",
    )
    # What the phase job applied, so each deadline holds the board once and each reveal
    # publishes it once: the close and reveal times they were applied for.
    hold_applied_for = models.DateTimeField(null=True, blank=True, editable=False)
    reveal_applied_for = models.DateTimeField(null=True, blank=True, editable=False)

    # Engine bookkeeping.
    seed = models.BigIntegerField(default=_new_seed, editable=False)
    n_items = models.PositiveBigIntegerField(default=0, editable=False)
    # Version of the task's judgment set: every counted judgment, gold answer and withdrawal
    # bumps it, and records the version it made (``seq``, ``withdrawn_seq``).
    labels_version = models.PositiveBigIntegerField(default=0, editable=False)
    reference_version = models.PositiveIntegerField(default=0, editable=False)
    estimate_pending = models.BooleanField(default=False, editable=False)
    estimate_requested_at = models.DateTimeField(null=True, blank=True, editable=False)
    engine_lock_token = models.CharField(max_length=64, blank=True, editable=False)
    engine_lock_until = models.DateTimeField(null=True, blank=True, editable=False)

    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.slug


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


class Item(models.Model):
    """Something a run can predict; verified by annotators when the planner draws it.

    An item has no label of its own: its annotators' judgments are evidence, which the engine
    weighs with each annotator's estimated error rates (the posterior is in
    :class:`LabelModelFit`).
    """

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="items")
    key = models.CharField(max_length=512)
    index = models.PositiveBigIntegerField()
    payload = models.JSONField(null=True, blank=True)
    # When its first counted judgment came in.
    verified_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "key"], name="item_unique_key"),
            models.UniqueConstraint(fields=["task", "index"], name="item_unique_index"),
        ]
        # The items export streams a task's judged items in the order they were first judged.
        indexes = [models.Index(fields=["task", "verified_at"], name="item_task_verified")]

    def __str__(self) -> str:
        return f"{self.task_id}:{self.key}"


class Run(models.Model):
    """One submission of a team to a task, and where it is in its lifecycle."""

    class State(models.TextChoices):
        RECEIVED = "received", "received"
        VALIDATING = "validating", "validating"
        REJECTED = "rejected", "rejected"
        QUEUED = "queued", "queued"
        PLANNING = "planning", "planning"
        AWAITING_LABELS = "awaiting_labels", "awaiting labels"
        ESTIMATING = "estimating", "estimating"
        SCORED = "scored", "scored"
        PARTIAL = "partial", "partial"
        FAILED = "failed", "failed"

    TERMINAL = (State.REJECTED, State.SCORED, State.PARTIAL, State.FAILED)
    # States in which the pipeline still owes the run work (the watchdog watches these).
    ACTIVE = (State.QUEUED, State.PLANNING, State.AWAITING_LABELS, State.ESTIMATING)

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


class RunPredictions(models.Model):
    """A run's predictions as packed arrays: sorted ``int64`` item indices, ``float64`` scores."""

    run = models.OneToOneField(
        Run, on_delete=models.CASCADE, primary_key=True, related_name="predictions"
    )
    items = models.BinaryField()
    scores = models.BinaryField()

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return (
            np.frombuffer(bytes(self.items), dtype=np.int64),
            np.frombuffer(bytes(self.scores), dtype=np.float64),
        )


class PoolRunOutputs(models.Model):
    """A closed-pool run's output on every pool item, packed in item index order: ``float64``
    scores and ``uint8`` 0/1 labels. Its predicted positives are also its
    :class:`RunPredictions` (what the annotation queue's conflict rules read)."""

    run = models.OneToOneField(
        Run, on_delete=models.CASCADE, primary_key=True, related_name="pool_outputs"
    )
    scores = models.BinaryField()
    labels = models.BinaryField()

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return (
            np.frombuffer(bytes(self.scores), dtype="<f8"),
            np.frombuffer(bytes(self.labels), dtype=np.uint8),
        )


class ReferenceItem(models.Model):
    """One item of the task's reference sample of true items (for recall), with its group."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="reference_items")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    group = models.CharField(max_length=200, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "item"], name="reference_unique_item"),
        ]


class ReferenceCandidate(models.Model):
    """A candidate item of one document (group) from which the product builds the reference
    sample: every candidate of a sampled document is verified, and the true ones become the
    sample (``annotation.services.reference_sample``). Replaced whole by each upload."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="reference_candidates")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    document = models.CharField(max_length=200)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "item"], name="reference_candidate_unique"),
        ]
        indexes = [models.Index(fields=["task", "document"], name="reference_candidate_doc")]


class ReferenceSample(models.Model):
    """One draw of documents for the reference sample: the seed and the documents drawn (so it
    can be drawn again and audited), and where its verification stands.

    ``verifying`` until every candidate of the drawn documents is resolved; then ``complete``,
    its true candidates written as the task's reference sample (``reference_version``: the
    version that write made); or ``cancelled`` by an organizer while verifying (the reference
    sample is left as it was). At most one sample of a task verifies at a time.
    """

    class State(models.TextChoices):
        VERIFYING = "verifying", "verifying"
        COMPLETE = "complete", "complete"
        CANCELLED = "cancelled", "cancelled"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="reference_samples")
    state = models.CharField(max_length=12, choices=State.choices, default=State.VERIFYING)
    seed = models.BigIntegerField()
    size = models.PositiveIntegerField()  # documents asked for (and drawn)
    documents = models.JSONField(default=list)  # the drawn documents, in drawing order
    n_documents = models.PositiveIntegerField()  # documents there were to draw from
    n_candidates = models.PositiveIntegerField(default=0)  # candidates of the drawn documents
    # Progress, as the latest estimation resolved the candidates' labels.
    n_resolved = models.PositiveIntegerField(default=0)
    n_true = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    completed_at = models.DateTimeField(null=True, blank=True)
    reference_version = models.PositiveIntegerField(null=True, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)
    cancelled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["task"],
                condition=models.Q(state="verifying"),
                name="reference_sample_one_verifying",
            ),
        ]

    def __str__(self) -> str:
        return f"reference sample {self.pk} of {self.task_id} ({self.state})"


class LeaderboardSnapshot(models.Model):
    """An immutable, versioned result of estimating every run of a task at once."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="snapshots")
    version = models.PositiveIntegerField()
    created_at = models.DateTimeField(default=timezone.now)
    engine_version = models.CharField(max_length=40)
    design = models.CharField(max_length=40)
    labels_version = models.PositiveBigIntegerField()
    reference_version = models.PositiveIntegerField()
    n_labels = models.PositiveIntegerField()
    n_reference = models.PositiveIntegerField()
    confidence = models.FloatField()
    published = models.BooleanField(default=True)
    published_at = models.DateTimeField(null=True, blank=True)
    rows = models.JSONField(default=list)
    # Snapshot-wide statistics beside the rows, e.g. {"ranking": {"method": ..., "level": ...}}.
    details = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-version"]
        constraints = [
            models.UniqueConstraint(fields=["task", "version"], name="snapshot_unique_version"),
        ]


class Estimate(models.Model):
    """One metric of one run in one snapshot, with its interval."""

    class Metric(models.TextChoices):
        PRECISION = "precision", "precision"
        RECALL = "recall", "recall"
        F1 = "f1", "F1"
        ACCURACY = "accuracy", "accuracy"
        BALANCED_ACCURACY = "balanced_accuracy", "balanced accuracy"
        MCC = "mcc", "MCC"
        FBETA = "fbeta", "F-beta"

    snapshot = models.ForeignKey(
        LeaderboardSnapshot, on_delete=models.CASCADE, related_name="estimates"
    )
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="estimates")
    metric = models.CharField(max_length=20, choices=Metric.choices)
    value = models.FloatField(null=True)
    low = models.FloatField()
    high = models.FloatField()
    level = models.FloatField()
    labels_used = models.PositiveIntegerField()
    method = models.CharField(max_length=80)
    computed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["snapshot", "run", "metric"], name="estimate_unique_metric"
            ),
        ]


class RunCurve(models.Model):
    """A closed-pool run's estimated precision-recall curve in one snapshot (computed by the
    worker with the snapshot's estimates; shown on the run page under the same visibility).

    ``data`` is :meth:`evaluation.core.closed_pool.PrecisionRecallCurve.as_dict`: thresholds,
    precision and recall with pointwise intervals, level, method, labels used, operating point.
    """

    snapshot = models.ForeignKey(
        LeaderboardSnapshot, on_delete=models.CASCADE, related_name="curves"
    )
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="curves")
    data = models.JSONField(default=dict)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["snapshot", "run"], name="run_curve_unique"),
        ]


class LabelModelFit(models.Model):
    """What the latest estimation of a task inferred about its labels and its annotators: each
    verified item's probability of being correct, and each annotator's estimated error rates.

    Organizers only (the items export, the queue page): snapshots, which participants read, name
    only the method. One row per task, replaced with every snapshot the estimation stores; item
    arrays are packed like run predictions (sorted item indices as int64, posteriors as float64,
    judgments and "correct" answers per item as int32), so nothing fits a model on a request.
    """

    task = models.OneToOneField(Task, on_delete=models.CASCADE, related_name="label_fit")
    snapshot = models.ForeignKey(LeaderboardSnapshot, on_delete=models.CASCADE, related_name="+")
    indices = models.BinaryField()
    values = models.BinaryField()
    judgments = models.BinaryField()
    says_correct = models.BinaryField()
    # Per annotator: {"annotator": user pk, "sensitivity": [value, low, high], "specificity":
    # [...], "judgments", "gold_judgments", "weight"}, intervals at ``level``.
    annotators = models.JSONField(default=list)
    level = models.FloatField(default=0.95)

    def arrays(self):
        """``(item indices, posteriors, judgments, says correct)`` as numpy arrays."""
        return (
            np.frombuffer(bytes(self.indices), dtype="<i8"),
            np.frombuffer(bytes(self.values), dtype="<f8"),
            np.frombuffer(bytes(self.judgments), dtype="<i4"),
            np.frombuffer(bytes(self.says_correct), dtype="<i4"),
        )


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
