"""Conflicts of interest: the teams whose runs predicted an item never verify it.

Who is in a team follows membership history (``leaderboard.selectors.conflicted_teams``); a
person who joins a team loses the live leases they hold on its items
(:func:`revoke_conflicting_leases`), so an answer on one is kept late, never counted.

Recorded as :class:`~annotation.models.RequestConflict` rows only for the teams that can
conflict on the task: those an annotator of the task is in, or was in since the task was
created (:func:`annotating_teams`). A team none of whose members annotates never meets its
items in anyone's queue, so its rows would never be read (they were 34 per request in the
service benchmark). The rows are recorded when a request opens (every such team with a run
that predicts the item, not only the run it was drawn for), when a run enters planning for the
first time (for the requests pending then), when a request opens again (a further look, an
undone answer), and when a team becomes one that can conflict: a member joins the task as an
annotator, or an annotator joins the team (:func:`register_team_conflicts`, from
``annotation.signals``). Those writes take the task row first, as planning's do, so a request
opened meanwhile is either seen by the join or opened after it with the team counted in.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime

import numpy as np

from evaluation.core.sorted_sets import contains
from leaderboard.models import Run, RunPredictions, Task
from leaderboard.selectors import conflicted_memberships

from ..models import Assignment, RequestConflict, VerificationRequest
from .judgment_locks import lock_judgment_set


def annotating_teams(task: Task) -> set[int]:
    """The teams that can conflict on ``task``: every team one of its annotators is in, or was
    in since the task was created (``leaderboard.selectors.conflicted_memberships``)."""
    annotators = list(task.annotators.values_list("pk", flat=True))
    return {team for team, _ in conflicted_memberships(task=task, user_ids=annotators)}


def _team_predictions(
    task: Task, teams: Iterable[int], since: datetime | None = None
) -> dict[int, np.ndarray]:
    """Every item index some run of each of ``teams`` predicts (team id -> sorted unique
    indices); ``since``: only runs submitted from then on."""
    per_team: defaultdict[int, list[np.ndarray]] = defaultdict(list)
    runs = RunPredictions.objects.filter(run__task=task, run__team__in=list(teams))
    runs = runs.select_related("run")
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
    """Record the conflicting teams of the requests on ``item_ids`` (those of
    :func:`annotating_teams` whose runs predict the item); returns rows created (idempotent).

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
    teams = annotating_teams(task)
    if not teams:
        return 0
    pks = np.array([r[0] for r in requests], dtype=np.int64)
    indices = np.array([r[1] for r in requests], dtype=np.int64)
    if run_items is None:
        run_items = _team_predictions(task, teams, since).items()
    hits: defaultdict[int, np.ndarray] = defaultdict(lambda: np.zeros(indices.size, bool))
    for team_id, predicted in run_items:
        if team_id in teams:
            hits[team_id] |= contains(predicted, indices)
    rows: list[RequestConflict] = []
    for team_id, hit in hits.items():
        rows.extend(RequestConflict(request_id=int(pk), team_id=team_id) for pk in pks[hit])
    RequestConflict.objects.bulk_create(rows, batch_size=2000, ignore_conflicts=True)
    return len(rows)


def register_run_conflicts(*, run: Run) -> int:
    """Record ``run``'s team as conflicting with every pending (or cancelled) request on an item
    it predicts, if the team can conflict on the task (:func:`annotating_teams`; if it cannot,
    a member who joins the task later, or an annotator who joins it, records them then).

    Idempotent; called when a run is planned for the first time (its items may already be
    queued for earlier runs). Returns the number of (request, team) pairs considered.
    """
    if run.team_id not in annotating_teams(run.task):
        return 0
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


def register_team_conflicts(*, task: Task, team_ids: Iterable[int]) -> int:
    """Record ``team_ids`` as conflicting with every request of ``task`` (whatever its state: a
    resolved or cancelled one may be asked again) on an item one of their runs predicts: the
    teams have just become ones that can conflict (an annotator joined one of them, or one of
    their members joined the task). Takes the task row first, as planning does when it opens
    requests, so a request opened at the same time is covered by one side or the other.
    Returns the rows considered. Idempotent."""
    predictions = _team_predictions(task, set(team_ids))
    if not predictions:
        return 0
    lock_judgment_set(task.pk)
    requests = list(VerificationRequest.objects.filter(task=task).values_list("pk", "item__index"))
    if not requests:
        return 0
    pks = np.array([r[0] for r in requests], dtype=np.int64)
    indices = np.array([r[1] for r in requests], dtype=np.int64)
    rows = [
        RequestConflict(request_id=int(pk), team_id=team_id)
        for team_id, predicted in predictions.items()
        for pk in pks[contains(predicted, indices)]
    ]
    RequestConflict.objects.bulk_create(rows, batch_size=2000, ignore_conflicts=True)
    return len(rows)


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
