"""The reference sample of a task (true items, with their group), uploaded by an organizer.

An upload replaces the whole sample in one transaction and bumps ``Task.reference_version``; recall
estimates depend on it, so the task is re-estimated if it has runs. A refused file stores nothing.
"""

from __future__ import annotations

import logging
import os
from typing import IO, TYPE_CHECKING

from django.db import transaction

from .. import jobs
from ..ingestion import UploadRejected, parse_reference_file
from ..models import ReferenceItem, Run, Task
from .items import ensure_items, item_ids
from .runs import SubmissionError, check_size, upload_limit

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)


def upload_reference(
    *, task: Task, user: User | str, upload: IO[bytes], file_name: str = ""
) -> int:
    """Replace the task's reference sample with the file's items; return how many there are.

    Permission (organizers of the task) is checked by the caller; ``user`` (or a name, such as
    ``"manage.py"``) is for the log.
    Raises :class:`~leaderboard.services.runs.SubmissionError` (``rejected``, ``too_large``).
    """
    file_name = os.path.basename(file_name or getattr(upload, "name", "") or "")
    check_size(task=task, size=getattr(upload, "size", None))
    seekable = getattr(upload, "seekable", None)
    if callable(seekable) and seekable():
        upload.seek(0)
    try:
        parsed = parse_reference_file(
            upload,
            file_name=file_name,
            max_bytes=upload_limit(task),
            max_items=task.max_predictions_per_run,
        )
    except UploadRejected as exc:
        raise SubmissionError(
            exc.code, exc.summary, problems=exc.problems, total=exc.total
        ) from None

    with transaction.atomic():
        locked = Task.objects.select_for_update().get(pk=task.pk)
        indices = ensure_items(
            task=locked, keys=parsed.keys, payloads=parsed.payloads, fill_payloads=True
        )
        ids = item_ids(task=locked, indices=indices)
        ReferenceItem.objects.filter(task=locked).delete()
        ReferenceItem.objects.bulk_create(
            [
                ReferenceItem(task=locked, item_id=item_id, group=group)
                for item_id, group in zip(ids, parsed.groups, strict=True)
            ],
            batch_size=2000,
        )
        locked.reference_version += 1
        locked.save(update_fields=["reference_version"])
        if Run.objects.filter(task=locked).exclude(state=Run.State.REJECTED).exists():
            jobs.enqueue_estimate(locked.pk)
    task.n_items = locked.n_items
    task.reference_version = locked.reference_version
    logger.info(
        "reference sample of task %s replaced by %s: %d items (version %d)",
        task.slug,
        getattr(user, "username", user),
        len(parsed),
        task.reference_version,
    )
    return len(parsed)
