"""A task's items by key: the ``key -> index`` map the ingestion of a run reads (a closed pool's
whole pool, an open task's known keys), read in ranges of the ``(task, index)`` index."""

from __future__ import annotations

from ..models import Item, Task

# Items read per query when reading a whole task's items: each query is a statement of its own,
# so on SQLite (rollback journal) no read holds its shared lock, which blocks every writer's
# commit, for longer than one range of the ``(task, index)`` index.
READ_RANGE = 50_000


def all_item_indices(*, task: Task) -> dict[str, int]:
    """``key -> index`` for every item of ``task`` (read in short queries)."""
    n_items = Task.objects.values_list("n_items", flat=True).get(pk=task.pk)
    return item_indices_below(task.pk, n_items)


def item_indices_below(task_id: int, n_items: int) -> dict[str, int]:
    """``key -> index`` for the task's items with ``index < n_items`` (a query per range)."""
    known: dict[str, int] = {}
    for low in range(0, n_items, READ_RANGE):
        known.update(item_indices_between(task_id, low, min(n_items, low + READ_RANGE)))
    return known


def item_indices_between(task_id: int, low: int, high: int) -> dict[str, int]:
    """``key -> index`` for the task's items with ``low <= index < high`` (one query)."""
    rows = Item.objects.filter(task_id=task_id, index__gte=low, index__lt=high)
    return dict(rows.values_list("key", "index"))
