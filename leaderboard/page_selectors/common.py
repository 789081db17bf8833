"""Reads shared by every page: which tasks a user may see, organizer and annotator checks."""

from __future__ import annotations

from django.db.models import Count, QuerySet

from .. import selectors
from ..models import Task, Team


def task_list(user) -> QuerySet[Task]:
    """Tasks the user may see, with their number of runs (``n_runs``)."""
    return (selectors.visible_tasks(user).annotate(n_runs=Count("runs", distinct=True))
            .order_by("-created_at"))


def visible_task(user, slug: str) -> Task | None:
    return selectors.visible_tasks(user).filter(slug=slug).first()


def is_organizer(*, task: Task, user) -> bool:
    return selectors.is_organizer(task=task, user=user)


def teams_of(user) -> list[Team]:
    """The teams a participant can submit for."""
    return list(selectors.teams_of(user))


def tasks_annotated_by(user) -> QuerySet[Task]:
    """Tasks the user annotates, in any state (a closed task may still have runs to verify)."""
    if not user.is_authenticated:
        return Task.objects.none()
    return Task.objects.filter(annotators=user).order_by("title")


def annotatable_task(*, slug: str) -> Task | None:
    return Task.objects.filter(slug=slug).first()


def is_annotator(*, task: Task, user) -> bool:
    return user.is_authenticated and task.annotators.filter(pk=user.pk).exists()
