"""A closed pool's items, uploaded once by an organizer; runs are accepted only after it
(``leaderboard.services.runs.check_open`` refuses them before, with the task row locked as here,
so a run and the pool never cross).

The pool file lists every item key (one per line, or JSON Lines ``{"key", "payload"?}``); an
optional second file (JSON Lines ``{"key", "payload"}``) gives the payloads annotators see. Both
go through the upload parser (line-numbered problems, gzip, size limits); a payload for a key
that is not in the pool is refused with its line. Items get indices ``0 .. n - 1`` in file order:
a closed-pool run's scores are stored in that order (``leaderboard.kinds.closed_pool``).

The items are stored in short transactions (:func:`.items.ensure_items_in_batches`), so that other
writers on SQLite wait about a second at most while a five-million-key pool loads (issue 29).
Meanwhile ``Task.pool_loading`` is set and the items are not the pool (``Task.has_pool``): runs
are refused, and the last transaction clears it once every key is stored. A load that stops
half-way leaves the flag set: the same file sent again goes on from the items stored (they are
its first keys, in order); another file first deletes them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

from django.db import transaction

from site_platform.errors import ServiceError

from ..ingestion import ParsedPool, Problem, parse_pool_file
from ..ingestion.fields import _shown
from ..kinds import kind_for
from ..models import Item, Run, Task
from ..selectors import NOT_COUNTED, all_item_indices
from .items import ensure_items_in_batches
from .runs import SubmissionError, parse_task_file

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)


class PoolError(ServiceError):
    """A pool upload the task cannot take now: ``not_closed_pool`` (an open task) or
    ``pool_exists`` (the pool was uploaded, or a run still counts: one received before runs
    were refused without a pool; rejected and failed runs never block it) or
    ``pool_upload_waiting`` (another pool upload waits to be loaded); all 409."""

    code = "pool_exists"
    http_status = 409


def _parse(task: Task, upload: IO[bytes], file_name: str) -> ParsedPool:
    return parse_task_file(task, upload, file_name, parse_pool_file)


def _check_can_take(task: Task) -> None:
    kind = kind_for(task)
    if not kind.has_pool:
        raise PoolError(
            f"task {task.slug!r} is {kind.called}: only a closed-pool task has a pool",
            code="not_closed_pool",
        )
    if task.has_pool:
        raise PoolError(
            f"task {task.slug!r} already has its pool ({task.n_items:,} items): a pool is "
            "uploaded once, and its runs are scored on it"
        )
    blocking = list(Run.objects.filter(task=task).exclude(state__in=NOT_COUNTED).order_by("pk")[:4])
    if blocking:
        named = ", ".join(f"run {run.pk} ({run.state})" for run in blocking[:3])
        raise PoolError(
            f"task {task.slug!r} has runs received before its pool that are not settled yet "
            f"({named}{', ...' if len(blocking) > 3 else ''}): each is rejected once validated, "
            "as there is no pool to score it on; upload the pool again after that"
        )


def _payloads(pool: ParsedPool, payloads: ParsedPool | None) -> dict[str, object]:
    """The pool file's payloads, overridden by the payloads file's; refuse foreign keys."""
    found = dict(pool.payloads)
    if payloads is None:
        return found
    keys = set(pool.keys)
    # An accepted file has one record per line up to its trailing blank lines.
    problems = [
        Problem(line, f"key {_shown(key, 60)} is not in the pool")
        for line, key in enumerate(payloads.keys, start=1)
        if key not in keys
    ]
    if problems:
        raise SubmissionError(
            f"rejected: {len(problems):,} payload keys are not in the pool (first: {problems[0]})",
            code="rejected",
            problems=problems[:50],
            total=len(problems),
        )
    found.update(payloads.payloads)
    return found


@dataclass(frozen=True)
class PoolContent:
    """A pool file read (with its payloads file): the keys in file order and their payloads."""

    keys: list[str]
    payloads: dict[str, object]


def read_pool(
    *,
    task: Task,
    upload: IO[bytes],
    file_name: str = "",
    payloads: IO[bytes] | None = None,
    payloads_name: str = "",
) -> PoolContent:
    """Parse a pool file (and its payloads file); raises
    :class:`~leaderboard.services.runs.SubmissionError` for a file with problems."""
    pool = _parse(task, upload, file_name)
    extra = _parse(task, payloads, payloads_name) if payloads is not None else None
    return PoolContent(keys=pool.keys, payloads=_payloads(pool, extra))


def stage_pool(*, task: Task, content: PoolContent) -> None:
    """Store the items of a read pool file in short transactions, with ``task.pool_loading``
    set (outside any transaction: each batch commits); :func:`finish_pool` makes them the pool.
    Raises :class:`PoolError` if the task cannot take the pool now."""
    _claim(task, content.keys)
    ensure_items_in_batches(task=task, keys=content.keys, payloads=content.payloads)


def _claim(task: Task, keys: list[str]) -> None:
    """Set ``pool_loading`` (the task row locked, :class:`PoolError` checked again); delete the
    items a half-stored upload of another file left (they are not its first keys in order)."""
    seen = Task.objects.values_list("n_items", flat=True).get(pk=task.pk)
    # Read outside the transaction (short reads): a retry of the same file goes on from them.
    left = all_item_indices(task=task) if seen else {}
    same_file = len(left) <= len(keys) and all(keys[i] == key for key, i in left.items())
    with transaction.atomic():
        locked = Task.objects.select_for_update().get(pk=task.pk)
        _check_can_take(locked)
        if locked.n_items != seen:
            raise PoolError(
                f"another upload of task {task.slug!r}'s pool is being stored: wait until it is "
                "loaded or rejected, then upload the pool again if it is still needed"
            )
        if seen and not same_file:
            logger.info("task %s: %d items of an unfinished pool deleted", task.slug, seen)
            Item.objects.filter(task_id=task.pk).delete()
            locked.n_items = 0
        locked.pool_loading = True
        locked.save(update_fields=["n_items", "pool_loading"])
    task.n_items, task.pool_loading = locked.n_items, True


def finish_pool(*, task: Task, content: PoolContent, user: User | str) -> int:
    """Make the items :func:`stage_pool` stored ``task``'s pool (one short transaction, the
    task row locked); return how many. Raises :class:`PoolError` if they are not exactly the
    file's keys (another upload stored items meanwhile) or the pool is there already."""
    with transaction.atomic():
        locked = Task.objects.select_for_update().get(pk=task.pk)
        _check_can_take(locked)
        if not locked.pool_loading or locked.n_items != len(content.keys):
            raise PoolError(
                f"task {task.slug!r} holds {locked.n_items:,} items where this pool has "
                f"{len(content.keys):,}: another upload stored items at the same time; upload "
                "the pool again (the items stored are not taken as the pool)"
            )
        locked.pool_loading = False
        locked.save(update_fields=["pool_loading"])
    task.n_items, task.pool_loading = locked.n_items, False
    logger.info(
        "pool of task %s uploaded by %s: %d items, %d with payloads",
        task.slug,
        getattr(user, "username", user),
        len(content.keys),
        len(content.payloads),
    )
    return len(content.keys)


def store_pool(*, task: Task, content: PoolContent, user: User | str) -> int:
    """Create ``task``'s pool items from a read pool file (:func:`stage_pool`, then
    :func:`finish_pool`); return how many."""
    stage_pool(task=task, content=content)
    return finish_pool(task=task, content=content, user=user)


def check_pool_upload(task: Task) -> None:
    """Refuse a pool upload the task cannot take now (before it is received)."""
    _check_can_take(task)


def upload_pool(
    *,
    task: Task,
    user: User | str,
    upload: IO[bytes],
    file_name: str = "",
    payloads: IO[bytes] | None = None,
    payloads_name: str = "",
) -> int:
    """Create ``task``'s pool items from ``upload`` (and payloads) here and now (the command
    line, tests; web requests go through :mod:`.organizer_uploads`); return how many.

    Permission (organizers of the task) is checked by the caller; ``user`` (or a name) is for the
    log. A file's name (``.gz`` or not) is its ``name`` attribute unless given. Raises
    :class:`PoolError` if the task is an open-world one, has its pool, or has runs that still
    count, and :class:`~leaderboard.services.runs.SubmissionError` (``rejected``,
    ``too_large``) for a file with problems; nothing is stored then.
    """
    _check_can_take(task)
    content = read_pool(
        task=task,
        upload=upload,
        file_name=file_name,
        payloads=payloads,
        payloads_name=payloads_name,
    )
    return store_pool(task=task, content=content, user=user)
