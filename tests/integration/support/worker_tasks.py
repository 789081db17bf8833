"""Probe tasks and fault hooks that only the test workers load (``celery worker
--include=worker_tasks``, with this directory on ``PYTHONPATH``; see ``celery_worker`` in
tests/conftest.py).

The test process sends the probe tasks by name (``current_app.send_task(RECORD_USER_COUNT, ...)``)
and never imports this module, so nothing here can run in the test process by accident.

Fault hooks
-----------
A worker started with ``FAULT_PAUSE_AT`` in its environment stops at one exact point of the
pipeline, inside the transaction that stores a job's results, with the rows written but not
committed; it writes a JSON marker file at ``FAULT_MARKER`` (``{"point", "pid", ...}``, written
atomically) and then sleeps, so that a test can wait for the file and ``kill -9`` the worker
there, deterministically:

``FAULT_PAUSE_AT=store_round``
    after ``evaluation.kinds.open_world.planning._store_round`` wrote a ``PlanRound``, its
    ``Draw`` rows and the ``VerificationRequest`` rows (marker: ``run``, ``round``, ``items``).
``FAULT_PAUSE_AT=estimate_store``
    after the engine ran and ``evaluation.kinds.open_world.estimation._store_snapshot`` wrote the
    snapshot and its ``Estimate`` rows (marker: ``task``, ``version``, ``estimates``).

The worker pauses once per marker file (later jobs run normally). ``FAULT_PAUSE_SECONDS``
(default 120) bounds the sleep; a worker that is not killed then goes on and commits (a job in
flight while something else fails, e.g. the broker). The product code knows nothing of this:
the hooks replace the module attributes the pipeline looks up at call time.
"""

from __future__ import annotations

import json
import os
import time

from celery import shared_task
from django.contrib.auth.models import Group, User
from django.db.backends.signals import connection_created

RECORD_USER_COUNT = "tests_support.record_user_count"


def _sqlite_without_fsync(sender, connection, **kwargs) -> None:
    # As in the test process (tests/conftest.py): the test database is disposable.
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA synchronous = OFF")


connection_created.connect(_sqlite_without_fsync, dispatch_uid="tests-sqlite-without-fsync")


@shared_task(name=RECORD_USER_COUNT)
def record_user_count(tag: str) -> None:
    """Write what this process sees into the shared database: a ``Group`` named
    ``"<tag> users=<number of User rows> pid=<this process id>"``."""
    Group.objects.create(name=f"{tag} users={User.objects.count()} pid={os.getpid()}")


# --- Fault hooks --------------------------------------------------------------------------------


def _pause(point: str, **details) -> None:
    """Tell the test where this worker is (the marker file), then sleep until killed."""
    marker = os.environ["FAULT_MARKER"]
    if os.path.exists(marker):
        return
    tmp = f"{marker}.tmp"
    with open(tmp, "w") as fh:
        json.dump({"point": point, "pid": os.getpid(), **details}, fh)
    os.replace(tmp, marker)
    time.sleep(float(os.environ.get("FAULT_PAUSE_SECONDS", "120")))


def _install_store_round_pause() -> None:
    from evaluation.kinds.open_world import planning

    original = planning._store_round

    def store_round_then_pause(*args, **kwargs):  # (run, plan, ...): whatever the product takes
        plan_round = original(*args, **kwargs)
        _pause(
            "store_round", run=plan_round.run_id, round=plan_round.round, items=plan_round.n_items
        )
        return plan_round

    planning._store_round = store_round_then_pause


def _install_estimate_store_pause() -> None:
    from evaluation.kinds.open_world import estimation
    from leaderboard.models import Estimate

    original = estimation._store_snapshot

    def store_snapshot_then_pause(*args, **kwargs):  # (task, loaded, ...)
        snapshot = original(*args, **kwargs)
        if snapshot is not None:
            _pause(
                "estimate_store",
                task=snapshot.task_id,
                version=snapshot.version,
                estimates=Estimate.objects.filter(snapshot=snapshot).count(),
            )
        return snapshot

    estimation._store_snapshot = store_snapshot_then_pause


_FAULT_HOOKS = {
    "store_round": _install_store_round_pause,
    "estimate_store": _install_estimate_store_pause,
}

if os.environ.get("FAULT_PAUSE_AT"):
    _FAULT_HOOKS[os.environ["FAULT_PAUSE_AT"]]()
