"""Reads of the verification queue."""

from __future__ import annotations

from leaderboard.models import Task

from .models import VerificationRequest


def next_request_for(*, task: Task, annotator) -> VerificationRequest | None:
    """The next pending request this annotator has not answered, in the pipeline's order."""
    return (VerificationRequest.objects
            .filter(task=task, state=VerificationRequest.State.PENDING)
            .exclude(judgments__annotator=annotator)
            .select_related("item")
            .order_by("priority", "id")
            .first())


def queue_counts(*, task: Task) -> dict:
    """Pending and resolved request counts of a task."""
    qs = VerificationRequest.objects.filter(task=task)
    pending = qs.filter(state=VerificationRequest.State.PENDING).count()
    return {"pending": pending, "resolved": qs.count() - pending}
