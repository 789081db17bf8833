"""A task's items: dense indices ``0 .. n_items - 1`` allocated in arrival order.

Allocation happens with the task row locked (``select_for_update``), in the caller's transaction,
so two uploads can never hand out the same index. New items are inserted in bulk with plain SQL
(``executemany`` on SQLite, ``COPY`` on PostgreSQL): a million new keys take a few seconds, where
model instances and ``bulk_create`` would take several times as long (see bench/ingest_run.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from itertools import islice, repeat
from typing import TypeVar

import numpy as np
from django.db import connection, transaction
from django.db.models import Field

from ..models import Item, Task

INSERT_BATCH = 50_000
LOOKUP_CHUNK = 500  # keys per ``key IN (...)`` query (well under every backend's limit)
# Look keys up one chunk at a time when the task has this many times more items than the upload.
LOOKUP_RATIO = 8
ITERATOR_CHUNK = 20_000  # rows fetched at a time when reading a whole task's items

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
    if n_items == 0:
        return {}
    items = Item.objects.filter(task_id=task_id)
    if len(keys) * LOOKUP_RATIO >= n_items:
        return dict(items.values_list("key", "index").iterator(chunk_size=ITERATOR_CHUNK))
    known: dict[str, int] = {}
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
