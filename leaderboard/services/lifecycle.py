"""Run state changes: every one timestamped and logged with its reason (and the mail it owes the
run's team, ``services.notifications``); quota refunds."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from ..models import Run, RunEvent
from .notifications import owe_run_notifications
from .stored_files import forget_stored_on_commit

# Which states may follow which (anything may fail; the watchdog may re-queue active runs).
_ALLOWED: dict[str, set[str]] = {
    Run.State.RECEIVED: {Run.State.VALIDATING, Run.State.REJECTED},
    Run.State.VALIDATING: {Run.State.QUEUED, Run.State.REJECTED, Run.State.HELD},
    # An organizer releases a held run (validated again, then queued) or rejects it.
    Run.State.HELD: {Run.State.RECEIVED, Run.State.REJECTED},
    Run.State.QUEUED: {Run.State.PLANNING},
    Run.State.PLANNING: {
        Run.State.AWAITING_LABELS,
        Run.State.ESTIMATING,
        Run.State.PLANNING,
        Run.State.QUEUED,
    },
    Run.State.AWAITING_LABELS: {Run.State.PLANNING, Run.State.ESTIMATING, Run.State.QUEUED},
    Run.State.ESTIMATING: {
        Run.State.SCORED,
        Run.State.PARTIAL,
        Run.State.PLANNING,
        Run.State.QUEUED,
    },
    # A partial run whose interval later meets the target (judgments of other runs narrowed the
    # annotators' error rates) is scored: the one change a finished run may still make.
    Run.State.PARTIAL: {Run.State.SCORED},
}


class IllegalTransition(RuntimeError):
    """A state change the lifecycle does not allow (a bug, or a stale message)."""


class RunWithdrawn(IllegalTransition):
    """The run was withdrawn while a worker held an older copy of it: the worker's change is
    not made (its transaction rolls back) and the worker leaves the run alone."""


def transition_run(run: Run, state: str, reason: str = "", **fields: Any) -> Run:
    """Move ``run`` to ``state`` (saving ``fields`` too) and log the change.

    Failing is allowed from any non-terminal state; a terminal run never changes again, except
    that a partial run may become scored, and that a run may be withdrawn from the states in
    ``Run.WITHDRAWABLE``. A run withdrawn meanwhile (by a person, while a worker held an older
    copy) changes no more: :class:`RunWithdrawn`. A run scored, partial or rejected owes its team
    a mail, written in the same transaction and sent by a worker after it commits.
    """
    if run.state != state:
        withdrawing = state == Run.State.WITHDRAWN and run.state in Run.WITHDRAWABLE
        allowed = _ALLOWED.get(run.state, set())
        if state != Run.State.FAILED and state not in allowed and not withdrawing:
            raise IllegalTransition(f"run {run.pk}: {run.state} -> {state}")
        if run.is_terminal and run.state != Run.State.PARTIAL and not withdrawing:
            raise IllegalTransition(f"run {run.pk} is {run.state}; it cannot become {state}")
    with transaction.atomic():
        if run.pk is not None and state != Run.State.WITHDRAWN:
            _refuse_if_withdrawn(run)
        now = timezone.now()
        run.state = state
        run.state_changed_at = now
        run.reason = reason
        for name, value in fields.items():
            setattr(run, name, value)
        if state in Run.TERMINAL and run.finished_at is None:
            run.finished_at = now
        run.save()
        event = RunEvent.objects.create(run=run, state=state, reason=reason, at=now)
        owe_run_notifications(event)
    return run


def _refuse_if_withdrawn(run: Run) -> None:
    """Raise :class:`RunWithdrawn` if the stored run is withdrawn (its row locked until the
    caller's transaction ends, so a withdrawal cannot slip in before the save)."""
    stored = (
        Run.objects.select_for_update().filter(pk=run.pk).values_list("state", flat=True).first()
    )
    if stored == Run.State.WITHDRAWN:
        raise RunWithdrawn(f"run {run.pk} was withdrawn; it stays withdrawn")


def fail_run(run: Run, reason: str) -> Run:
    """Fail a run for a platform reason; its submission no longer counts against the quota, and
    a received file it still had (the watchdog gave up before a worker read it) is deleted."""
    if run.upload:
        forget_stored_on_commit(run.upload)
    return transition_run(run, Run.State.FAILED, reason, quota_refunded=True, upload="")
