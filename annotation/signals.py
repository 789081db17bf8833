"""The queue's answer to changes made below it: an annotator removed from a task (by the
organize pages, the API, the admin or a shell alike) loses their leases on it at once, and a
person who joins a team loses their live leases on its items, whichever way they join (an
invitation, the admin's member list). A team that becomes able to conflict on a task (an
annotator joins it, or one of its members joins the task as an annotator) gets its conflict
rows on the task's requests first (``services.conflicts.register_team_conflicts``)."""

from __future__ import annotations

from typing import Any

from django.db.models import Exists, OuterRef

from leaderboard.models import Task
from leaderboard.selectors import conflicted_memberships

from .models import Assignment
from .services.conflicts import register_team_conflicts, revoke_conflicting_leases
from .services.judgments import revoke_leases

Membership = Task.annotators.through


def revoke_leases_on_joining(sender, instance, action, reverse, pk_set, **kwargs) -> None:
    """``m2m_changed`` of ``Team.members``: the team's conflicts on every task its new member
    annotates are recorded, then the member's live leases on its items revoked."""
    if action != "post_add" or not pk_set:
        return
    pairs = [(other, instance.pk) if reverse else (instance.pk, other) for other in pk_set]
    for team_id, user_id in pairs:
        for task in Task.objects.filter(annotators=user_id, runs__team=team_id).distinct():
            register_team_conflicts(task=task, team_ids=[team_id])
    revoke_conflicting_leases(memberships=pairs)


def record_conflicts_of_new_annotators(
    sender: type, instance: Any, action: str, reverse: bool, pk_set: set[int] | None, **kwargs: Any
) -> None:
    """``m2m_changed`` of ``Task.annotators``: the teams a new annotator is (or was, since the
    task was created) a member of can conflict on the task from now on: their rows are
    recorded before the annotator can claim (in the same transaction as the membership)."""
    if action != "post_add" or not pk_set:
        return
    pairs = [(other, instance.pk) if reverse else (instance.pk, other) for other in pk_set]
    by_task: dict[int, set[int]] = {}
    for task_id, user_id in pairs:
        by_task.setdefault(task_id, set()).add(user_id)
    for task in Task.objects.filter(pk__in=list(by_task)):
        teams = {team for team, _ in conflicted_memberships(task=task, user_ids=by_task[task.pk])}
        if teams:
            register_team_conflicts(task=task, team_ids=teams)


def revoke_leases_of_removed_annotators(
    sender: type, instance: Any, action: str, reverse: bool, pk_set: set[int] | None, **kwargs: Any
) -> None:
    """``m2m_changed`` of ``Task.annotators``: after a removal (or a clear), revoke the leases
    whose holder no longer annotates their task, as a pause does: the items go back to the queue
    at once and an answer on such a lease is kept as late, never counted. Runs in the removal's
    transaction, after its membership row is deleted: a claim or answer in flight holds that row
    locked (``lock_annotator``), so it finishes first and its lease is revoked here, or it
    starts after and finds no membership."""
    if action not in ("post_remove", "post_clear"):
        return
    leases = Assignment.objects.filter(**{"annotator" if reverse else "task": instance})
    if pk_set is not None:
        leases = leases.filter(**{"task__in" if reverse else "annotator__in": pk_set})
    revoke_leases(
        leases.filter(
            ~Exists(
                Membership.objects.filter(
                    task_id=OuterRef("task_id"), user_id=OuterRef("annotator_id")
                )
            )
        )
    )
