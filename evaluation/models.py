"""The sampling record of a task, persisted: every planning round, every item it drew or looked at.

Together with the runs' predictions and the verified labels, these rows are everything the engine
needs to rebuild its state exactly (:func:`evaluation.kinds.open_world.state.load_task_state`):
the inclusion probability of every item is the replay of the rounds' per-stratum levels, and the
drawn items are the sample. Rows are append-only.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class PlanRound(models.Model):
    """One call of the engine's planner for one run (``round`` 1, 2, ...), in task-wide order."""

    task = models.ForeignKey(
        "leaderboard.Task", on_delete=models.CASCADE, related_name="plan_rounds"
    )
    run = models.ForeignKey("leaderboard.Run", on_delete=models.CASCADE, related_name="plan_rounds")
    round = models.PositiveIntegerField()
    status = models.CharField(max_length=20)
    seed = models.BigIntegerField(null=True)
    # Level asked of each score stratum of the run, and the share of it applied (1 unless the
    # draw was cut to the remaining budget): what replaying the round needs.
    levels = models.JSONField(null=True)
    fraction = models.FloatField(default=1.0)
    n_items = models.PositiveIntegerField(default=0)
    predicted_half_width = models.FloatField(null=True)
    current_half_width = models.FloatField(null=True)
    expected_labels = models.FloatField(default=0.0)
    details = models.JSONField(default=dict)
    # The judgment set the planner saw (the task's ``labels_version``).
    labels_version = models.PositiveBigIntegerField(default=0)
    # Judgments each drawn item was asked for at first; the union cells the round gave a band
    # (``{"cells": [...], "bands": [...]}``) and the answer patterns it switched on
    # (``[[band, [yes, no]], ...]``): with the looks, what replaying the round needs beyond levels.
    judgments = models.PositiveSmallIntegerField(default=1)
    # Most judgments the planner would let one item have then (one per annotator of the task, up
    # to the design's cap): with ``judgments``, the design options the round was planned with.
    max_judgments = models.PositiveSmallIntegerField(default=1)
    bands = models.JSONField(default=dict)
    patterns = models.JSONField(default=list)
    engine_version = models.CharField(max_length=40)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "round"], name="plan_round_unique"),
        ]


class Draw(models.Model):
    """An item drawn for verification in a round, with its inclusion probability after the round."""

    plan_round = models.ForeignKey(PlanRound, on_delete=models.CASCADE, related_name="draws")
    item = models.ForeignKey("leaderboard.Item", on_delete=models.CASCADE, related_name="draws")
    inclusion = models.FloatField()

    class Meta:
        constraints = [
            # The engine never draws an item twice in a task.
            models.UniqueConstraint(fields=["item"], name="draw_unique_item"),
        ]


class Look(models.Model):
    """One more judgment a round asked on an item already drawn (a second look)."""

    plan_round = models.ForeignKey(PlanRound, on_delete=models.CASCADE, related_name="looks")
    item = models.ForeignKey("leaderboard.Item", on_delete=models.CASCADE, related_name="looks")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["plan_round", "item"], name="look_unique_item"),
        ]


class PoolSamplingRecord(models.Model):
    """A closed-pool task's inclusion probabilities after its latest round, packed (``float64``
    per pool item, in index order): with the permanent numbers regenerated from the task's seed,
    what the adaptive design resumes from in any process.

    Each round's drawn items and their probabilities are its :class:`Draw` rows; this row is
    written in the same transaction as the round and says how many rounds it reflects, so a
    reader can tell it matches the stored rounds.
    """

    task = models.OneToOneField(
        "leaderboard.Task", on_delete=models.CASCADE, related_name="pool_sampling"
    )
    inclusion = models.BinaryField()
    rounds = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(default=timezone.now)
