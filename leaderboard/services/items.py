"""A task's items: dense indices ``0 .. n_items - 1`` allocated in arrival order.

Allocation happens with the task row locked (``select_for_update``), in the caller's transaction,
so two uploads can never hand out the same index. New items are inserted in bulk with plain SQL
(``executemany`` on SQLite, ``COPY`` on PostgreSQL): a million new keys take a few seconds, where
model instances and ``bulk_create`` would take several times as long (see bench/ingest_run.py).
A run's items, and those of an organizer's pool, reference sample and candidates files, are
inserted in short transactions (:func:`ensure_items_in_batches`): on SQLite a transaction holds
the whole database's write lock, and five million keys in one held every other writer for ~40 s
(issue 29, N9).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from itertools import islice, repeat
from typing import TypeVar

import numpy as np
from django.db import connection, transaction
from django.db.models import Field

from ..models import Item, Task
from ..selectors import item_indices_below, item_indices_between

INSERT_BATCH = 50_000
LOOKUP_CHUNK = 500  # keys per ``key IN (...)`` query (well under every backend's limit)
# Look keys up one chunk at a time when the task has this many times more items than the upload.
LOOKUP_RATIO = 8
# A run's new items go in transactions of at most BATCH_ITEMS keys and BATCH_SECONDS (then the
# one step under way ends it), INSERT_STEP keys per statement: SQLite's write lock, which every
# other writer waits for, is held ~0.25 s at a time whatever the machine's load or the index size.
BATCH_ITEMS = 50_000
BATCH_SECONDS = 0.25
INSERT_STEP = 2_000
# On SQLite, the pause between two batches: a writer waiting for the lock polls at most every
# 100 ms (SQLite's busy handler), so without a pause the next batch always took the lock first
# and other writers waited out their 20 s timeout (bench/ingest_writer_wait.py).
SQLITE_TURN_SECONDS = 0.1

_T = TypeVar("_T")


def ensure_items(
    *,
    task: Task,
    keys: Sequence[str],
    payloads: Mapping[str, object] | None = None,
    fill_payloads: bool = False,
) -> np.ndarray:
    """The dense index of every key of ``keys``, in order, creating the items not seen before.

    New items get consecutive indices from ``task.n_items`` in order of first appearance (and
    their payload from ``payloads``). An existing item's payload is what annotators see: a run
    upload never changes it (its payload was set by the first upload that brought the item, or
    it has none); only the organizer's reference sample (``fill_payloads``) gives one to an item
    that has none. ``task.n_items`` is bumped in the database and on ``task``.
    """
    payloads = payloads or {}
    with transaction.atomic():
        locked = Task.objects.select_for_update().only("pk", "n_items").get(pk=task.pk)
        start = locked.n_items
        known = _known_indices(task.pk, keys, start)
        unseen = [key for key in keys if key not in known] if known else keys
        new_keys = list(dict.fromkeys(unseen))
        if new_keys:
            _insert(task.pk, new_keys, start, payloads)
            Task.objects.filter(pk=task.pk).update(n_items=start + len(new_keys))
        if fill_payloads and payloads and known:
            _fill_payloads(task.pk, payloads, set(new_keys), start)
    task.n_items = start + len(new_keys)
    if len(new_keys) == len(keys):  # all new, each once: indices in order
        return np.arange(start, start + len(keys), dtype=np.int64)
    known.update(zip(new_keys, range(start, start + len(new_keys)), strict=True))
    return np.fromiter(map(known.__getitem__, keys), dtype=np.int64, count=len(keys))


def ensure_items_in_batches(
    *,
    task: Task,
    keys: Sequence[str],
    payloads: Mapping[str, object] | None = None,
    batch_size: int | None = None,
    on_batch: Callable[[int], bool] = lambda _n_new: True,
) -> np.ndarray | None:
    """:func:`ensure_items` (without ``fill_payloads``) in short transactions, for a run's or an
    organizer upload's keys.

    The keys that are items already are read first, outside any transaction and in short reads;
    then the new keys are inserted in batches of at most ``batch_size`` (:data:`BATCH_ITEMS`)
    keys and about :data:`BATCH_SECONDS`, each in a transaction of its own with the task row
    locked, which first takes in the items other uploads added since the last batch (two
    ingestions of one task at once never insert a key twice), inserts the rest, bumps
    ``task.n_items`` and calls ``on_batch(n_new)`` with how many it inserted: what ``on_batch``
    writes commits with the batch; if it returns false, the batch is rolled back and ``None``
    returned (the caller no longer wants the items). On SQLite the next batch waits
    :data:`SQLITE_TURN_SECONDS`. Called inside a transaction, the batches are savepoints of it
    (tests).

    A crash between batches leaves the batches committed so far: items no run predicts yet (as
    gold and reference items can be), found as known by a retry, which then gets the same
    indices. New items get consecutive indices in order of first appearance, unless another
    upload inserts items between two batches.
    """
    payloads = payloads or {}
    seen = Task.objects.values_list("n_items", flat=True).get(pk=task.pk)
    known = _known_indices(task.pk, keys, seen)
    unseen = list(dict.fromkeys(key for key in keys if key not in known))
    assigned: list[np.ndarray] = []
    done = 0
    while done < len(unseen):
        if done:
            _let_other_writers_in()
        with transaction.atomic():
            locked = Task.objects.select_for_update().only("pk", "n_items").get(pk=task.pk)
            start = locked.n_items
            if start > seen:  # another upload added items since
                known.update(item_indices_between(task.pk, seen, start))
            end = min(len(unseen), done + (batch_size or BATCH_ITEMS))
            deadline = time.monotonic() + BATCH_SECONDS
            n_new = 0
            while done < end and (n_new == 0 or time.monotonic() < deadline):
                step = unseen[done : min(end, done + INSERT_STEP)]
                fresh, indices = _split_known(step, known, start + n_new)
                if fresh:
                    _insert(task.pk, fresh, start + n_new, payloads)
                n_new += len(fresh)
                done += len(step)
                assigned.append(indices)
            if n_new:
                Task.objects.filter(pk=task.pk).update(n_items=start + n_new)
            if not on_batch(n_new):
                transaction.set_rollback(True)
                return None
        seen = start + n_new
    task.n_items = seen
    new_indices = np.concatenate(assigned) if assigned else np.empty(0, dtype=np.int64)
    if not known and len(unseen) == len(keys):  # all new, each once: indices in order
        return new_indices
    known.update(zip(unseen, new_indices.tolist(), strict=True))
    return np.fromiter(map(known.__getitem__, keys), dtype=np.int64, count=len(keys))


def fill_missing_payloads(*, task: Task, payloads: Mapping[str, object]) -> None:
    """Give the task's items that have no payload the one in ``payloads`` (the organizer's
    reference files: items a run brought have none); inside the caller's transaction."""
    if payloads:
        n_items = Task.objects.values_list("n_items", flat=True).get(pk=task.pk)
        _fill_payloads(task.pk, payloads, set(), n_items)


def _let_other_writers_in() -> None:
    if connection.vendor == "sqlite" and not connection.in_atomic_block:
        time.sleep(SQLITE_TURN_SECONDS)


def _split_known(
    batch: Sequence[str], known: Mapping[str, int], start: int
) -> tuple[list[str], np.ndarray]:
    """The keys of ``batch`` that are not in ``known``, and every key's index: ``known``'s, or
    the next from ``start`` for a fresh key."""
    fresh: list[str] = []
    indices = np.empty(len(batch), dtype=np.int64)
    for i, key in enumerate(batch):
        index = known.get(key)
        if index is None:
            index = start + len(fresh)
            fresh.append(key)
        indices[i] = index
    return fresh, indices


def known_keys(*, task: Task, keys: Sequence[str]) -> set[str]:
    """Which of ``keys`` are items of ``task`` already."""
    n_items = Task.objects.values_list("n_items", flat=True).get(pk=task.pk)
    found = _known_indices(task.pk, keys, n_items)
    return {key for key in keys if key in found}


def item_ids(*, task: Task, indices: Sequence[int] | np.ndarray) -> list[int]:
    """The primary keys of the task's items with these indices, in order."""
    wanted = [int(i) for i in indices]
    items = Item.objects.filter(task_id=task.pk)
    if len(wanted) * LOOKUP_RATIO >= task.n_items:
        found = dict(items.values_list("index", "pk"))
    else:
        found = {}
        for chunk in _chunks(sorted(set(wanted)), LOOKUP_CHUNK):
            found.update(items.filter(index__in=chunk).values_list("index", "pk"))
    return [found[i] for i in wanted]


def _chunks(values: Sequence[_T], size: int) -> Iterator[Sequence[_T]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _known_indices(task_id: int, keys: Sequence[str], n_items: int) -> dict[str, int]:
    """``key -> index`` for the keys of ``keys`` the task already has (possibly more)."""
    known: dict[str, int] = {}
    if n_items == 0:
        return known
    if len(keys) * LOOKUP_RATIO >= n_items:
        return item_indices_below(task_id, n_items)
    items = Item.objects.filter(task_id=task_id)
    for chunk in _chunks(list(dict.fromkeys(keys)), LOOKUP_CHUNK):
        known.update(items.filter(key__in=chunk).values_list("key", "index"))
    return known


def _dump(payload: object) -> str | None:
    return None if payload is None else json.dumps(payload, ensure_ascii=False)


def _column(name: str) -> str:
    """The database column of ``Item``'s concrete field ``name``."""
    field = Item._meta.get_field(name)
    assert isinstance(field, Field) and field.column  # a concrete field has a column
    return field.column


def _insert(task_id: int, keys: list[str], start: int, payloads: Mapping[str, object]) -> None:
    meta = Item._meta
    columns = [_column(name) for name in ("task", "key", "index", "payload")]
    quoted = ", ".join(connection.ops.quote_name(c) for c in columns)
    table = connection.ops.quote_name(meta.db_table)
    dumped = map(_dump, map(payloads.get, keys)) if payloads else repeat(None)
    rows = zip(repeat(task_id), keys, range(start, start + len(keys)), dumped)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.copy(f"COPY {table} ({quoted}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            return
        sql = f"INSERT INTO {table} ({quoted}) VALUES (%s, %s, %s, %s)"
        while batch := list(islice(rows, INSERT_BATCH)):
            cursor.executemany(sql, batch)


def _fill_payloads(
    task_id: int, payloads: Mapping[str, object], new: set[str], n_items: int
) -> None:
    """Give existing items without a payload the one uploaded for them."""
    wanted = [key for key in payloads if key not in new]
    if not wanted:
        return
    empty = Item.objects.filter(task_id=task_id, payload__isnull=True)
    if len(wanted) * LOOKUP_RATIO >= n_items:
        wanted_set = set(wanted)
        rows = [(pk, key) for pk, key in empty.values_list("pk", "key") if key in wanted_set]
    else:
        rows = []
        for chunk in _chunks(wanted, LOOKUP_CHUNK):
            rows.extend(empty.filter(key__in=chunk).values_list("pk", "key"))
    updates = [Item(pk=pk, payload=payloads[key]) for pk, key in rows]
    Item.objects.bulk_update(updates, ["payload"], batch_size=500)
