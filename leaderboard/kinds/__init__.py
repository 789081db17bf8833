"""The product's wing of each kind of task (``Task.Kind``): what the organizer supplies, what a
run file holds and how it is read, what the board publishes and how the pages word it.
:func:`kind_for` is the one place the product looks at a task's kind; the protocol is
:class:`~.base.TaskKind`, the wings ``open_world`` and ``closed_pool``."""

from __future__ import annotations

from ..models import Task
from .base import RunContent, RunFile, TaskKind
from .closed_pool import ClosedPool
from .open_world import OpenWorld

KINDS: dict[str, TaskKind] = {kind.value: kind for kind in (OpenWorld(), ClosedPool())}
# A kind no wing has (an unsaved task's bad input: the validator refuses it) reads as the default.
DEFAULT_KIND = KINDS[Task._meta.get_field("kind").default]


def kind_for(task: Task) -> TaskKind:
    """``task``'s kind's wing."""
    return KINDS.get(task.kind, DEFAULT_KIND)


__all__ = ["KINDS", "RunContent", "RunFile", "TaskKind", "kind_for"]
