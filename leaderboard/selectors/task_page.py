"""Reads of a task's page: the version of its terms, which teams accepted it, and its data
files (who may download them is :func:`leaderboard.selectors.visibility.data_access_for`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import QuerySet
from django.http import Http404

from ..models import OrganizerUpload, Task, TaskFile, Team, TermsAcceptance
from ..page_text import text_digest


def terms_digest(task: Task) -> str:
    """The version of the task's terms (the digest of their text; ``""`` when it has none)."""
    return text_digest(task.terms)


def terms_acceptance(*, task: Task, team: Team) -> TermsAcceptance | None:
    """``team``'s acceptance of the task's current terms, if it accepted them."""
    digest = terms_digest(task)
    if not digest:
        return None
    return TermsAcceptance.objects.filter(task=task, team=team, digest=digest).first()


def terms_accepted(*, task: Task, team: Team) -> bool:
    """Whether ``team`` may submit as far as the terms go: the task has none, or the team
    accepted their current version."""
    return not terms_digest(task) or terms_acceptance(task=task, team=team) is not None


@dataclass(frozen=True)
class TeamTerms:
    """Where one team stands on the task's current terms: ``acceptance`` (or ``None``), and
    whether it accepted an earlier version (``earlier``) that the organizers changed since."""

    team: Team
    acceptance: TermsAcceptance | None
    earlier: bool


def terms_of_teams(*, task: Task, teams: Iterable[Team]) -> list[TeamTerms]:
    """Each of ``teams`` with its acceptance of the task's current terms (none if the task has
    no terms)."""
    teams = list(teams)
    digest = terms_digest(task)
    if not digest or not teams:
        return []
    accepted: dict[int, TermsAcceptance] = {}
    earlier: set[int] = set()
    for acceptance in TermsAcceptance.objects.filter(task=task, team__in=teams).select_related(
        "accepted_by"
    ):
        if acceptance.digest == digest:
            accepted[acceptance.team_id] = acceptance
        else:
            earlier.add(acceptance.team_id)
    return [
        TeamTerms(team, accepted.get(team.pk), team.pk in earlier and team.pk not in accepted)
        for team in teams
    ]


def terms_acceptances(task: Task) -> QuerySet[TermsAcceptance]:
    """Every acceptance of every version of the task's terms, newest first (its organizers)."""
    return TermsAcceptance.objects.filter(task=task).select_related("team", "accepted_by")


def task_files(task: Task) -> QuerySet[TaskFile]:
    """The task's data files in the order the page lists them (by kind, then title)."""
    return TaskFile.objects.filter(task=task)


def task_file_for(*, task: Task, file_id: int) -> TaskFile:
    """The task's data file ``file_id`` (404 if the task has no such file)."""
    task_file = task_files(task).filter(pk=file_id).first()
    if task_file is None:
        raise Http404(f"task {task.slug!r} has no file {file_id}")
    return task_file


RECENT_UPLOADS = 10


def recent_uploads(task: Task, limit: int = RECENT_UPLOADS) -> list[OrganizerUpload]:
    """The task's latest organizer uploads (gold, pool, reference files), newest first: what
    the Data section and the API show of their state (for the task's organizers)."""
    return list(OrganizerUpload.objects.filter(task=task).select_related("uploaded_by")[:limit])


def organizer_upload(*, task: Task, upload_id: int) -> OrganizerUpload:
    """Upload ``upload_id`` of ``task`` (an upload of another task is not found: 404)."""
    upload = OrganizerUpload.objects.filter(task=task, pk=upload_id).first()
    if upload is None:
        raise Http404(f"task {task.slug!r} has no upload {upload_id}")
    return upload
