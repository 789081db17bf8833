"""Withdrawing a run (its team, the task's organizers) and marking a baseline (organizers).

A withdrawn run leaves the board and the planner for good. It stays in the engine: its rounds shaped
every item's inclusion probability, so the record that weighs every verified item keeps them
(``evaluation.kinds.open_world.state``); the union that recall is estimated over no longer holds the
items only it predicts, and the estimation this enqueues drops it from the board and cancels the
requests nothing needs any more (``evaluation.kinds.open_world.withdrawals``; docs/STATISTICS.md,
"Withdrawn runs"). Answers already given stay.

Quota: a run withdrawn before anything was asked of annotators for it and before any snapshot
estimated it (no planning round, no estimate) gives its slot back; any later one still counts,
so that submitting and withdrawing cannot probe the labels for free.

A baseline is listed on the board as such and takes no rank (the ranks are the teams'); marking
or unmarking one re-estimates the task so that the ranks follow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import transaction

from site_platform.errors import ServiceError

from .. import jobs
from ..models import PoolRunOutputs, Run, RunPredictions, Task
from ..selectors import is_organizer, may_withdraw_run, withdrawal_refunds
from .lifecycle import transition_run
from .stored_files import forget_stored_on_commit

if TYPE_CHECKING:
    from django.contrib.auth.models import User

# The states of a run the engine holds (a worker accepted it). Withdrawn from one of them, a run
# stays in the engine's record; from any other (not validated yet) it never enters it: whatever
# predictions it has are dropped, as the engine takes in every run with stored predictions.
_IN_ENGINE = (*Run.ACTIVE, Run.State.SCORED, Run.State.PARTIAL)


class RunActionError(ServiceError):
    """A withdrawal or baseline change that was refused.

    Codes: ``not_allowed`` (403: not a member of the run's team nor an organizer of its task;
    for a baseline, not an organizer), ``nothing_to_withdraw`` (409: the run was rejected or
    failed: it is on no board and uses no quota), ``not_on_board`` (409: a rejected, failed or
    withdrawn run cannot be a baseline).
    """

    statuses = {"not_allowed": 403, "nothing_to_withdraw": 409, "not_on_board": 409}


def withdraw_run(*, run: Run, by: User) -> Run:
    """Withdraw ``run`` for good; idempotent (a withdrawn run is returned as it is).

    Raises :class:`RunActionError`. Returns the run as stored; ``quota_refunded`` says whether
    its slot was given back.
    """
    if not may_withdraw_run(run=run, user=by):
        raise RunActionError(
            f"only the members of team {run.team.name!r} and the organizers of task "
            f"{run.task.slug!r} may withdraw this run",
            code="not_allowed",
        )
    with transaction.atomic():
        # The task row first, as every write of the pipeline: an estimation writing its snapshot
        # sees the run withdrawn, or its snapshot is written before the withdrawal.
        Task.objects.select_for_update().filter(pk=run.task_id).values_list("pk").get()
        current = Run.objects.select_for_update().select_related("task", "team").get(pk=run.pk)
        if current.state == Run.State.WITHDRAWN:
            return current
        if current.state not in Run.WITHDRAWABLE:
            raise RunActionError(
                f"run {current.pk} ({current.name!r}) was {current.state}: it is on no board "
                "and uses no quota, so there is nothing to withdraw; nothing was changed",
                code="nothing_to_withdraw",
            )
        refund = withdrawal_refunds(current)
        upload, in_engine = current.upload, current.state in _IN_ENGINE
        transition_run(
            current,
            Run.State.WITHDRAWN,
            _reason(current, by, refund),
            upload="",
            quota_refunded=current.quota_refunded or refund,
        )
        if upload:
            forget_stored_on_commit(upload)
        if in_engine:
            jobs.enqueue_estimate(current.task_id)
        else:
            RunPredictions.objects.filter(run=current).delete()
            PoolRunOutputs.objects.filter(run=current).delete()
    return current


def _reason(run: Run, by: User, refunded: bool) -> str:
    who = (
        f"an organizer of the task ({by.get_username()})"
        if not run.team.members.filter(pk=by.pk).exists()
        else f"its team ({by.get_username()})"
    )
    quota = (
        "nothing had been asked of annotators for it: its submission no longer counts against "
        "the team's quota"
        if refunded or run.quota_refunded
        else "it still counts against the team's quota (annotators were asked about its items, "
        "or it was estimated)"
    )
    return f"withdrawn by {who}: it left the board and the planner; {quota}"


def set_baseline(*, run: Run, by: User, baseline: bool) -> Run:
    """Mark ``run`` as a baseline (or not); idempotent. Organizers of its task only.

    Raises :class:`RunActionError`. A change re-estimates the task (a new snapshot lists the
    run with its mark and ranks the others without it).
    """
    if not is_organizer(task=run.task, user=by):
        raise RunActionError(
            f"only the organizers of task {run.task.slug!r} may mark a baseline",
            code="not_allowed",
        )
    with transaction.atomic():
        Task.objects.select_for_update().filter(pk=run.task_id).values_list("pk").get()
        current = Run.objects.select_for_update().select_related("task", "team").get(pk=run.pk)
        if current.baseline == baseline:
            return current
        if baseline and current.state in (
            Run.State.REJECTED,
            Run.State.FAILED,
            Run.State.WITHDRAWN,
        ):
            raise RunActionError(
                f"run {current.pk} ({current.name!r}) is {current.state}: it is on no board, "
                "so it cannot be a baseline; nothing was changed",
                code="not_on_board",
            )
        Run.objects.filter(pk=current.pk).update(baseline=baseline)
        current.baseline = baseline
        if current.state in _IN_ENGINE:
            jobs.enqueue_estimate(current.task_id)
    return current
