"""Conflicts of interest: the teams whose runs predicted an item never verify it.

Who is in a team follows membership history (``leaderboard.selectors.conflicted_teams``); a
person who joins a team loses the live leases they hold on its items
(:func:`revoke_conflicting_leases`), so an answer on one is kept late, never counted.

Recorded as :class:`~annotation.models.RequestConflict` rows when a request opens (every run of
the task that predicts the item, not only the run it was drawn for), when a run enters planning
for the first time (for the requests pending then), and when a request opens again (a further
look, an undone answer), so a run submitted after a request opened is covered too.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime

import numpy as np

from evaluation.core.sorted_sets import contains
from leaderboard.models import Run, RunPredictions, Task

from ..models import Assignment, RequestConflict, VerificationRequest


def _team_predictions(task: Task, since: datetime | None = None) -> dict[int, np.ndarray]:
    """Every item index some run of each team predicts (team id -> sorted unique indices);
    ``since``: only runs submitted from then on."""
    per_team: defaultdict[int, list[np.ndarray]] = defaultdict(list)
    runs = RunPredictions.objects.filter(run__task=task).select_related("run")
    if since is not None:
        runs = runs.filter(run__created_at__gte=since)
    for preds in runs:
        items, _ = preds.arrays()
        per_team[preds.run.team_id].append(items)
    return {team: np.unique(np.concatenate(arrays)) for team, arrays in per_team.items()}


def register_request_conflicts(
    *,
    task: Task,
    item_ids: list[int],
    run_items: Iterable[tuple[int, np.ndarray]] | None = None,
    since: datetime | None = None,
) -> int:
    """Record the conflicting teams of the requests on ``item_ids``; returns rows created
    (idempotent).

    ``run_items``, ``(team id, sorted item indices)`` for every run of the task, spares reading
    every run's predictions from the database (a caller that has them in memory, the planner,
    passes them: at 100 runs x 1,000,000 predictions the read alone takes seconds). Without
    them, ``since`` reads only the runs submitted from then on (a request re-opened needs only
    the teams of runs that came after it was opened).
    """
    requests = list(
        VerificationRequest.objects.filter(task=task, item_id__in=item_ids).values_list(
            "pk", "item__index"
        )
    )
    if not requests:
        return 0
    pks = np.array([r[0] for r in requests], dtype=np.int64)
    indices = np.array([r[1] for r in requests], dtype=np.int64)
    if run_items is None:
        run_items = _team_predictions(task, since).items()
    hits: defaultdict[int, np.ndarray] = defaultdict(lambda: np.zeros(indices.size, bool))
    for team_id, predicted in run_items:
        hits[team_id] |= contains(predicted, indices)
    rows: list[RequestConflict] = []
    for team_id, hit in hits.items():
        rows.extend(RequestConflict(request_id=int(pk), team_id=team_id) for pk in pks[hit])
    RequestConflict.objects.bulk_create(rows, batch_size=2000, ignore_conflicts=True)
    return len(rows)


def register_run_conflicts(*, run: Run) -> int:
    """Record ``run``'s team as conflicting with every pending (or cancelled) request on an item
    it predicts.

    Idempotent; called when a run is planned for the first time (its items may already be
    queued for earlier runs). Returns the number of (request, team) pairs considered.
    """
    preds = RunPredictions.objects.filter(run=run).first()
    if preds is None:
        return 0
    items, _ = preds.arrays()
    # Cancelled requests too: asked again later, they are pending with this run in the task.
    pending = list(
        VerificationRequest.objects.filter(
            task_id=run.task_id,
            state__in=(VerificationRequest.State.PENDING, VerificationRequest.State.CANCELLED),
        ).values_list("pk", "item__index")
    )
    if not pending:
        return 0
    pks = np.array([r[0] for r in pending], dtype=np.int64)
    indices = np.array([r[1] for r in pending], dtype=np.int64)
    hit = pks[np.isin(indices, items)]
    RequestConflict.objects.bulk_create(
        [RequestConflict(request_id=int(pk), team_id=run.team_id) for pk in hit],
        batch_size=2000,
        ignore_conflicts=True,
    )
    return int(hit.size)


def revoke_conflicting_leases(*, memberships: Iterable[tuple[int, int]]) -> int:
    """Revoke the live leases each ``(team id, user id)`` membership just begun puts in conflict
    (on requests the team's runs predict); returns how many. Idempotent."""
    revoked = 0
    for team_id, user_id in set(memberships):
        revoked += Assignment.objects.filter(
            annotator_id=user_id,
            state=Assignment.State.ACTIVE,
            request__conflicts__team_id=team_id,
        ).update(state=Assignment.State.REVOKED)
    return revoked
