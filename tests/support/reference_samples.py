"""Test support: complete a reference sample draw as the estimation does, without annotators
(``evaluation.services.reference_sample.complete_draw``, the estimation's own write)."""

from __future__ import annotations

from django.db import transaction

from evaluation.services.reference_sample import complete_draw
from leaderboard.models import ReferenceCandidate, ReferenceSample, Task


def complete_latest(task: Task, true_keys=()) -> ReferenceSample:
    """Complete the task's latest draw with the candidates ``true_keys`` found true."""
    with transaction.atomic():
        locked = Task.objects.select_for_update().get(pk=task.pk)
        sample = ReferenceSample.objects.select_for_update().filter(task=locked).first()
        true_items = list(
            ReferenceCandidate.objects.filter(task=locked, item__key__in=true_keys).values_list(
                "item_id", "document"
            )
        )
        sample.save(update_fields=complete_draw(task=locked, sample=sample, true_items=true_items))
    return sample
