"""Reads of the leaderboard app: tasks a user may see, teams, runs, quotas, snapshots, spend.

The only module that decides who sees what: which tasks (:func:`task_for`), runs
(:func:`runs_seen_by`, :func:`run_for`) and snapshots (:func:`snapshots_visible_to`) a user
reaches, and in which order a board lists its runs (:func:`board_order`). Pages, both APIs, the
annotation app and the admin ask here; ``leaderboard.presenters`` only shapes what they get.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from allauth.account.models import EmailAddress
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q, QuerySet, Sum
from django.http import Http404
from django.utils import timezone

from . import phases
from .models import (
    ApiToken,
    Estimate,
    Item,
    LeaderboardSnapshot,
    ReferenceCandidate,
    ReferenceSample,
    Run,
    RunCurve,
    RunEvent,
    Task,
    TaskInvitation,
    Team,
    TeamApproval,
)

QUOTA_WINDOW = timedelta(hours=24)
# Runs that do not count against a quota: refused at upload, or failed by the platform (refunded).
NOT_COUNTED = (Run.State.REJECTED, Run.State.FAILED)


@dataclass(frozen=True)
class Quota:
    """A team's submissions on a task: used and allowed, in total and in the last 24 hours."""

    used_total: int
    limit_total: int
    used_today: int
    limit_today: int
    next_slot_at: datetime | None  # when a daily slot frees up (None: one is free, or never)

    @property
    def total_exhausted(self) -> bool:
        return self.used_total >= self.limit_total

    @property
    def daily_exhausted(self) -> bool:
        return self.used_today >= self.limit_today

    @property
    def exhausted(self) -> bool:
        return self.total_exhausted or self.daily_exhausted

    @property
    def remaining(self) -> int:
        return max(0, min(self.limit_total - self.used_total, self.limit_today - self.used_today))


def counted_runs(*, task: Task, team: Team) -> QuerySet[Run]:
    """The team's runs on the task that count against its quota."""
    return (
        Run.objects.filter(task=task, team=team)
        .exclude(state__in=NOT_COUNTED)
        .exclude(quota_refunded=True)
    )


def quota_for(*, task: Task, team: Team, now: datetime | None = None) -> Quota:
    now = now or timezone.now()
    counted = counted_runs(task=task, team=team)
    used_total = counted.count()
    recent = list(
        counted.filter(created_at__gt=now - QUOTA_WINDOW)
        .order_by("created_at")
        .values_list("created_at", flat=True)
    )
    limit_today = task.max_runs_per_team_per_day
    next_slot_at = None
    if recent and len(recent) >= limit_today and used_total < task.max_runs_per_team:
        # The daily window slides: the slot of the run that leaves it first frees up first.
        next_slot_at = recent[len(recent) - limit_today] + QUOTA_WINDOW if limit_today else None
    return Quota(
        used_total=used_total,
        limit_total=task.max_runs_per_team,
        used_today=len(recent),
        limit_today=limit_today,
        next_slot_at=next_slot_at,
    )


def organized_tasks(user) -> QuerySet[Task]:
    """The tasks ``user`` organizes: the one rule for organizer rights, used by both APIs, the
    pages and the admin. Only a task's organizer list grants them (superusers hold them on every
    task); staff status grants none (it opens the admin, which shows these tasks only)."""
    if not getattr(user, "is_authenticated", False):
        return Task.objects.none()
    if user.is_superuser:
        return Task.objects.all()
    return Task.objects.filter(organizers=user)


def is_organizer(*, task: Task, user) -> bool:
    return organized_tasks(user).filter(pk=task.pk).exists()


def can_create_tasks(user) -> bool:
    """Whether ``user`` may create a task (and so organize it): the one rule of the pages and
    the API. ``settings.TASK_CREATION``: ``"role"`` (staff, or the permission
    ``leaderboard.add_task`` an admin grants once) or ``"anyone"`` (every signed-in user)."""
    if not getattr(user, "is_authenticated", False):
        return False
    if settings.TASK_CREATION == "anyone":
        return True
    return bool(user.is_staff or user.has_perm("leaderboard.add_task"))


def sample_payload(task: Task) -> object | None:
    """A payload of one of the task's items (the first that has one, in index order) for the
    preview of its display template; ``None`` if none of the first items has one."""
    payloads = Item.objects.filter(task=task).order_by("index").values_list("payload", flat=True)
    return next((payload for payload in payloads[:50] if payload), None)


def may_set_up_tasks(user) -> bool:
    """Whether ``user`` may use the organizers' set-up tools that touch no task (the display
    template preview): those who may create tasks or organize one."""
    return can_create_tasks(user) or organized_tasks(user).exists()


def visible_tasks(user) -> QuerySet[Task]:
    """Open and closed tasks for everyone; drafts only for their organizers."""
    return Task.objects.filter(_visible(user))


def _visible(user) -> Q:
    public = Q(state__in=[Task.State.OPEN, Task.State.CLOSED])
    return public | Q(pk__in=organized_tasks(user).values("pk"))


def annotated_tasks(user) -> QuerySet[Task]:
    """The tasks ``user`` annotates, in any state (a closed task may still have runs to
    verify; an annotator of a draft sees it in the annotation app only)."""
    if not getattr(user, "is_authenticated", False):
        return Task.objects.none()
    return Task.objects.filter(annotators=user)


def is_annotator(*, task: Task, user) -> bool:
    return annotated_tasks(user).filter(pk=task.pk).exists()


# -- reaching a task by its slug: the one rule --------------------------------------------------
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


def task_for(slug: str, user, *, role: Role = "viewer") -> Task:
    """The task called ``slug`` as ``user`` reaches it in ``role``; every task-by-slug lookup
    of the pages, both APIs and the annotation app is this one.

    - ``viewer`` (the public, participants): :func:`visible_tasks`, else :class:`TaskNotFound`.
    - ``organizer``: a task the user may see (else :class:`TaskNotFound`) and organizes
      (:func:`organized_tasks`; else :class:`TaskForbidden`).
    - ``annotator``: a task the user may see or annotates (else :class:`TaskNotFound`: a draft
      is no-one else's business) and annotates (else :class:`TaskForbidden`).
    """
    reachable = _visible(user)
    if role == "annotator":
        reachable |= Q(pk__in=annotated_tasks(user).values("pk"))
    task = Task.objects.filter(reachable, slug=slug).first()
    if task is None:
        raise TaskNotFound(slug)
    holds_role = {"viewer": None, "organizer": is_organizer, "annotator": is_annotator}[role]
    if holds_role is not None and not holds_role(task=task, user=user):
        raise TaskForbidden(task, role)
    return task


def teams_of(user) -> QuerySet[Team]:
    if not getattr(user, "is_authenticated", False):
        return Team.objects.none()
    return Team.objects.filter(members=user).order_by("name")


class TeamNotFound(Http404):
    """No team ``team_id`` that the user is a member of: unknown and others' alike (404)."""

    def __init__(self, team_id: int):
        super().__init__(f"you are in no team {team_id}")


def team_for(*, team_id: int, user) -> Team:
    """The team ``team_id`` if ``user`` is a member of it: only members see a team's page,
    members, invitations and runs (an organizer sees the runs of their tasks' boards)."""
    team = teams_of(user).filter(pk=team_id).first()
    if team is None:
        raise TeamNotFound(team_id)
    return team


def team_approved(*, task: Task, team: Team) -> bool:
    """Whether ``team`` may submit to ``task`` as far as approval goes."""
    if not task.team_approval:
        return True
    return TeamApproval.objects.filter(task=task, team=team, approved_at__isnull=False).exists()


def approval_requests(task: Task) -> QuerySet[TeamApproval]:
    """The teams that asked to take part in ``task``, approved or not (for its organizers)."""
    return TeamApproval.objects.filter(task=task).select_related("team", "requested_by")


def approval_request(*, task: Task, team_id: int) -> TeamApproval:
    """The request of team ``team_id`` to take part in ``task`` (404 if it made none)."""
    approval = approval_requests(task).filter(team_id=team_id).first()
    if approval is None:
        raise Http404(f"team {team_id} has not asked to take part in {task.slug!r}")
    return approval


def approvals_of(*, task: Task, teams: Iterable[Team]) -> dict[int, TeamApproval]:
    """The requests of ``teams`` on ``task``, by team id (a participant's submit page)."""
    approvals = TeamApproval.objects.filter(task=task, team__in=list(teams))
    return {approval.team_id: approval for approval in approvals}


# -- a task's people and its open invitations (for its organizers) ------------------------------
def task_annotators(task: Task) -> QuerySet:
    return task.annotators.order_by("username")


def task_organizers(task: Task) -> QuerySet:
    return task.organizers.order_by("username")


def open_task_invitations(task: Task, now: datetime | None = None) -> QuerySet[TaskInvitation]:
    """The task's invitations that still work (neither used, revoked nor expired), newest first."""
    return TaskInvitation.objects.filter(
        task=task, used_at=None, revoked_at=None, expires_at__gt=now or timezone.now()
    ).select_related("created_by")


def task_invitation_for(*, task: Task, invitation_id: int) -> TaskInvitation:
    """Invitation ``invitation_id`` of ``task`` (404 if it has none such)."""
    invitation = TaskInvitation.objects.filter(task=task, pk=invitation_id).first()
    if invitation is None:
        raise Http404(f"task {task.slug!r} has no invitation {invitation_id}")
    return invitation


def task_member_for(*, task: Task, role: Literal["annotator", "organizer"], user_id: int):
    """The ``role`` (annotator, organizer) of ``task`` whose id is ``user_id`` (404 if none)."""
    people = task.annotators if role == "annotator" else task.organizers
    person = people.filter(pk=user_id).first()
    if person is None:
        raise Http404(f"user {user_id} is not an {role} of task {task.slug!r}")
    return person


# -- annotators who compete: the one rule --------------------------------------------------------
@dataclass(frozen=True)
class AnnotatorConflict:
    """``user`` annotates ``task`` and is a member of ``team``, which has runs on it."""

    task: Task
    team: Team
    user: Any  # the user model


def annotator_conflicts(
    *, task: Task | None = None, team: Team | None = None, user=None
) -> list[AnnotatorConflict]:
    """Where a person would both annotate a task and be a member of a team with runs on it, on
    tasks that do not allow it (``Task.annotators_may_compete`` off); the one rule of the three
    places that enforce it. What is given is taken as about to hold:

    - ``task`` and ``team`` (a run submitted): ``team`` has runs on ``task``; its members who
      annotate ``task`` conflict.
    - ``task`` and ``user`` (an annotator invitation accepted): ``user`` annotates ``task``;
      they conflict through each of their teams with runs on it.
    - ``team`` and ``user`` (a team joined): ``user`` is a member of ``team``; they conflict on
      each task they annotate that ``team`` has runs on.
    """
    if task is not None and team is not None:
        pairs = set() if task.annotators_may_compete else {(task.pk, team.pk)}
    else:
        runs = Run.objects.filter(task__annotators_may_compete=False)
        if task is not None:
            runs = runs.filter(task=task)
        if team is not None:
            runs = runs.filter(team=team)
        pairs = set(runs.values_list("task_id", "team_id").distinct())
    if user is not None and not getattr(user, "is_authenticated", False):
        return []
    if not pairs:
        return []
    tasks = {t.pk: t for t in Task.objects.filter(pk__in={p[0] for p in pairs})}
    teams = {t.pk: t for t in Team.objects.filter(pk__in={p[1] for p in pairs})}
    conflicts = []
    for task_id, team_id in sorted(pairs):
        people = get_user_model().objects.all()
        if user is not None:
            people = people.filter(pk=user.pk)
        if user is None or task is None:
            people = people.filter(annotated_tasks=task_id)
        if user is None or team is None:
            people = people.filter(teams=team_id)
        for person in people.distinct().order_by("username"):
            conflicts.append(AnnotatorConflict(tasks[task_id], teams[team_id], person))
    return conflicts


def verified_email_domains(user) -> set[str]:
    """The domains of ``user``'s verified email addresses (a task's domain policy reads them)."""
    addresses = EmailAddress.objects.filter(user=user, verified=True)
    return {email.rsplit("@", 1)[-1].lower() for email in addresses.values_list("email", flat=True)}


def team_runs(team: Team) -> QuerySet[Run]:
    """Every run of the team, on every task, newest first (for its members)."""
    return Run.objects.filter(team=team).select_related("task", "submitted_by").order_by("-id")


def runs_of_team(*, task: Task, team: Team) -> QuerySet[Run]:
    return Run.objects.filter(task=task, team=team).select_related("team").order_by("-id")


def runs_visible_to(*, task: Task, user) -> QuerySet[Run]:
    """All runs of the task for its organizers; otherwise the runs of the user's teams, as
    stored (what they may be shown of each: :func:`runs_seen_by`)."""
    runs = Run.objects.filter(task=task).select_related("team").order_by("-id")
    if is_organizer(task=task, user=user):
        return runs
    return runs.filter(team__in=teams_of(user))


def run_for(*, run_id: int, user) -> Run | None:
    """The run as ``user`` may see it (:func:`runs_seen_by`), with its ``visible_events``, if
    they are a member of its team or an organizer of its task; else ``None``."""
    run = Run.objects.select_related("task", "team").filter(pk=run_id).first()
    if run is None or not getattr(user, "is_authenticated", False):
        return None
    organizer = is_organizer(task=run.task, user=user)
    if not (organizer or run.team.members.filter(pk=user.pk).exists()):
        return None
    (seen,) = _as_seen_by([run], task=run.task, organizer=organizer, with_events=True)
    return seen


# -- what a viewer learns of a run's progress --------------------------------------------------
# States a run reaches before the engine reads any label, or in which it leaves the pipeline:
# what they say never rests on labels, so participants see them even while the board is held.
LABEL_FREE_STATES = frozenset(
    {
        Run.State.RECEIVED,
        Run.State.VALIDATING,
        Run.State.REJECTED,
        Run.State.QUEUED,
        Run.State.FAILED,
    }
)


def runs_seen_by(
    *, task: Task, user, states=(), team: str | None = None
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


def _as_seen_by(runs, *, task: Task, organizer: bool, with_events: bool = False) -> list[Run]:
    runs = [copy.copy(run) for run in runs]
    as_of = not organizer and phases.board_held(task)
    events: dict[int, list[RunEvent]] = defaultdict(list)
    if as_of or with_events:
        for event in RunEvent.objects.filter(run__in=[r.pk for r in runs]).order_by("id"):
            events[event.run_id].append(event)
    snapshot = latest_published_snapshot(task) if as_of else None
    rows = {
        row.get("run"): row for row in (snapshot.rows if snapshot else []) if isinstance(row, dict)
    }
    for run in runs:
        shown = events[run.pk]
        if not organizer:
            run.n_new_items = None
        if as_of:
            shown = _as_of_snapshot(run, shown, snapshot, rows.get(run.pk, {}))
        if with_events:
            run.visible_events = shown
    return runs


def _as_of_snapshot(
    run: Run, events: list[RunEvent], snapshot: LeaderboardSnapshot | None, row: dict
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


# -- snapshots and scores -------------------------------------------------------------------------
def published_snapshots(task: Task) -> QuerySet[LeaderboardSnapshot]:
    """The task's published snapshots: what anyone who may see the task may see."""
    return LeaderboardSnapshot.objects.filter(task=task, published=True)


def latest_published_snapshot(task: Task) -> LeaderboardSnapshot | None:
    """What the public board shows: the task's latest published snapshot (``None`` if none)."""
    return published_snapshots(task).select_related("task").order_by("-version").first()


def snapshots_visible_to(*, task: Task, user) -> QuerySet[LeaderboardSnapshot]:
    """Published snapshots, newest first; the task's organizers also see held ones."""
    snapshots = (
        LeaderboardSnapshot.objects.filter(task=task)
        if is_organizer(task=task, user=user)
        else published_snapshots(task)
    )
    return snapshots.select_related("task").order_by("-version")


def snapshot_for(*, task: Task, version: int, user) -> LeaderboardSnapshot | None:
    """Snapshot ``version`` of the task if ``user`` may see it (held ones: organizers only)."""
    return snapshots_visible_to(task=task, user=user).filter(version=version).first()


def run_estimates_visible_to(*, run: Run, user) -> QuerySet[Estimate]:
    """The run's estimates across snapshots, oldest first: published ones, held ones too for
    the task's organizers. The caller has already checked that ``user`` may see the run."""
    visible = snapshots_visible_to(task=run.task, user=user)
    return (
        Estimate.objects.filter(run=run, snapshot__in=visible)
        .select_related("snapshot")
        .order_by("snapshot__version", "metric")
    )


def run_curve_visible_to(
    *, run: Run, user, snapshot: LeaderboardSnapshot | None = None
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


def board_order(rows: Iterable[dict], metric: str, *, descending: bool = True) -> list[dict]:
    """Snapshot rows by ``metric``'s value (highest first, or lowest), rows without one last,
    ties by run name then run id: the one board order of the pages and the API."""

    def key(row: dict):
        cell = row.get(metric)
        value = cell.get("value") if isinstance(cell, dict) else None
        signed = 0.0 if value is None else (-value if descending else value)
        return (value is None, signed, str(row.get("name", "")), row.get("run") or 0)

    return sorted(rows, key=key)


# -- quotas, spend, people ---------------------------------------------------------------------
def refunded_runs(*, task: Task, team: Team) -> QuerySet[Run]:
    """The team's runs on the task whose quota slot was given back (failed for platform reasons)."""
    return Run.objects.filter(task=task, team=team, quota_refunded=True)


def quotas_for_user(*, task: Task, user) -> list[tuple[Team, Quota, int]]:
    """For each of the user's teams: its quota on the task and how many runs were refunded."""
    return [
        (team, quota_for(task=task, team=team), refunded_runs(task=task, team=team).count())
        for team in teams_of(user)
    ]


@dataclass(frozen=True)
class LabelSpend:
    """A task's budget (``None``: none), judgments asked of annotators, judgments in, what
    remains.

    The budget counts judgments, gold answers included (what the planner charges): every item
    drawn asks its first judgments, every further look one more. ``remaining`` is the budget
    less ``requested``; ``verified <= requested``.
    """

    budget: int | None
    verified: int
    remaining: int | None
    requested: int = 0


def label_spend(task: Task) -> LabelSpend:
    """Judgments spent on the task: asked and in on verification requests, plus gold answers
    (reached through reverse relations so this layer imports nothing above it)."""
    requests = Item.objects.filter(task=task, verification_request__isnull=False).aggregate(
        asked=Sum("verification_request__judgments_required"),
        answered=Sum("verification_request__judgments_counted"),
    )
    gold = Task.objects.filter(pk=task.pk).aggregate(
        answered=Count(
            "gold_items__answers",
            filter=Q(
                gold_items__answers__correct__isnull=False, gold_items__answers__withdrawn_at=None
            ),
        )
    )
    verified = (requests["answered"] or 0) + gold["answered"]
    requested = (requests["asked"] or 0) + gold["answered"]
    budget = task.label_budget
    remaining = None if budget is None else max(0, budget - requested)
    return LabelSpend(budget=budget, verified=verified, remaining=remaining, requested=requested)


@dataclass(frozen=True)
class ReferenceSampleStatus:
    """What the organizers see of a reference sample built in the product: the candidates
    uploaded (documents, items) and the latest draw (``None`` before the first), whose counts
    are as the latest estimation resolved them."""

    documents: int
    candidates: int
    sample: ReferenceSample | None


def reference_sample_status(task: Task) -> ReferenceSampleStatus:
    candidates = ReferenceCandidate.objects.filter(task=task).aggregate(
        items=Count("pk"), documents=Count("document", distinct=True)
    )
    return ReferenceSampleStatus(
        documents=candidates["documents"],
        candidates=candidates["items"],
        sample=ReferenceSample.objects.filter(task=task).order_by("-created_at", "-pk").first(),
    )


def user_roles(user) -> dict[str, QuerySet]:
    """What a signed-in user is: their teams, the tasks they organize and annotate."""
    return {
        "teams": teams_of(user),
        "organized": organized_tasks(user).order_by("slug"),
        "annotated": annotated_tasks(user).order_by("slug"),
    }


def may_edit_run(*, run: Run, user) -> bool:
    """Whether ``user`` may change the run's public details: its team's members (and
    superusers)."""
    if not getattr(user, "is_authenticated", False):
        return False
    return user.is_superuser or run.team.members.filter(pk=user.pk).exists()


def api_token_of(user) -> ApiToken | None:
    """The user's API token (its digest and creation time; the key itself is not stored)."""
    return ApiToken.objects.filter(user=user).first()


def api_token_for_key(key: str) -> ApiToken | None:
    """The token whose key is ``key`` (looked up by the key's digest), with its user."""
    return ApiToken.objects.select_related("user").filter(digest=ApiToken.digest_of(key)).first()
