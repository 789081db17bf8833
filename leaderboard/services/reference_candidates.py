"""The candidates of a reference sample built in the product: each document (group) of the task
with its candidate items, uploaded by an organizer; and the task's sampling frame.

The product draws random samples of these documents and verifies every candidate of them
(``annotation.services.reference_sample``); the true ones become the reference sample
(:func:`leaderboard.services.reference.replace_reference`). Draws add up within a *sampling
frame* (``Task.reference_frame``): a further draw takes documents from those no complete draw of
the frame took, and the sample is the true candidates of every complete draw of the frame. New
candidates start a new frame (the documents drawn so far are drawn from other candidates), and so
do a reference file and a completed draw that replaces the sample.

An upload stores the items it names that are new (with their payloads) in short transactions
(:func:`.items.ensure_items_in_batches`), then replaces every candidate in one transaction; a
refused file stores nothing the product reads as candidates (only items no run predicts yet), and
so does an upload while a sample is being verified (its documents' candidates would change under
it) or, unless confirmed, one that would end a frame with complete draws (the next draw can then
only replace the sample).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

import numpy as np
from django.db import transaction
from django.template.defaultfilters import pluralize

from site_platform.errors import ServiceError

from .. import jobs
from ..ingestion import ParsedReference, parse_candidate_file
from ..kinds import kind_for
from ..models import ReferenceCandidate, ReferenceSample, Task
from ..selectors import frame_draws
from .items import ensure_items_in_batches, fill_missing_payloads, item_ids
from .runs import parse_task_file

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)


class ReferenceSampleError(ServiceError):
    """A reference sample operation the task cannot take now: ``not_open_world`` (a closed-pool
    task has no reference sample), ``sample_in_progress`` (a drawn sample is still being
    verified), both 409; ``no_candidates`` (nothing to draw from, 409); ``no_sample`` (nothing
    drawn to cancel, 409); ``sample_complete`` (a complete sample cannot be cancelled, 409);
    ``confirmation_needed`` (a draw that would replace the sample, or candidates that would end
    the frame, sent without confirming it, 409); ``cannot_extend`` (a draw that adds to a sample
    that was not drawn from these candidates, 409); ``all_drawn`` (every document of the frame is
    drawn already, 409); ``no_draw_verifying``, ``nothing_stuck``, ``answers_pending`` (a
    settling that the draw cannot take now, 409); ``invalid`` (a bad size or seed, 400)."""

    code = "sample_in_progress"
    http_status = 409
    statuses = {"invalid": 400}


@dataclass(frozen=True)
class CandidatesLoaded:
    candidates: int
    documents: int


def check_reference_task(task: Task) -> None:
    """Refuse a task whose kind has no reference sample (a closed pool: recall is over it)."""
    if not kind_for(task).has_reference_sample:
        raise ReferenceSampleError(
            "a closed-pool task has no reference sample (recall is over its pool)",
            code="not_open_world",
        )


def recheck_reference_sample(task: Task) -> None:
    """Ask for an estimation when a sample is being verified: what just changed (an annotator
    who joined or may answer again, gold answers that make labels exact) may settle its doubtful
    candidates or let them get a further look."""
    if sample_in_progress(task) is not None:
        jobs.enqueue_estimate(task.pk)


def sample_in_progress(task: Task) -> ReferenceSample | None:
    """The task's sample still being verified, if any."""
    return ReferenceSample.objects.filter(task=task, state=ReferenceSample.State.VERIFYING).first()


def refuse_while_verifying(task: Task) -> None:
    current = sample_in_progress(task)
    if current is not None:
        raise ReferenceSampleError(
            f"a reference sample of {current.size:,} documents is being verified "
            f"({current.n_resolved:,} of {current.n_candidates:,} candidates resolved): wait "
            "until it is complete; nothing was changed",
            sample=current.pk,
        )


def refuse_ending_a_frame(task: Task, *, confirm: bool) -> None:
    """Refuse new candidates that would end a frame with complete draws, unless confirmed."""
    draws = list(frame_draws(task))
    if draws and not confirm:
        documents = sum(d.size for d in draws)
        raise ReferenceSampleError(
            f"the reference sample was drawn from the current candidates ({len(draws):,} "
            f"complete draw{pluralize(len(draws))}, {documents:,} document"
            f"{pluralize(documents)}): new candidates start a new sampling frame, and the next "
            "draw can then only replace the sample, not add to it. Confirm that you want a new "
            "frame (confirm=true) to upload them; nothing was changed",
            code="confirmation_needed",
        )


def check_candidates_upload(task: Task, *, confirm: bool) -> None:
    """Refuse candidates the task cannot take now (before the file is read or received)."""
    check_reference_task(task)
    refuse_while_verifying(task)
    refuse_ending_a_frame(task, confirm=confirm)


def read_candidates(*, task: Task, upload: IO[bytes], file_name: str = "") -> ParsedReference:
    """Parse a candidates file; raises :class:`~leaderboard.services.runs.SubmissionError` for
    a file with problems."""
    return parse_task_file(task, upload, file_name, parse_candidate_file)


def stage_items(*, task: Task, parsed: ParsedReference) -> np.ndarray:
    """Store the items a read reference sample or candidates file names that are new, in short
    transactions (outside any transaction: each batch commits); their indices in file order.
    Items no run predicts yet, as a run's are while it is validated: nothing reads them as a
    sample or candidates until the file's last transaction."""
    indices = ensure_items_in_batches(task=task, keys=parsed.keys, payloads=parsed.payloads)
    assert indices is not None  # no on_batch to stop it
    return indices


def store_candidates(
    *,
    task: Task,
    parsed: ParsedReference,
    user: User | str,
    confirm: bool = False,
    indices: np.ndarray | None = None,
) -> CandidatesLoaded:
    """Replace the task's candidates with a read file's, starting a new sampling frame (one
    transaction, the task row locked, :func:`check_candidates_upload` again). ``indices``: the
    file's items, stored beforehand in short transactions (here, if not given)."""
    if indices is None:
        indices = stage_items(task=task, parsed=parsed)
    with transaction.atomic():
        locked = Task.objects.select_for_update().get(pk=task.pk)
        refuse_while_verifying(locked)  # again, with the task locked: a draw may have won
        refuse_ending_a_frame(locked, confirm=confirm)
        fill_missing_payloads(task=locked, payloads=parsed.payloads)
        ids = item_ids(task=locked, indices=indices)
        ReferenceCandidate.objects.filter(task=locked).delete()
        ReferenceCandidate.objects.bulk_create(
            [
                ReferenceCandidate(task=locked, item_id=item_id, document=document)
                for item_id, document in zip(ids, parsed.groups, strict=True)
            ],
            batch_size=2000,
        )
        locked.reference_frame += 1
        locked.save(update_fields=["reference_frame"])
    task.n_items, task.reference_frame = locked.n_items, locked.reference_frame
    loaded = CandidatesLoaded(candidates=len(parsed), documents=len(set(parsed.groups)))
    logger.info(
        "reference candidates of task %s replaced by %s: %d candidates in %d documents",
        task.slug,
        getattr(user, "username", user),
        loaded.candidates,
        loaded.documents,
    )
    return loaded


def upload_candidates(
    *,
    task: Task,
    user: User | str,
    upload: IO[bytes],
    file_name: str = "",
    confirm: bool = False,
) -> CandidatesLoaded:
    """Replace the task's reference candidates with the file's (``key<TAB>document``, or JSON
    Lines with ``key``, ``document`` and an optional ``payload``), starting a new sampling frame,
    here and now (tests; web requests go through :mod:`.organizer_uploads`).

    Permission (organizers of the task) is checked by the caller; ``user`` is for the log.
    ``confirm``: the organizer knows that complete draws of the current frame exist and that
    the next draw will replace the sample they built. Raises
    :class:`~leaderboard.services.runs.SubmissionError` (``rejected`` with problems by line,
    ``too_large``) or :class:`ReferenceSampleError`.
    """
    check_candidates_upload(task, confirm=confirm)
    parsed = read_candidates(task=task, upload=upload, file_name=file_name)
    return store_candidates(task=task, parsed=parsed, user=user, confirm=confirm)
