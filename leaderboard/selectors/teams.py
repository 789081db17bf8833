"""Teams and a task's people: a user's team by id, team approval per task, the task's
annotators, organizers and open invitations, the rule on annotators who compete
(:func:`annotator_conflicts`), the teams whose items a person never verifies
(:func:`conflicted_teams`), and a team's runs."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.db.models import Q, QuerySet
from django.http import Http404
from django.utils import timezone

from ..email_domains import domain_of
from ..models import (
    Run,
    Task,
    TaskInvitation,
    Team,
    TeamApproval,
    TeamDeparture,
    TeamInvitation,
)
from .roles import signed_in, teams_of

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from .roles import AnyUser


class TeamNotFound(Http404):
    """No team ``team_id`` that the user is a member of: unknown and others' alike (404)."""

    def __init__(self, team_id: int):
        super().__init__(f"you are in no team {team_id}")


def team_for(*, team_id: int, user: AnyUser) -> Team:
    """The team ``team_id`` if ``user`` is a member of it: only members see a team's page,
    members, invitations and runs (an organizer sees the runs of their tasks' boards)."""
    team = teams_of(user).filter(pk=team_id).first()
    if team is None:
        raise TeamNotFound(team_id)
    return team


def open_team_invitations(team: Team, now: datetime | None = None) -> QuerySet[TeamInvitation]:
    """The team's invitation links that still work (neither used, revoked nor expired), newest
    first: listed to its members, who may revoke them."""
    return (
        TeamInvitation.objects.filter(
            team=team, used_at=None, revoked_at=None, expires_at__gt=now or timezone.now()
        )
        .select_related("created_by")
        .order_by("-created_at", "-id")
    )


def team_invitation_for(*, team: Team, invitation_id: int) -> TeamInvitation:
    """Invitation ``invitation_id`` of ``team`` (404 if it has none such)."""
    invitation = TeamInvitation.objects.filter(team=team, pk=invitation_id).first()
    if invitation is None:
        raise Http404(f"team {team.name!r} has no invitation {invitation_id}")
    return invitation


def team_member_for(*, team: Team, user_id: int) -> User:
    """The member of ``team`` whose id is ``user_id`` (404 if none)."""
    member = team.members.filter(pk=user_id).first()
    if member is None:
        raise Http404(f"user {user_id} is not a member of team {team.name!r}")
    return member


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


def task_annotators(task: Task) -> QuerySet[User]:
    return task.annotators.order_by("username")


def task_organizers(task: Task) -> QuerySet[User]:
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


def task_member_for(*, task: Task, role: Literal["annotator", "organizer"], user_id: int) -> User:
    """The ``role`` (annotator, organizer) of ``task`` whose id is ``user_id`` (404 if none)."""
    people = task.annotators if role == "annotator" else task.organizers
    person = people.filter(pk=user_id).first()
    if person is None:
        raise Http404(f"user {user_id} is not an {role} of task {task.slug!r}")
    return person


@dataclass(frozen=True)
class AnnotatorConflict:
    """``user`` annotates ``task`` and is a member of ``team``, which has runs on it."""

    task: Task
    team: Team
    user: Any  # the user model


def annotator_conflicts(
    *, task: Task | None = None, team: Team | None = None, user: User | None = None
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
    if user is not None and not signed_in(user):
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


def _departed_during(task: Task) -> QuerySet[TeamDeparture]:
    # A task's items can only be predicted once it exists: a membership that ended before the
    # task was created gave no stake in its runs.
    return TeamDeparture.objects.filter(left_at__gte=task.created_at)


def conflicted_teams(*, task: Task, user: User) -> QuerySet[Team]:
    """The teams whose items ``user`` never verifies on ``task``: those they are a member of,
    and those they were a member of at any time since the task was created. Conflicts follow
    membership history, so leaving (or being removed from) a team does not open its items."""
    past = _departed_during(task).filter(user_id=user.pk).values("team_id")
    return Team.objects.filter(Q(members__pk=user.pk) | Q(pk__in=past))


def conflicted_memberships(*, task: Task, user_ids: Iterable[int]) -> set[tuple[int, int]]:
    """``(team id, user id)`` for each of ``user_ids`` and each team of theirs in
    :func:`conflicted_teams` (many annotators at once)."""
    user_ids = list(user_ids)
    current = Team.members.through.objects.filter(user_id__in=user_ids)
    past = _departed_during(task).filter(user_id__in=user_ids)
    return {
        *current.values_list("team_id", "user_id"),
        *past.values_list("team_id", "user_id"),
    }


def verified_email_domains(user: AnyUser) -> set[str]:
    """The domains of ``user``'s verified email addresses (a task's domain policy reads them),
    normalised as an address is where it enters (a row stored before that rule too)."""
    addresses = EmailAddress.objects.filter(user=user, verified=True)
    domains = {domain_of(email) for email in addresses.values_list("email", flat=True)}
    return domains - {""}


def team_runs(team: Team) -> QuerySet[Run]:
    """Every run of the team, on every task, newest first (for its members)."""
    return Run.objects.filter(team=team).select_related("task", "submitted_by").order_by("-id")


def runs_of_team(*, task: Task, team: Team) -> QuerySet[Run]:
    return Run.objects.filter(task=task, team=team).select_related("team").order_by("-id")
