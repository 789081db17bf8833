"""The reference sample of a task (true items, with their group), uploaded by an organizer or
built in the product from a sample of documents (:func:`replace_reference`, the one write path).

An upload first stores the items it names that are new in short transactions
(:func:`.items.ensure_items_in_batches`: they are items no run predicts yet, as a run's are while it
is validated), then replaces the whole sample in one transaction and bumps
``Task.reference_version``; recall estimates depend on it, so the task is re-estimated if it has
runs. A refused file stores nothing the product reads as its sample.
An uploaded sample was not drawn from the task's candidates: it starts a new sampling frame (a
draw can replace it, not add to it), and it is refused while a draw is being verified (the draw
would write over it).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING

import numpy as np
from django.db import transaction

from .. import jobs
from ..ingestion import ParsedReference, parse_reference_file
from ..models import ReferenceItem, Run, Task
from .items import fill_missing_payloads, item_ids
from .reference_candidates import refuse_while_verifying, stage_items
from .runs import parse_task_file

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)


def read_reference(*, task: Task, upload: IO[bytes], file_name: str = "") -> ParsedReference:
    """Parse a reference sample file; raises
    :class:`~leaderboard.services.runs.SubmissionError` for a file with problems."""
    return parse_task_file(task, upload, file_name, parse_reference_file)


def store_reference(
    *, task: Task, parsed: ParsedReference, user: User | str, indices: np.ndarray | None = None
) -> int:
    """Replace the task's reference sample with a read file's items (one transaction, the task
    row locked, refused again while a draw is verified); return how many there are. ``indices``:
    what :func:`.reference_candidates.stage_items` returned (staged here, in short transactions,
    if not given)."""
    if indices is None:
        indices = stage_items(task=task, parsed=parsed)
    with transaction.atomic():
        locked = Task.objects.select_for_update().get(pk=task.pk)
        refuse_while_verifying(locked)
        fill_missing_payloads(task=locked, payloads=parsed.payloads)
        replace_reference(
            task=locked, item_ids=item_ids(task=locked, indices=indices), groups=parsed.groups
        )
        locked.reference_frame += 1
        locked.save(update_fields=["reference_frame"])
    task.n_items = locked.n_items
    task.reference_version, task.reference_frame = locked.reference_version, locked.reference_frame
    logger.info(
        "reference sample of task %s replaced by %s: %d items (version %d)",
        task.slug,
        getattr(user, "username", user),
        len(parsed),
        task.reference_version,
    )
    return len(parsed)


def upload_reference(
    *, task: Task, user: User | str, upload: IO[bytes], file_name: str = ""
) -> int:
    """Replace the task's reference sample with the file's items here and now (the command
    line, tests; web requests go through :mod:`.organizer_uploads`); return how many there are.

    Permission (organizers of the task) is checked by the caller; ``user`` (or a name, such as
    ``"manage.py"``) is for the log.
    Raises :class:`~leaderboard.services.runs.SubmissionError` (``rejected``, ``too_large``) or
    :class:`~leaderboard.services.reference_candidates.ReferenceSampleError`
    (``sample_in_progress``).
    """
    refuse_while_verifying(task)
    parsed = read_reference(task=task, upload=upload, file_name=file_name)
    return store_reference(task=task, parsed=parsed, user=user)


def replace_reference(
    *,
    task: Task,
    item_ids: Sequence[int],
    groups: Sequence[str],
    settled: Sequence[bool] | None = None,
) -> int:
    """Make ``item_ids`` (with their ``groups``, and whether each was ``settled`` below the
    task's confidence: none by default) the reference sample of ``task``, bump its
    ``reference_version`` once and ask for a re-estimation if it has runs: the one write path
    of an upload and of a sample built in the product. ``task`` must be locked
    (``select_for_update``) in the caller's transaction; returns the new version."""
    flags = [False] * len(item_ids) if settled is None else settled
    ReferenceItem.objects.filter(task=task).delete()
    ReferenceItem.objects.bulk_create(
        [
            ReferenceItem(task=task, item_id=item_id, group=group, settled=flag)
            for item_id, group, flag in zip(item_ids, groups, flags, strict=True)
        ],
        batch_size=2000,
    )
    task.reference_version += 1
    task.save(update_fields=["reference_version"])
    if Run.objects.filter(task=task).exclude(state=Run.State.REJECTED).exists():
        jobs.enqueue_estimate(task.pk)
    return task.reference_version
