"""The queue after a run is withdrawn: the requests nothing needs any more leave it, and come back
when something asks for their items again.

A withdrawn run stays in the engine (its rounds shaped every inclusion probability) but leaves
the union that recall is estimated over (:meth:`evaluation.core.state.TaskState.withdraw_runs`):
the items only withdrawn runs predict are in no other run's estimate. Their pending requests, and
those of no reference candidate, are cancelled after each estimation of an open-world task (with
the engine lock held, so never while a plan reads the queue); a request an item of another run in
the union still needs is kept, as its answers are part of that run's sample.

A run that predicts a cancelled item brings it back into the union: its first planning round
reopens the item's request (:func:`reopen_for_run`), so that its sample is complete again once
the answers come in. Closed pools cancel nothing: every drawn item of a pool is in every run's
estimates (the pool's positives are counted over all of it).
"""

from __future__ import annotations

import logging

import numpy as np
from django.db import transaction
from django.db.models import Q

from annotation.models import VerificationRequest
from annotation.services import cancel_requests, cancelled_items, reopen_requests
from leaderboard.models import ReferenceCandidate, Run

from ...locks import assert_lock_held
from .state import LoadedTask

log = logging.getLogger(__name__)


def cancel_withdrawn_requests(loaded: LoadedTask, token: str) -> int:
    """Cancel the pending requests that the rounds of the task's withdrawn runs opened (drawn
    items and looks) on items outside the union of ``loaded`` and no reference candidate; returns
    how many. The runs' states are read as ``loaded`` holds them now (the estimation refreshes
    them): a run withdrawn after the state was loaded still has its items in that union, and the
    next estimation cancels its requests. ``token``: the caller's engine lease, checked before
    anything is written."""
    withdrawn = [run.pk for run in loaded.runs if run.state == Run.State.WITHDRAWN]
    if not withdrawn:
        return 0
    task = loaded.task
    rows = (
        VerificationRequest.objects.filter(task=task, state=VerificationRequest.State.PENDING)
        .filter(
            Q(item__draws__plan_round__run_id__in=withdrawn)
            | Q(item__looks__plan_round__run_id__in=withdrawn)
        )
        .values_list("item_id", "item__index")
        .distinct()
    )
    in_union = loaded.state.in_union
    # An item the state does not hold yet belongs to a run accepted since: it is needed.
    outside = {item_id for item_id, index in rows if index < in_union.size and not in_union[index]}
    if not outside:
        return 0
    with transaction.atomic():
        assert_lock_held(task.pk, token)
        candidates = set(
            ReferenceCandidate.objects.filter(task=task, item_id__in=outside).values_list(
                "item_id", flat=True
            )
        )
        cancelled = cancel_requests(task=task, item_ids=sorted(outside - candidates))
    if cancelled:
        log.info("task %s: %d requests of withdrawn runs cancelled", task.slug, cancelled)
    return cancelled


def reopen_for_run(loaded: LoadedTask, index: int) -> int:
    """Reopen the cancelled requests of the items run ``index`` of ``loaded`` predicts (inside
    the transaction of its first round); returns how many."""
    cancelled = cancelled_items(task=loaded.task)
    if not cancelled:
        return 0
    indices = np.fromiter(cancelled, dtype=np.int64, count=len(cancelled))
    predicted = indices[np.isin(indices, loaded.state.runs[index].items)]
    return reopen_requests(task=loaded.task, item_ids=[cancelled[int(i)] for i in predicted])
