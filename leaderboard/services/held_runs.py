"""Runs held for the organizers: a validated run of an open task most of whose keys match no
item and look malformed (:mod:`leaderboard.ingestion.screening`) is held instead of queued; an
organizer releases it (validated again and queued as usual) or rejects it.

A held run is not planned and has no items, predictions or place on the board; its file stays in
storage until it is released or rejected. It counts against its team's quota while held, as a
received run does (or else held runs would be a way round the quota), and a rejected one gives
the slot back. The watchdog leaves held runs alone: they wait for people, not for the platform.
Permission (the task's organizers) is checked by the caller.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import transaction

from site_platform.errors import ServiceError

from .. import jobs
from ..ingestion.screening import KeyScreen, KnownKeys, screen_keys
from ..models import Item, Run, RunEvent, Task
from .items import known_keys
from .lifecycle import transition_run
from .stored_files import forget_stored_on_commit

if TYPE_CHECKING:
    pass

KNOWN_SAMPLE = 5_000  # the task's item keys (the first by index) that tell what keys look like
RELEASED = "released by the organizers; waiting to be validated again"
REJECTED = (
    "rejected by the organizers: most of its keys match no item of the task and look "
    "malformed (examples by line below); it uses no quota"
)


class HeldRunError(ServiceError):
    """An organizer's action on a run that is not held (``not_held``, 409)."""

    code = "not_held"
    http_status = 409


def junk_screen(task: Task, keys: list[str]) -> KeyScreen:
    """Screen a parsed run's ``keys`` against the task's item keys."""
    sample = Item.objects.filter(task_id=task.pk).order_by("index")[:KNOWN_SAMPLE]
    return screen_keys(
        keys,
        known=KnownKeys.of(sample.values_list("key", flat=True)),
        existing=lambda wanted: known_keys(task=task, keys=wanted),
    )


def was_held(run: Run) -> bool:
    """Whether ``run`` was ever held (then a validation of it follows its release)."""
    return RunEvent.objects.filter(run=run, state=Run.State.HELD).exists()


def hold_run(run: Run, screen: KeyScreen, keys: list[str]) -> None:
    """Hold ``run`` (locked, ``validating``) for the organizers, with why and examples by line;
    its file is kept for a release."""
    transition_run(
        run,
        Run.State.HELD,
        f"held for the organizers: {screen.summary()}. An organizer releases it (it is then "
        "evaluated) or rejects it (it then uses no quota)",
        errors=screen.examples(keys),
        error_count=len(screen.malformed),
        n_predictions=len(keys),
    )


def release_run(*, run: Run) -> Run:
    """Release a held run: it is validated again (no longer screened) and queued as usual.
    Idempotent: a run already released is returned as it is."""
    with transaction.atomic():
        current = Run.objects.select_for_update().get(pk=run.pk)
        if current.state == Run.State.HELD:
            transition_run(current, Run.State.RECEIVED, RELEASED)
            jobs.enqueue_ingest(current.pk)
        elif not _released(current):
            raise _not_held(current, "release")
    run.refresh_from_db()
    return run


def reject_held_run(*, run: Run) -> Run:
    """Reject a held run: it uses no quota, and its file is deleted. Idempotent: a held run
    already rejected is returned as it is."""
    with transaction.atomic():
        current = Run.objects.select_for_update().get(pk=run.pk)
        if current.state == Run.State.HELD:
            stored = current.upload
            transition_run(current, Run.State.REJECTED, REJECTED, upload="")
            if stored:
                forget_stored_on_commit(stored)
        elif not (current.state == Run.State.REJECTED and was_held(current)):
            raise _not_held(current, "reject")
    run.refresh_from_db()
    return run


def _released(run: Run) -> bool:
    return run.state != Run.State.REJECTED and was_held(run)


def _not_held(run: Run, action: str) -> HeldRunError:
    return HeldRunError(
        f"run {run.pk} is {run.get_state_display()}, not held: only a held run can be "
        f"{action}ed by its task's organizers"
    )
