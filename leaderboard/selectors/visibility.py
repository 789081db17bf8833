"""Who sees what: the one module that decides which tasks (:func:`task_for`), runs
(:func:`runs_seen_by`, :func:`run_for`), snapshots (:func:`snapshots_visible_to`) and data files
(:func:`data_access_for`) a user reaches, what a viewer learns of a run's progress while the
board is held, and in which order a board lists its runs (:func:`board_order`). Pages, both
APIs, the annotation app and the admin ask here; ``leaderboard.presenters`` only shapes what they
get."""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, cast

from django.core.exceptions import PermissionDenied
from django.db.models import CharField, IntegerField, Q, QuerySet
from django.http import Http404

from site_platform.prepared import PreparedQuery, Slot, stand_in

from .. import phases
from ..models import (
    Estimate,
    LeaderboardSnapshot,
    Run,
    RunCurve,
    RunEvent,
    Task,
)
from .roles import annotated_tasks, is_annotator, is_organizer, organized_tasks, signed_in, teams_of
from .task_page import terms_accepted, terms_digest

if TYPE_CHECKING:
    from .roles import AnyUser


def visible_tasks(user: AnyUser) -> QuerySet[Task]:
    """Open and closed tasks for everyone; drafts only for their organizers."""
    return Task.objects.filter(_visible(user))


def _visible(user: AnyUser) -> Q:
    public = Q(state__in=[Task.State.OPEN, Task.State.CLOSED])
    return public | Q(pk__in=organized_tasks(user).values("pk"))


Role = Literal["viewer", "organizer", "annotator"]


class TaskNotFound(Http404):
    """No task called ``slug`` that the user may reach: unknown and invisible alike (404), so a
    slug never tells that a draft exists."""

    def __init__(self, slug: str):
        super().__init__(f"there is no task {slug!r}")
        self.slug = slug


class TaskForbidden(PermissionDenied):
    """The user may know of ``task`` but does not hold ``role`` on it (403)."""

    MESSAGES = {
        "organizer": "only the organizers of task {slug!r} may do this",
        "annotator": "you are not an annotator of this task",
    }

    def __init__(self, task: Task, role: Role):
        super().__init__(self.MESSAGES[role].format(slug=task.slug))
        self.task, self.role = task, role


def task_for(slug: str, user: AnyUser, *, role: Role = "viewer", check_role: bool = True) -> Task:
    """The task called ``slug`` as ``user`` reaches it in ``role``; every task-by-slug lookup
    of the pages, both APIs and the annotation app is this one.

    - ``viewer`` (the public, participants): :func:`visible_tasks`, else :class:`TaskNotFound`.
    - ``organizer``: a task the user may see (else :class:`TaskNotFound`) and organizes
      (:func:`organized_tasks`; else :class:`TaskForbidden`).
    - ``annotator``: a task the user may see or annotates (else :class:`TaskNotFound`: a draft
      is no-one else's business) and annotates (else :class:`TaskForbidden`).

    ``check_role=False`` finds the task as ``role`` would reach it but leaves the role to the
    caller's service, which checks it under the lock it takes anyway (the annotation queue's
    claim): one statement fewer on the busiest request.
    """
    task = _reachable_task(slug, user, role)
    if task is None:
        raise TaskNotFound(slug)
    holds_role = {"viewer": None, "organizer": is_organizer, "annotator": is_annotator}[role]
    if check_role and holds_role is not None and not holds_role(task=task, user=user):
        raise TaskForbidden(task, role)
    return task


def _reachable_task(slug: str, user: AnyUser, role: Role) -> Task | None:
    if signed_in(user) and not user.is_superuser:
        # Every page and API request of a signed-in user finds its task here: compiled once.
        found = _REACHABLE_BY_SLUG[role].instances(slug=slug, user=user.pk)
        return cast(Task, found[0]) if found else None
    return _reachable_by_slug(slug, user, role).first()


def _reachable_by_slug(slug: str | Slot, user: AnyUser, role: Role) -> QuerySet[Task]:
    reachable = _visible(user)
    if role == "annotator":
        reachable |= Q(pk__in=annotated_tasks(user).values("pk"))
    return Task.objects.filter(reachable, slug=slug).order_by("pk")


def _signed_in_reachable(role: Role) -> QuerySet[Task]:
    user = stand_in(pk=Slot("user", IntegerField()), is_authenticated=True, is_superuser=False)
    return _reachable_by_slug(Slot("slug", CharField()), user, role)[:1]


_REACHABLE_BY_SLUG = {
    role: PreparedQuery(partial(_signed_in_reachable, role))
    for role in ("viewer", "organizer", "annotator")
}


def runs_visible_to(*, task: Task, user: AnyUser) -> QuerySet[Run]:
    """All runs of the task for its organizers; otherwise the runs of the user's teams, as
    stored (what they may be shown of each: :func:`runs_seen_by`)."""
    runs = Run.objects.filter(task=task).select_related("team").order_by("-id")
    if is_organizer(task=task, user=user):
        return runs
    return runs.filter(team__in=teams_of(user))


def held_runs(task: Task) -> QuerySet[Run]:
    """The task's runs held for its organizers (oldest first), for its organizers' pages: the
    caller reached ``task`` in the organizer role."""
    return Run.objects.filter(task=task, state=Run.State.HELD).select_related("team").order_by("id")


def run_for(*, run_id: int, user: AnyUser) -> Run | None:
    """The run as ``user`` may see it (:func:`runs_seen_by`), with its ``visible_events``, if
    they are a member of its team or an organizer of its task; else ``None``."""
    run = Run.objects.select_related("task", "team").filter(pk=run_id).first()
    if run is None or not signed_in(user):
        return None
    organizer = is_organizer(task=run.task, user=user)
    if not (organizer or run.team.members.filter(pk=user.pk).exists()):
        return None
    (seen,) = _as_seen_by([run], task=run.task, organizer=organizer, with_events=True)
    return seen


# States a run reaches before the engine reads any label, or in which it leaves the pipeline:
# what they say never rests on labels, so participants see them even while the board is held.
LABEL_FREE_STATES = frozenset(
    {
        Run.State.RECEIVED,
        Run.State.VALIDATING,
        Run.State.HELD,
        Run.State.REJECTED,
        Run.State.QUEUED,
        Run.State.FAILED,
        Run.State.WITHDRAWN,
    }
)


def public_run_for(*, run_id: int, user: AnyUser) -> Run | None:
    """The run as anyone who may see its task sees it on the board, if it is listed on the
    latest published snapshot (what the public board shows) and not withdrawn; else ``None``.

    The run's public page shows its name, team, description, link and published estimates
    (:func:`run_estimates_visible_to`), never its state, reason, events, file or counts as
    stored: those are its team's and its organizers' (:func:`run_for`). ``visible_events`` is
    empty.
    """
    run = (
        Run.objects.select_related("task", "team")
        .filter(pk=run_id)
        .exclude(state=Run.State.WITHDRAWN)
        .first()
    )
    if run is None or not visible_tasks(user).filter(pk=run.task_id).exists():
        return None
    snapshot = latest_published_snapshot(run.task)
    if snapshot is None or not any(
        isinstance(row, dict) and row.get("run") == run.pk for row in snapshot.rows or []
    ):
        return None
    run.visible_events = []
    return run


def runs_seen_by(
    *, task: Task, user: AnyUser, states: Iterable[str] = (), team: str | None = None
) -> QuerySet[Run] | list[Run]:
    """The task's runs ``user`` may see (:func:`runs_visible_to`), newest first, as they may see
    them, optionally only in ``states`` (as shown) or of the team named ``team``.

    Organizers of the task see runs as stored. Anyone else never sees how many of a run's items
    were new (``n_new_items`` is ``None``: it tells whether another team predicted them), and,
    while the board is held, sees each run as the latest published snapshot left it: the events
    logged up to that snapshot plus later ones in :data:`LABEL_FREE_STATES`, the state and
    reason of the last of them, the snapshot's counts of items requested and verified (none if
    the run is not on it), and no ``outcome`` or ``rounds`` (they are the planner's verdicts on
    held labels). Runs shown so are copies: never save one.
    """
    runs = runs_visible_to(task=task, user=user)
    if team is not None:
        runs = runs.filter(team__name=team)
    if is_organizer(task=task, user=user):
        return runs.filter(state__in=states) if states else runs
    return [
        run
        for run in _as_seen_by(runs, task=task, organizer=False)
        if not states or run.state in states
    ]


def _as_seen_by(
    runs: Iterable[Run], *, task: Task, organizer: bool, with_events: bool = False
) -> list[Run]:
    copies = [copy.copy(run) for run in runs]
    as_of = not organizer and phases.board_held(task)
    events: dict[int, list[RunEvent]] = defaultdict(list)
    if as_of or with_events:
        for event in RunEvent.objects.filter(run__in=[r.pk for r in copies]).order_by("id"):
            events[event.run_id].append(event)
    snapshot = latest_published_snapshot(task) if as_of else None
    rows = {
        row.get("run"): row for row in (snapshot.rows if snapshot else []) if isinstance(row, dict)
    }
    for run in copies:
        shown = events[run.pk]
        if not organizer:
            # Hidden from participants: how many items a run brought is the organizers' to know.
            run.n_new_items = None  # type: ignore[assignment]
        if as_of:
            shown = _as_of_snapshot(run, shown, snapshot, rows.get(run.pk, {}))
        if with_events:
            run.visible_events = shown
    return copies


def _as_of_snapshot(
    run: Run, events: list[RunEvent], snapshot: LeaderboardSnapshot | None, row: dict[str, Any]
) -> list[RunEvent]:
    """Set ``run``'s progress as of ``snapshot``; returns the events logged up to it."""
    cutoff = snapshot.created_at if snapshot is not None else None
    shown = [
        e for e in events if e.state in LABEL_FREE_STATES or (cutoff is not None and e.at <= cutoff)
    ]
    if shown:
        run.state, run.reason, run.state_changed_at = (
            shown[-1].state,
            shown[-1].reason,
            shown[-1].at,
        )
    if run.state not in Run.TERMINAL:
        run.finished_at = None
    # Unknown as of the snapshot: shown blank (this copy of the run is never saved).
    run.outcome = run.rounds = None  # type: ignore[assignment]
    run.n_requested, run.n_verified = row.get("n_requested", 0), row.get("n_verified", 0)
    return shown


def published_snapshots(task: Task) -> QuerySet[LeaderboardSnapshot]:
    """The task's published snapshots: what anyone who may see the task may see."""
    return LeaderboardSnapshot.objects.filter(task=task, published=True)


def latest_published_snapshot(task: Task) -> LeaderboardSnapshot | None:
    """What the public board shows: the task's latest published snapshot (``None`` if none)."""
    return published_snapshots(task).select_related("task").order_by("-version").first()


def snapshots_visible_to(*, task: Task, user: AnyUser) -> QuerySet[LeaderboardSnapshot]:
    """Published snapshots, newest first; the task's organizers also see held ones."""
    snapshots = (
        LeaderboardSnapshot.objects.filter(task=task)
        if is_organizer(task=task, user=user)
        else published_snapshots(task)
    )
    return snapshots.select_related("task").order_by("-version")


def snapshot_for(*, task: Task, version: int, user: AnyUser) -> LeaderboardSnapshot | None:
    """Snapshot ``version`` of the task if ``user`` may see it (held ones: organizers only)."""
    return snapshots_visible_to(task=task, user=user).filter(version=version).first()


def run_estimates_visible_to(*, run: Run, user: AnyUser) -> QuerySet[Estimate]:
    """The run's estimates across snapshots, oldest first: published ones, held ones too for
    the task's organizers. The caller has already checked that ``user`` may see the run."""
    visible = snapshots_visible_to(task=run.task, user=user)
    return (
        Estimate.objects.filter(run=run, snapshot__in=visible)
        .select_related("snapshot")
        .order_by("snapshot__version", "metric")
    )


def run_curve_visible_to(
    *, run: Run, user: AnyUser, snapshot: LeaderboardSnapshot | None = None
) -> RunCurve | None:
    """The run's precision-recall curve from the newest snapshot ``user`` may see (from
    ``snapshot`` if given and visible), under the rules of its scores
    (:func:`run_estimates_visible_to`): published snapshots, held ones too for the task's
    organizers. The caller has already checked that ``user`` may see the run."""
    visible = snapshots_visible_to(task=run.task, user=user)
    if snapshot is not None:
        visible = visible.filter(pk=snapshot.pk)
    return (
        RunCurve.objects.filter(run=run, snapshot__in=visible)
        .order_by("-snapshot__version")
        .first()
    )


def without_withdrawn(task: Task, rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Snapshot ``rows`` of ``task`` less those of runs withdrawn since: what a board lists (a
    snapshot's downloads are its record as computed, and keep them)."""
    withdrawn = set(
        Run.objects.filter(task=task, state=Run.State.WITHDRAWN).values_list("pk", flat=True)
    )
    return [row for row in rows if not (isinstance(row, dict) and row.get("run") in withdrawn)]


def board_order(
    rows: Iterable[dict[str, Any]], metric: str, *, descending: bool = True
) -> list[dict[str, Any]]:
    """Snapshot rows by ``metric``'s value (highest first, or lowest), rows without one last,
    ties by run name then run id: the one board order of the pages and the API."""

    def key(row: dict[str, Any]) -> tuple[bool, float, str, int]:
        cell = row.get(metric)
        value = cell.get("value") if isinstance(cell, dict) else None
        signed = 0.0 if value is None else (-value if descending else value)
        return (value is None, signed, str(row.get("name", "")), row.get("run") or 0)

    return sorted(rows, key=key)


@dataclass(frozen=True)
class DataAccess:
    """Whether a user may download a task's data files; if not, ``reason`` says what to do."""

    allowed: bool
    reason: str = ""


def data_access_for(*, task: Task, user: AnyUser) -> DataAccess:
    """Who may download the task's data files, by the task's ``data_access``: ``public``
    (anyone who may see the task), ``signed_in``, or ``terms_accepted`` (members of a team that
    accepted the task's current terms; any signed-in person while it has none). Its organizers
    always may. The caller has already checked that ``user`` may see the task."""
    if task.data_access == Task.DataAccess.PUBLIC or is_organizer(task=task, user=user):
        return DataAccess(True)
    if not signed_in(user):
        return DataAccess(False, "sign in to download the task's files")
    if task.data_access == Task.DataAccess.SIGNED_IN or not terms_digest(task):
        return DataAccess(True)
    if any(terms_accepted(task=task, team=team) for team in teams_of(user)):
        return DataAccess(True)
    return DataAccess(
        False,
        "the task's files are for teams that accepted its terms: accept them for your team on "
        "the task's overview or submit page",
    )
