"""The one place the pipeline looks at a task's kind: :func:`engine_for`."""

from __future__ import annotations

from leaderboard.models import Task

from .base import KindEngine
from .closed_pool import ClosedPoolEngine
from .open_world import OpenWorldEngine

# The engine wing of each kind, by ``Task.Kind`` value (``"open"``, ``"closed_pool"``).
ENGINES: dict[str, KindEngine] = {
    engine.kind: engine for engine in (OpenWorldEngine(), ClosedPoolEngine())
}


def engine_for(task: Task) -> KindEngine:
    """The engine wing of ``task``'s kind.

    Raises ``ValueError`` for a kind no wing serves (a platform error: the model's choices and
    this registry disagree).
    """
    try:
        return ENGINES[task.kind]
    except KeyError:
        raise ValueError(f"no engine serves tasks of kind {task.kind!r}") from None
