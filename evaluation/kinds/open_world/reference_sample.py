"""The progress and completion of a reference sample built in the product, checked by every
estimation of its task (each resolved request asks for one, debounced).

The candidates of every draw of the sample's sampling frame (the complete ones and the one being
verified) are one domain, labelled by the annotator model the estimation fitted
(:func:`evaluation.core.candidates.candidate_labels`): a candidate is resolved once its label is
settled at the task's confidence. A doubtful one whose judgments asked are all in gets one more
judgment, from an annotator who has not judged it (:func:`annotation.services.ask_again`, as the
planner's looks, skipping any answered since the judgment set the decision read), up to
``MAX_JUDGMENTS_PER_ITEM``; one that can get no further judgment is *stuck*, listed by key on the
sample, and the sample cannot complete until its label is exact (a gold answer), an annotator
joins or answers again, its organizers settle the draw, or the draw is cancelled. The most
judgments count the task's annotators who are not paused, not only those who have answered: a
look must not wait for nobody, but neither may the sample stall because one annotator answered
everything first.

When every candidate of the draw is resolved, the reference sample becomes the true candidates of
every complete draw of the frame (this draw's added to those already in it; a draw that replaces
the sample, its own) with their documents as groups, through the reference service's one write
path (one ``reference_version`` bump, a new estimation if the task has runs), and the sample is
complete with the size of the version it wrote, in one transaction with the engine lease checked.
Labels of earlier draws are not decided again.

An organizer may ask to settle a draw whose every candidate in doubt is stuck
(``annotation.services.settle_reference_sample`` records the request): the first check that
finds every candidate of the draw resolved or stuck completes it with the stuck ones labelled as
their answers stand (true when the posterior is above one half, as a resolved label is, unless
that overrules every answer: the model may overrule answers only where they disagree), recorded
on the draw with their posteriors and flagged on the reference items they add (decided below the
task's confidence). Until then (an annotator who joined gives looks first) the request stands.

The check locks the sample's row and does nothing to a sample no longer verifying: safe to run
again, or twice at once.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from django.db import transaction
from django.utils import timezone

from annotation.models import VerificationRequest
from annotation.selectors import annotators_left
from annotation.services import ask_again
from evaluation.core.candidates import CandidateLabels, candidate_labels
from evaluation.core.task_design import MAX_JUDGMENTS_PER_ITEM
from leaderboard.models import ReferenceCandidate, ReferenceItem, ReferenceSample, Task
from leaderboard.selectors import reference_size, sample_is_drawn
from leaderboard.services.reference import replace_reference

from ...locks import assert_lock_held
from .state import LoadedTask

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Candidate:
    item: int  # Item pk
    index: int  # engine index
    key: str
    document: str
    in_draw: bool  # of the draw being verified (else of an earlier draw of its frame)


def update_reference_sample(loaded: LoadedTask, token: str) -> ReferenceSample | None:
    """Record the progress of the task's sample being verified, ask looks at its doubtful
    candidates, and complete it once every candidate is resolved; return the sample (``None``
    if none is being verified). ``token``: the engine lease the caller holds."""
    task = loaded.task
    sample = ReferenceSample.objects.filter(
        task=task, state=ReferenceSample.State.VERIFYING
    ).first()
    if sample is None:
        return None
    candidates = _frame_candidates(sample)
    held = [c for c in candidates if c.index < loaded.state.n_items]
    # A candidate the state does not hold yet (its item came after the load read the count).
    missing = len(held) < len(candidates)
    requests = _requests(loaded.task, held)
    decided = candidate_labels(
        loaded.design.labels(loaded.state),
        np.array([c.index for c in held], dtype=np.int64),
        asked=np.array([requests[c.item].asked for c in held], dtype=np.int64),
        can_look=np.array([requests[c.item].can_look for c in held], dtype=bool),
        confidence=float(task.confidence),
    )
    draw = np.array([c.in_draw for c in held], dtype=bool)
    # Stuck: doubtful with every judgment it can get, or answered by some and waiting for
    # another annotator who can never be given it.
    waiting = np.array([requests[c.item].waits_for_nobody for c in held], dtype=bool)
    stuck = draw & (decided.exhausted | waiting)
    looks = [
        c.item
        for c, look in zip(held, draw & decided.look, strict=True)
        if look and requests[c.item].state == VerificationRequest.State.RESOLVED
    ]
    complete = not missing and bool(decided.resolved[draw].all())
    # An organizer's settling applies once every candidate of the draw still in doubt is stuck.
    settleable = not missing and bool(stuck.any()) and not (draw & ~decided.resolved & ~stuck).any()
    with transaction.atomic():
        locked = assert_lock_held(task.pk, token)
        current = ReferenceSample.objects.select_for_update().filter(pk=sample.pk).first()
        if current is None or current.state != ReferenceSample.State.VERIFYING:
            return current
        current.n_resolved = int(decided.resolved[draw].sum())
        current.n_true = int(decided.true[draw].sum())
        current.stuck = sorted(c.key for c, s in zip(held, stuck, strict=True) if s)
        fields = ["n_resolved", "n_true", "stuck"]
        settle = settleable and current.settle_requested_at is not None
        done = complete or settle
        if done:
            settled = _settled(held, decided, stuck if settle else np.zeros_like(stuck))
            true = draw & (decided.true | settled.true)
            chosen = [(c.item, c.document) for c, t in zip(held, true, strict=True) if t]
            current.n_true = int(true.sum())
            current.settled, current.stuck = settled.record, []
            fields += ["settled"]
            fields += complete_draw(
                task=locked,
                sample=current,
                true_items=chosen,
                settled_items=[c.item for c, t in zip(held, settled.true, strict=True) if t],
            )
        elif looks:
            asked = ask_again(task=locked, item_ids=looks, seen_version=loaded.labels_version)
            current.n_looks += len(asked)
            fields.append("n_looks")
        current.save(update_fields=fields)
    if done:
        logger.info(
            "reference sample %d of task %s complete: %d true of %d candidates; reference "
            "version %d holds %d items in %d documents",
            current.pk,
            task.slug,
            current.n_true,
            current.n_candidates,
            current.reference_version,
            current.reference_items,
            current.reference_documents,
        )
        if current.settled:
            logger.info(
                "reference sample %d of task %s: %d stuck candidates settled as requested by its "
                "organizers, %d of them true",
                current.pk,
                task.slug,
                len(current.settled),
                sum(1 for entry in current.settled if entry["true"]),
            )
    return current


@dataclass(frozen=True)
class _Settled:
    true: np.ndarray  # per candidate: settled, and true as its answers stand
    # The draw's ``settled``: the key, posterior and label of each, by key.
    record: list[dict[str, object]]


def _settled(held: list[_Candidate], decided: CandidateLabels, chosen: np.ndarray) -> _Settled:
    """The ``chosen`` (stuck) candidates decided as their answers stand
    (:attr:`~evaluation.core.candidates.CandidateLabels.leaning`: true when the posterior is
    above one half, unless that overrules every answer)."""
    true = chosen & decided.leaning
    entries = sorted(
        (c.key, round(float(p), 4), bool(t))
        for c, p, s, t in zip(held, decided.posterior, chosen, true, strict=True)
        if s
    )
    record: list[dict[str, object]] = [
        {"key": key, "posterior": posterior, "true": label} for key, posterior, label in entries
    ]
    return _Settled(true=true, record=record)


def _frame_candidates(sample: ReferenceSample) -> list[_Candidate]:
    """The candidates of every complete draw of the sample's frame and of the sample itself."""
    drawn = set(sample.documents)
    earlier = set()
    if not sample.replace:
        for documents in ReferenceSample.objects.filter(
            task_id=sample.task_id, frame=sample.frame, state=ReferenceSample.State.COMPLETE
        ).values_list("documents", flat=True):
            earlier.update(documents)
    rows = (
        ReferenceCandidate.objects.filter(task_id=sample.task_id, document__in=drawn | earlier)
        .order_by("item__index")
        .values_list("item_id", "item__index", "item__key", "document")
    )
    return [_Candidate(item, index, key, doc, doc in drawn) for item, index, key, doc in rows]


@dataclass(frozen=True)
class _Request:
    asked: int  # judgments asked (0: no request)
    counted: int
    state: str
    left: int  # annotators who could still be given it

    @property
    def can_look(self) -> bool:
        return self.counted < MAX_JUDGMENTS_PER_ITEM and self.left > 0

    @property
    def waits_for_nobody(self) -> bool:
        return (
            self.state == VerificationRequest.State.PENDING and self.counted > 0 and self.left == 0
        )


def _requests(task: Task, candidates: list[_Candidate]) -> dict[int, _Request]:
    """Per candidate (``Item`` pk): its request, and how many annotators could still judge it."""
    ids = [c.item for c in candidates]
    left = annotators_left(task=task, item_ids=ids)
    found = {
        item: _Request(asked, counted, state, left.get(item, 0))
        for item, asked, counted, state in VerificationRequest.objects.filter(
            item_id__in=ids
        ).values_list("item_id", "judgments_required", "judgments_counted", "state")
    }
    return {item: found.get(item, _Request(0, 0, "", 0)) for item in ids}


def complete_draw(
    *,
    task: Task,
    sample: ReferenceSample,
    true_items: Sequence[tuple[int, str]],
    settled_items: Sequence[int] = (),
) -> list[str]:
    """Complete ``sample`` (its row and ``task``'s locked by the caller): the reference sample
    becomes its ``true_items`` (``Item`` pk, document; those in ``settled_items`` decided below
    the task's confidence) added to the frame's sample, or alone when it replaces it; returns the
    fields of ``sample`` set, for the caller to save."""
    kept: list[tuple[int, str, bool]] = []
    if not sample.replace and sample_is_drawn(task):
        kept = list(
            ReferenceItem.objects.filter(task=task).values_list("item_id", "group", "settled")
        )
    below = set(settled_items)
    rows = kept + [(item, document, item in below) for item, document in true_items]
    sample.reference_version = replace_reference(
        task=task,
        item_ids=[r[0] for r in rows],
        groups=[r[1] for r in rows],
        settled=[r[2] for r in rows],
    )
    if sample.replace:
        task.reference_frame = sample.frame
        task.save(update_fields=["reference_frame"])
    size = reference_size(task)
    sample.reference_items, sample.reference_documents = size.items, size.documents
    sample.state = ReferenceSample.State.COMPLETE
    sample.completed_at = timezone.now()
    return ["reference_version", "reference_items", "reference_documents", "state", "completed_at"]
