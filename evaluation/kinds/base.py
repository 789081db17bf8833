"""What the pipeline's frame asks of a kind of task: :class:`KindEngine`."""

from __future__ import annotations

from typing import Protocol

from leaderboard.models import LeaderboardSnapshot, Run, Task


class KindEngine(Protocol):
    """The engine wing of one kind of task.

    The frame (:func:`evaluation.services.plan_run`, :func:`evaluation.services.estimate_task`)
    takes the task's engine lease, re-reads the run or task and handles failures; the wing does
    the rest under that lease (a plan job reads what it can before: :meth:`prepare`). Every
    write it makes re-checks the lease (:func:`evaluation.locks.assert_lock_held`) in its own
    transaction, so a job that outlived its lease writes nothing.

    Attributes
    ----------
    kind : str
        The ``Task.Kind`` value the wing serves.
    """

    kind: str

    def prepare(self, run: Run) -> object | None:
        """What planning ``run`` can read before the lease is taken (the task's state, loaded
        while another job holds the lease), handed to :meth:`plan`; ``None`` when nothing."""
        ...

    def plan(self, run: Run, token: str, prepared: object | None = None) -> str:
        """Plan ``run``'s next round (a run in a plannable state; the lease ``token`` held), from
        what :meth:`prepare` read, brought up to date under the lease.

        Returns what happened: ``"waiting"`` (answers are still out), ``"sample"`` (items were
        sent for verification, or it is planned again), ``"estimating"`` (no further round:
        the run goes to final estimation) or ``"skipped"`` (another worker stored the round).
        Raises ``ValueError`` or ``FloatingPointError`` when the engine refuses the stored state
        (the frame fails the run).
        """
        ...

    def estimate(self, task: Task, token: str) -> LeaderboardSnapshot | None:
        """Estimate every run of ``task`` (the lease ``token`` held), move its runs on, and
        store a snapshot if anything it rests on changed; returns that snapshot or ``None``."""
        ...
