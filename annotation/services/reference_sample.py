"""Draw the documents of a reference sample built in the product and queue their candidates.

The organizer uploaded each document's candidate items
(:mod:`leaderboard.services.reference_candidates`); a draw picks ``size`` documents uniformly
at random without replacement (NumPy's ``default_rng(seed)`` over the documents in sorted
order, so the seed and the candidates say exactly which documents a draw picks: recorded on the
:class:`~leaderboard.models.ReferenceSample` with the documents drawn), and asks for every
candidate of them through the verification queue
(:func:`~annotation.services.judgments.request_verification`, like any planned item). The
estimation resolves their labels with the annotator model and, once every one is resolved, makes
the true ones the reference sample (``evaluation.services.reference_sample``).

A sample still verifying can be cancelled (:func:`cancel_reference_sample`), so that a sample
whose candidates can never all be resolved does not block new draws and uploads forever.
"""

from __future__ import annotations

import logging
import secrets
from typing import TYPE_CHECKING

import numpy as np
from django.db import transaction
from django.utils import timezone

from leaderboard.jobs import enqueue_estimate
from leaderboard.models import ReferenceCandidate, ReferenceSample, Task
from leaderboard.services.reference_candidates import (
    ReferenceSampleError,
    check_reference_task,
    refuse_while_verifying,
)

from .judgments import request_verification

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)

MAX_SEED = 2**62  # seeds are 0 .. MAX_SEED - 1 (a BigIntegerField holds them)


def drawn_documents(documents: list[str], size: int, seed: int) -> list[str]:
    """The ``size`` documents a draw with ``seed`` picks from ``documents``, in drawing order."""
    ordered = sorted(set(documents))
    picks = np.random.default_rng(seed).choice(len(ordered), size=size, replace=False)
    return [ordered[int(i)] for i in picks]


def _checked(size: object, seed: object) -> tuple[int, int]:
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ReferenceSampleError(
            "size must be a whole number of documents, at least 1", code="invalid"
        )
    if seed is None:
        return size, secrets.randbelow(MAX_SEED)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < MAX_SEED:
        raise ReferenceSampleError(
            f"seed must be a whole number from 0 to {MAX_SEED - 1}", code="invalid"
        )
    return size, seed


def draw_reference_sample(
    *, task: Task, user: User | None, size: object, seed: object = None
) -> ReferenceSample:
    """Draw ``size`` of the task's candidate documents (with ``seed``, or a random one, which
    is recorded) and queue every candidate of them for verification.

    Permission (organizers of the task) is checked by the caller. Raises
    :class:`~leaderboard.services.reference_candidates.ReferenceSampleError`:
    ``sample_in_progress`` while another sample is being verified, ``no_candidates``,
    ``not_open_world``, ``invalid`` (size, seed, more documents than there are).
    """
    check_reference_task(task)
    size, seed = _checked(size, seed)
    with transaction.atomic():
        locked = Task.objects.select_for_update().get(pk=task.pk)
        refuse_while_verifying(locked)
        candidates = ReferenceCandidate.objects.filter(task=locked)
        documents = sorted(set(candidates.values_list("document", flat=True)))
        if not documents:
            raise ReferenceSampleError(
                "no candidates to draw from: upload the documents' candidate items first",
                code="no_candidates",
            )
        if size > len(documents):
            raise ReferenceSampleError(
                f"size {size:,} is more than the {len(documents):,} documents uploaded",
                code="invalid",
            )
        drawn = drawn_documents(documents, size, seed)
        ids = list(
            candidates.filter(document__in=drawn)
            .order_by("item__index")
            .values_list("item_id", flat=True)
        )
        request_verification(task=locked, item_ids=ids)
        sample = ReferenceSample.objects.create(
            task=locked,
            seed=seed,
            size=size,
            documents=drawn,
            n_documents=len(documents),
            n_candidates=len(ids),
            created_by=user,
        )
        # The estimation checks the sample's progress (some candidates may be resolved already).
        enqueue_estimate(locked.pk)
    logger.info(
        "reference sample %d of task %s drawn by %s: %d of %d documents (seed %d), %d candidates",
        sample.pk,
        task.slug,
        getattr(user, "username", user),
        size,
        len(documents),
        seed,
        len(ids),
    )
    return sample


def cancel_reference_sample(*, task: Task, by: User | None) -> ReferenceSample:
    """Cancel the task's sample that is still being verified, so that a new one can be drawn.

    The reference sample (``reference_version``) is left as it was. The sample's verification
    requests stay in the queue: the queue has no way to withdraw a request, and answers already
    given stay judgments; nothing is deleted. Idempotent: when the task's latest sample is
    already cancelled, it is returned unchanged. Permission (organizers of the task) is checked
    by the caller. Raises :class:`~leaderboard.services.reference_candidates.ReferenceSampleError`:
    ``no_sample`` (nothing drawn yet), ``sample_complete`` (the latest sample is complete; there
    is nothing to cancel), both 409.
    """
    with transaction.atomic():
        locked = Task.objects.select_for_update().get(pk=task.pk)
        sample = (
            ReferenceSample.objects.select_for_update()
            .filter(task=locked, state=ReferenceSample.State.VERIFYING)
            .first()
        ) or ReferenceSample.objects.filter(task=locked).first()
        if sample is None:
            raise ReferenceSampleError(
                "no reference sample has been drawn: there is nothing to cancel", code="no_sample"
            )
        if sample.state == ReferenceSample.State.CANCELLED:
            return sample
        if sample.state == ReferenceSample.State.COMPLETE:
            raise ReferenceSampleError(
                f"the latest reference sample is complete (reference version "
                f"{sample.reference_version}): there is nothing to cancel; nothing was changed",
                code="sample_complete",
                sample=sample.pk,
            )
        sample.state = ReferenceSample.State.CANCELLED
        sample.cancelled_at = timezone.now()
        sample.cancelled_by = by
        sample.save(update_fields=["state", "cancelled_at", "cancelled_by"])
    logger.info(
        "reference sample %d of task %s cancelled by %s (%d of %d candidates resolved)",
        sample.pk,
        task.slug,
        getattr(by, "username", by),
        sample.n_resolved,
        sample.n_candidates,
    )
    return sample
