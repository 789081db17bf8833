"""Draw the documents of a reference sample built in the product and queue their candidates.

The organizer uploaded each document's candidate items
(:mod:`leaderboard.services.reference_candidates`); a draw picks ``size`` documents uniformly
at random without replacement (NumPy's ``default_rng(seed)`` over the documents it may take in
sorted order, so the seed and the candidates say exactly which documents a draw picks: recorded
on the :class:`~leaderboard.models.ReferenceSample` with the documents drawn), and asks for every
candidate of them through the verification queue
(:func:`~annotation.services.judgments.request_verification`, like any planned item). The
estimation resolves their labels with the annotator model, asks further looks at doubtful ones
and, once every one is resolved, writes the reference sample
(``evaluation.kinds.open_world.reference_sample``).

Draws add up. A draw takes its documents from those no complete draw of the task's sampling
frame took, and its true candidates are added to the sample: successive simple random samples
without replacement are one (docs/STATISTICS.md). A draw with ``replace`` takes them from every
document and, once complete, is the sample on its own (a new frame); while a sample
exists it needs ``confirm``. A draw cannot add to a sample that was not drawn from the current
candidates (an uploaded file, or candidates uploaded since): it must replace it.

A sample still verifying can be cancelled (:func:`cancel_reference_sample`), so that a sample
whose candidates can never all be resolved does not block new draws and uploads forever; its
documents may be drawn again. Or, once every candidate in doubt is stuck, its organizers may
settle it (:func:`settle_reference_sample`): the estimation then completes it with the stuck
candidates decided by their answers as they stand, below the task's confidence.
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
from leaderboard.selectors import frame_draws, reference_size, sample_is_drawn
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
    *,
    task: Task,
    user: User | None,
    size: object,
    seed: object = None,
    replace: bool = False,
    confirm: bool = False,
) -> ReferenceSample:
    """Draw ``size`` of the task's candidate documents (with ``seed``, or a random one, which
    is recorded) and queue every candidate of them for verification.

    Without ``replace`` the documents come from those the frame's complete draws did not take,
    and the draw adds to the sample; with it, from all of them, and the draw replaces the sample
    once complete (``confirm`` required while the sample has items). Permission (organizers of
    the task) is checked by the caller. Raises
    :class:`~leaderboard.services.reference_candidates.ReferenceSampleError`:
    ``sample_in_progress`` while another sample is being verified, ``no_candidates``,
    ``not_open_world``, ``confirmation_needed``, ``cannot_extend``, ``all_drawn``, ``invalid``
    (size, seed, more documents than there are to draw).
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
        frame, open_documents = _frame_of_draw(locked, documents, replace=replace, confirm=confirm)
        if size > len(open_documents):
            where = (
                "documents uploaded"
                if len(open_documents) == len(documents)
                else "documents not drawn yet"
            )
            raise ReferenceSampleError(
                f"size {size:,} is more than the {len(open_documents):,} {where}",
                code="invalid",
            )
        drawn = drawn_documents(open_documents, size, seed)
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
            n_documents=len(open_documents),
            n_candidates=len(ids),
            frame=frame,
            replace=replace,
            created_by=user,
        )
        # The estimation checks the sample's progress (some candidates may be resolved already).
        enqueue_estimate(locked.pk)
    logger.info(
        "reference sample %d of task %s drawn by %s: %d of %d documents (seed %d, %s), "
        "%d candidates",
        sample.pk,
        task.slug,
        getattr(user, "username", user),
        size,
        len(open_documents),
        seed,
        "replacing the sample" if replace else "adding to the sample",
        len(ids),
    )
    return sample


def _frame_of_draw(
    task: Task, documents: list[str], *, replace: bool, confirm: bool
) -> tuple[int, list[str]]:
    """The frame a draw belongs to and the documents it may take (``task`` locked); refuses a
    replacement not confirmed and an addition to a sample not drawn from these candidates."""
    current = reference_size(task)
    if replace:
        if not current.empty and not confirm:
            raise ReferenceSampleError(
                f"this draw replaces the reference sample ({current.summary}, version "
                f"{current.version}) once it is complete: confirm it (confirm=true) to go on; "
                "nothing was changed",
                code="confirmation_needed",
            )
        return task.reference_frame + 1, documents
    if not current.empty and not sample_is_drawn(task):
        drawn_before = ReferenceSample.objects.filter(
            task=task, reference_version=task.reference_version
        ).exists()
        origin = (
            "was drawn from candidates that have been replaced since"
            if drawn_before
            else "was uploaded as a file"
        )
        raise ReferenceSampleError(
            f"the reference sample ({current.summary}) {origin}: a draw from the current "
            "candidates cannot add to it. Draw to replace it (replace=true, confirm=true): it "
            "stays in use until the new draw is complete; nothing was changed",
            code="cannot_extend",
        )
    taken = {d for sample in frame_draws(task) for d in sample.documents}
    open_documents = [d for d in documents if d not in taken]
    if not open_documents:
        raise ReferenceSampleError(
            f"every one of the {len(documents):,} documents is in the reference sample's draws: "
            "none is left to add. Upload more documents' candidates (a new frame) or draw to "
            "replace the sample; nothing was changed",
            code="all_drawn",
        )
    return task.reference_frame, open_documents


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
        locked, verifying = _locked_verifying(task)
        sample = verifying or ReferenceSample.objects.filter(task=locked).first()
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


def settle_reference_sample(*, task: Task, by: User | None) -> ReferenceSample:
    """Ask that the draw being verified be completed with its stuck candidates decided by their
    answers as they stand (true when the posterior is above one half, unless that overrules every
    answer), below the task's confidence.

    Taken only while every candidate of the draw still in doubt is stuck, as the latest
    estimation recorded it (no first judgment or further look is awaited). The request is
    recorded on the draw and an estimation asked for: it completes the draw
    (``evaluation.kinds.open_world.reference_sample``), or, should a look have become possible since
    (an annotator joined), asks it first and completes the draw once the candidates still in
    doubt are stuck again. Idempotent: a draw already asked to settle is returned unchanged.
    Permission (organizers of the task) is checked by the caller. Raises
    :class:`~leaderboard.services.reference_candidates.ReferenceSampleError`, all 409:
    ``no_draw_verifying`` (nothing drawn, or the latest draw complete or cancelled),
    ``nothing_stuck``, ``answers_pending`` (candidates not resolved still await a judgment);
    ``not_open_world``.
    """
    check_reference_task(task)
    with transaction.atomic():
        locked, sample = _locked_verifying(task)
        if sample is None:
            raise ReferenceSampleError(
                _nothing_to_settle(ReferenceSample.objects.filter(task=locked).first()),
                code="no_draw_verifying",
            )
        if sample.settle_requested_at is not None:
            return sample
        if not sample.stuck:
            raise ReferenceSampleError(
                "no candidate of the draw is stuck: every candidate still in doubt can get a "
                "further judgment from the task's annotators, so wait for their answers; "
                "nothing was changed",
                code="nothing_stuck",
                sample=sample.pk,
            )
        waiting = sample.n_awaiting
        if waiting > 0:
            raise ReferenceSampleError(
                f"{waiting:,} candidate{'' if waiting == 1 else 's'} of the draw "
                f"{'is' if waiting == 1 else 'are'} not resolved yet and still await"
                f"{'s' if waiting == 1 else ''} a judgment (a first answer or a further look): "
                "the stuck ones can be decided by their answers once every candidate still in "
                "doubt is stuck; nothing was changed",
                code="answers_pending",
                sample=sample.pk,
            )
        sample.settle_requested_at = timezone.now()
        sample.settle_requested_by = by
        sample.save(update_fields=["settle_requested_at", "settle_requested_by"])
        enqueue_estimate(locked.pk, force=True)
    logger.info(
        "reference sample %d of task %s: settling its %d stuck candidates asked by %s",
        sample.pk,
        task.slug,
        len(sample.stuck),
        getattr(by, "username", by),
    )
    return sample


def _locked_verifying(task: Task) -> tuple[Task, ReferenceSample | None]:
    """``task``'s row and its draw being verified (if any), locked in the caller's
    transaction."""
    locked = Task.objects.select_for_update().get(pk=task.pk)
    sample = (
        ReferenceSample.objects.select_for_update()
        .filter(task=locked, state=ReferenceSample.State.VERIFYING)
        .first()
    )
    return locked, sample


def _nothing_to_settle(latest: ReferenceSample | None) -> str:
    if latest is None:
        return "no reference sample has been drawn: there is nothing to settle"
    if latest.state == ReferenceSample.State.COMPLETE:
        return (
            f"the latest draw is complete (reference version {latest.reference_version}): "
            "there is nothing to settle; nothing was changed"
        )
    return "the latest draw was cancelled: there is nothing to settle; nothing was changed"
