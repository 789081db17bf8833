"""The candidates of a reference sample built in the product: each document (group) of the task
with its candidate items, uploaded by an organizer.

The product draws a random sample of these documents and verifies every candidate of them
(``annotation.services.reference_sample``); the true ones become the reference sample
(:func:`leaderboard.services.reference.replace_reference`). An upload replaces every candidate in
one transaction, creating the items it names (with their payloads); a refused file stores
nothing, and so does an upload while a sample is being verified (its documents' candidates would
change under it).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

from django.db import transaction

from ..errors import ServiceError
from ..ingestion import parse_candidate_file
from ..models import ReferenceCandidate, ReferenceSample, Task
from .items import ensure_items, item_ids
from .runs import parse_task_file

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)


class ReferenceSampleError(ServiceError):
    """A reference sample operation the task cannot take now: ``not_open_world`` (a closed-pool
    task has no reference sample), ``sample_in_progress`` (a drawn sample is still being
    verified), both 409; ``no_candidates`` (nothing to draw from, 409); ``no_sample`` (nothing
    drawn to cancel, 409); ``sample_complete`` (a complete sample cannot be cancelled, 409);
    ``invalid`` (a bad size or seed, 400)."""

    code = "sample_in_progress"
    http_status = 409
    statuses = {"invalid": 400}


@dataclass(frozen=True)
class CandidatesLoaded:
    candidates: int
    documents: int


def check_reference_task(task: Task) -> None:
    """Refuse a closed-pool task: only open-world tasks have a reference sample."""
    if task.kind == Task.Kind.CLOSED_POOL:
        raise ReferenceSampleError(
            "a closed-pool task has no reference sample (recall is over its pool)",
            code="not_open_world",
        )


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


def upload_candidates(
    *, task: Task, user: User | str, upload: IO[bytes], file_name: str = ""
) -> CandidatesLoaded:
    """Replace the task's reference candidates with the file's (``key<TAB>document``, or JSON
    Lines with ``key``, ``document`` and an optional ``payload``).

    Permission (organizers of the task) is checked by the caller; ``user`` is for the log.
    Raises :class:`~leaderboard.services.runs.SubmissionError` (``rejected`` with problems by
    line, ``too_large``) or :class:`ReferenceSampleError`.
    """
    check_reference_task(task)
    refuse_while_verifying(task)
    parsed = parse_task_file(task, upload, file_name, parse_candidate_file)

    with transaction.atomic():
        locked = Task.objects.select_for_update().get(pk=task.pk)
        refuse_while_verifying(locked)  # again, with the task locked: a draw may have won
        indices = ensure_items(
            task=locked, keys=parsed.keys, payloads=parsed.payloads, fill_payloads=True
        )
        ids = item_ids(task=locked, indices=indices)
        ReferenceCandidate.objects.filter(task=locked).delete()
        ReferenceCandidate.objects.bulk_create(
            [
                ReferenceCandidate(task=locked, item_id=item_id, document=document)
                for item_id, document in zip(ids, parsed.groups, strict=True)
            ],
            batch_size=2000,
        )
    task.n_items = locked.n_items
    loaded = CandidatesLoaded(candidates=len(parsed), documents=len(set(parsed.groups)))
    logger.info(
        "reference candidates of task %s replaced by %s: %d candidates in %d documents",
        task.slug,
        getattr(user, "username", user),
        loaded.candidates,
        loaded.documents,
    )
    return loaded
