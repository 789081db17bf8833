"""The lock every write to a task's requests or its judgment set takes first: the task's row.

Its own module because every such writer takes it (answers and undos through
:func:`~annotation.services.judgments.lock_request`, cancelled and reopened requests in
:mod:`~annotation.services.cancelled`), and those import one another.
"""

from __future__ import annotations

from leaderboard.models import Task


def lock_judgment_set(task_id: int) -> None:
    """Lock the task row until the transaction ends, as the next judgment-set version will.

    Lock order: a transaction that writes a task's requests or judgment set locks the task row
    *before* any of its request rows. The engine's writes do so (they check their lease with the
    task row locked, then ask requests again), and so do answers and undos through
    :func:`lock_request`: with one order, an answer and a planning round never deadlock.
    ``FOR NO KEY UPDATE`` is the lock the version's ``UPDATE`` takes anyway; it leaves rows that
    merely reference the task (leases, runs) free to be inserted.
    """
    list(Task.objects.select_for_update(no_key=True).filter(pk=task_id).values_list("pk"))
