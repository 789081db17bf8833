"""What estimation stores: versioned snapshots of the board, each run's estimates, a closed-pool
run's precision-recall curve, and the annotator model as last fitted."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from .runs import PackedArrays, Run
from .tasks import Task


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
    # Documents the reference items come from (an item without one counts as its own); null for
    # a snapshot stored before they were counted whose reference sample has changed since.
    n_reference_documents = models.PositiveIntegerField(null=True, blank=True)
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


class LabelModelFit(PackedArrays, models.Model):
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
    # ``arrays()``: (item indices, posteriors, judgments, says correct).
    packed = {"indices": "<i8", "values": "<f8", "judgments": "<i4", "says_correct": "<i4"}
