"""The progress and completion of a reference sample built in the product, checked by every
estimation of its task (each resolved request asks for one, debounced).

A candidate of a drawn document is resolved when its request got every judgment asked of it and
the engine's state holds them all; its label is what the estimation itself uses, the annotator
model's posterior (``design.labels``; exact for gold items): true when above one half. When every
candidate is resolved, the true ones become the task's reference sample with their document as
group through the reference service's one write path (one ``reference_version`` bump, a new
estimation if the task has runs), and the sample is complete, in one transaction. The check
locks the sample's row and does nothing to a complete one: safe to run again, or twice at once.
"""

from __future__ import annotations

import numpy as np
from django.db import transaction
from django.utils import timezone

from annotation.models import VerificationRequest
from leaderboard.models import ReferenceCandidate, ReferenceSample, Task
from leaderboard.services.reference import replace_reference

from ..engine_state import LoadedTask

TRUE_ABOVE = 0.5  # a candidate is true when its posterior is above this


def update_reference_sample(loaded: LoadedTask) -> ReferenceSample | None:
    """Record the progress of the task's sample being verified, and complete it once every
    candidate is resolved; return the sample (``None`` if none is being verified)."""
    task = loaded.task
    sample = ReferenceSample.objects.filter(
        task=task, state=ReferenceSample.State.VERIFYING
    ).first()
    if sample is None:
        return None
    candidates = list(
        ReferenceCandidate.objects.filter(task=task, document__in=sample.documents)
        .order_by("item__index")
        .values_list("item_id", "item__index", "document")
    )
    requests = dict(
        VerificationRequest.objects.filter(
            item_id__in=[c[0] for c in candidates], state=VerificationRequest.State.RESOLVED
        ).values_list("item_id", "judgments_counted")
    )
    labels = loaded.design.labels(loaded.state)
    n = loaded.state.n_items
    resolved = np.array(
        [
            item_id in requests
            and index < n
            and bool(labels.verified[index])
            and int(labels.judgments[index]) >= requests[item_id]
            for item_id, index, _ in candidates
        ],
        dtype=bool,
    )
    true = np.array(
        [
            bool(ok) and float(labels.value[index]) > TRUE_ABOVE
            for ok, (_, index, _) in zip(resolved, candidates, strict=True)
        ],
        dtype=bool,
    )
    with transaction.atomic():
        locked = Task.objects.select_for_update().get(pk=task.pk)
        current = ReferenceSample.objects.select_for_update().filter(pk=sample.pk).first()
        if current is None or current.state != ReferenceSample.State.VERIFYING:
            return current
        current.n_resolved = int(resolved.sum())
        current.n_true = int(true.sum())
        fields = ["n_resolved", "n_true"]
        if resolved.all():
            chosen = [c for c, t in zip(candidates, true, strict=True) if t]
            current.reference_version = replace_reference(
                task=locked,
                item_ids=[c[0] for c in chosen],
                groups=[c[2] for c in chosen],
            )
            current.state = ReferenceSample.State.COMPLETE
            current.completed_at = timezone.now()
            fields += ["reference_version", "state", "completed_at"]
        current.save(update_fields=fields)
    return current
