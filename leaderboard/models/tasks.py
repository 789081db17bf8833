"""Tasks and their items, and the reference sample (given, or built in the product)."""

from __future__ import annotations

import secrets
from collections.abc import Collection
from typing import Any, Self

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from evaluation.core.measures import OPEN_MEASURES
from evaluation.core.task_design import DesignSettings

from ..lookalikes import lookalike_digests


def _new_seed() -> int:
    return secrets.randbits(62)


class UniqueByLook:
    """A model whose ``look_field`` is unique by look, not by bytes (``leaderboard.lookalikes``):
    the digests of its two lookalike keys, in ``<look_field>_key`` and ``<look_field>_shape_key``
    (unique indexes, so a race cannot pass), are set whenever the field is saved with a new
    value. A row whose value has not changed keeps its keys and is not checked again: the rows
    that already looked alike when keys came in (given keys of their own by the migration)
    stay editable."""

    look_field: str
    look_kind: str  # what the model is called in a refusal

    @classmethod
    def from_db(
        cls,
        db: str | None,
        field_names: Collection[str],
        values: Collection[Any],
        **kwargs: Any,
    ) -> Self:
        row = super().from_db(db, field_names, values, **kwargs)  # type: ignore[misc]  # a mixin
        if cls.look_field in field_names:
            row._stored_look = list(values)[list(field_names).index(cls.look_field)]
        return row

    def _look_changed(self) -> bool:
        value = getattr(self, self.look_field)
        return self._state.adding or getattr(self, "_stored_look", None) != value  # type: ignore[attr-defined]

    def lookalike(self) -> Any:
        """Another row whose ``look_field`` looks like this one's."""
        field = self.look_field
        folded, shaped = lookalike_digests(getattr(self, field))
        rows = type(self)._default_manager  # type: ignore[attr-defined]  # mixed into models
        others = rows.filter(Q(**{f"{field}_key": folded}) | Q(**{f"{field}_shape_key": shaped}))
        return others.exclude(pk=self.pk).first()  # type: ignore[attr-defined]

    def clean(self) -> None:
        if not self._look_changed():
            return
        other = self.lookalike()
        value = getattr(self, self.look_field)
        if other is not None and getattr(other, self.look_field) != value:  # same: unique's
            raise ValidationError(
                {
                    self.look_field: f"looks like the {self.look_field} of {self.look_kind} "
                    f"{getattr(other, self.look_field)!r}"
                }
            )

    def save(self, *args, **kwargs) -> None:
        update_fields = kwargs.get("update_fields")
        saved = update_fields is None or self.look_field in update_fields
        if saved and self._look_changed():
            keys = (f"{self.look_field}_key", f"{self.look_field}_shape_key")
            digests = lookalike_digests(getattr(self, self.look_field))
            for key, digest in zip(keys, digests, strict=True):
                setattr(self, key, digest)
            if update_fields is not None:
                kwargs["update_fields"] = {*update_fields, *keys}
        super().save(*args, **kwargs)  # type: ignore[misc]  # mixed into models
        if saved:
            self._stored_look = getattr(self, self.look_field)


def default_measures() -> list[str]:
    """The measures a task shows unless its organizer picks others."""
    return list(OPEN_MEASURES)


class Task(UniqueByLook, models.Model):
    """A shared task: what annotators are asked, the precision target, budget and limits."""

    class State(models.TextChoices):
        DRAFT = "draft", "draft"
        OPEN = "open", "open"
        CLOSED = "closed", "closed"

    class Kind(models.TextChoices):
        OPEN = "open", "open world (a run is a set of predicted items)"
        CLOSED_POOL = "closed_pool", "closed pool (every run scores every pool item)"

    class DataAccess(models.TextChoices):
        PUBLIC = "public", "anyone who may see the task"
        SIGNED_IN = "signed_in", "signed-in people"
        TERMS_ACCEPTED = "terms_accepted", "members of a team that accepted the terms"

    slug = models.SlugField(max_length=80, unique=True)
    # Slugs are unique by look, not by bytes (``leaderboard.lookalikes``: ``My-Task`` is
    # ``my-task``): the digests of the two lookalike keys, set on every save.
    slug_key = models.CharField(max_length=64, unique=True, editable=False)
    slug_shape_key = models.CharField(max_length=64, unique=True, editable=False)
    look_field, look_kind = "slug", "task"
    title = models.CharField(max_length=200)
    # The task page (Markdown, rendered by ``leaderboard.page_text``): three fields, not one
    # document, because each is shown under its own heading, the terms alone are accepted (their
    # digest is the version a team accepted), and a fix to the rules asks nobody to accept again.
    description = models.TextField(
        blank=True,
        help_text="The task's overview, in Markdown: what it is about, the data, how "
        "runs are scored.",
    )
    rules = models.TextField(
        blank=True, help_text="The rules, in Markdown (shown on the task page)."
    )
    terms = models.TextField(
        blank=True,
        help_text="Terms a team accepts before its first run, in Markdown (empty: none). A "
        "change asks every team to accept again before its next run.",
    )
    data_access = models.CharField(
        max_length=20,
        choices=DataAccess.choices,
        default=DataAccess.TERMS_ACCEPTED,
        help_text="Who may download the task's data files (members of a team that accepted the "
        "terms: any signed-in person while the task has no terms). Everyone who may see the "
        "task sees the list.",
    )
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
        default=0.05,
        validators=[MinValueValidator(0.001), MaxValueValidator(0.5)],
        help_text="The interval half-width every run's estimates should reach.",
    )
    confidence = models.FloatField(
        default=0.95,
        validators=[MinValueValidator(0.5), MaxValueValidator(0.999)],
        help_text="The confidence level of every interval the board shows.",
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
    max_runs_per_team = models.PositiveIntegerField(
        default=20, help_text="Runs a team may submit in all (a run refunded does not count)."
    )
    max_runs_per_team_per_day = models.PositiveIntegerField(
        default=5, help_text="Runs a team may submit in 24 hours."
    )
    max_upload_bytes = models.PositiveBigIntegerField(
        default=512 * 1024 * 1024,
        help_text="The largest run file, in bytes (a gzipped file: once decompressed), within the "
        "site's own limit.",
    )
    max_predictions_per_run = models.PositiveIntegerField(
        default=5_000_000, help_text="The most predictions (lines) one run may hold."
    )

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
    # A closed pool's items are stored in short transactions: while this is set its items are
    # not the pool yet (an upload is storing them, or one stopped half-way), see has_pool.
    pool_loading = models.BooleanField(default=False, editable=False)
    # Version of the task's judgment set: every counted judgment, gold answer and withdrawal
    # bumps it, and records the version it made (``seq``, ``withdrawn_seq``).
    labels_version = models.PositiveBigIntegerField(default=0, editable=False)
    reference_version = models.PositiveIntegerField(default=0, editable=False)
    # The sampling frame reference sample draws add up in: a new candidates upload, a reference
    # file and a completed draw that replaces the sample each start a new one.
    reference_frame = models.PositiveIntegerField(default=0, editable=False)
    estimate_pending = models.BooleanField(default=False, editable=False)
    estimate_requested_at = models.DateTimeField(null=True, blank=True, editable=False)
    engine_lock_token = models.CharField(max_length=64, blank=True, editable=False)
    engine_lock_until = models.DateTimeField(null=True, blank=True, editable=False)

    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.slug

    @property
    def has_pool(self) -> bool:
        """A closed pool's items are all stored (runs are taken and scored on them)."""
        return bool(self.n_items) and not self.pool_loading

    def design_settings(self) -> DesignSettings:
        """The settings that configure the task's engine design (``evaluation.core.task_design``
        builds it; options that are not an object are left to the validator to refuse)."""
        options = self.design_options if isinstance(self.design_options, dict) else {}
        return DesignSettings(
            kind=self.kind,
            design=self.design,
            options=options,
            target_half_width=self.target_half_width,
            confidence=self.confidence,
            label_budget=self.label_budget,
            judgments_per_item=self.judgments_per_item,
            measures=tuple(self.measures or ()),
            f_beta=self.f_beta,
        )


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


class ReferenceItem(models.Model):
    """One item of the task's reference sample of true items (for recall), with its group.

    ``settled``: a candidate of a draw that its organizer settled, decided true by its posterior
    below the task's confidence (``ReferenceSample.settled``), not resolved at it."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="reference_items")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    group = models.CharField(max_length=200, blank=True)
    settled = models.BooleanField(default=False)

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

    ``verifying`` until every candidate of the drawn documents is resolved at the task's
    confidence (``evaluation.kinds.open_world.reference_sample``); then ``complete``: the reference
    sample becomes the true candidates of every complete draw of its sampling ``frame`` (a draw
    marked ``replace`` starts a new frame, so its own), written as ``reference_version``; or
    ``cancelled`` by an organizer while verifying (the reference sample is left as it was). At
    most one sample of a task verifies at a time.

    An organizer may ask to *settle* a draw whose every candidate in doubt is stuck
    (``settle_requested_at``): the next estimation that finds them all stuck completes it with
    each labelled by its posterior (true above one half), recorded in ``settled`` (key, posterior,
    label): decided below the task's confidence.
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
    frame = models.PositiveIntegerField(default=0)  # the task's sampling frame it belongs to
    replace = models.BooleanField(default=False)  # starts a new frame: replaces the sample
    # Progress, as the latest estimation resolved the candidates' labels: resolved at the task's
    # confidence, true among them, further looks asked, and the keys of the candidates still
    # doubtful with every judgment they can get (the sample cannot complete while there are any).
    n_resolved = models.PositiveIntegerField(default=0)
    n_true = models.PositiveIntegerField(default=0)
    n_looks = models.PositiveIntegerField(default=0)
    stuck = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    completed_at = models.DateTimeField(null=True, blank=True)
    reference_version = models.PositiveIntegerField(null=True, blank=True)
    # The size of the reference sample that version holds (items, documents).
    reference_items = models.PositiveIntegerField(null=True, blank=True)
    reference_documents = models.PositiveIntegerField(null=True, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)
    cancelled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    settle_requested_at = models.DateTimeField(null=True, blank=True)
    settle_requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The stuck candidates its completion decided by their posterior: [{"key", "posterior",
    # "true"}], by key.
    settled = models.JSONField(default=list, blank=True)

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

    @property
    def n_awaiting(self) -> int:
        """Candidates neither resolved nor stuck, as the latest estimation found them: they
        await a judgment (a first answer or a further look)."""
        return max(self.n_candidates - self.n_resolved - len(self.stuck), 0)

    @property
    def n_settled_true(self) -> int:
        """Settled candidates decided true (added to the reference sample)."""
        return sum(1 for entry in self.settled if entry["true"])
