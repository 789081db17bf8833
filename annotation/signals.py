"""The queue's answer to changes made below it: an annotator removed from a task (by the
organize pages, the API, the admin or a shell alike) loses their leases on it at once, and a
person who joins a team loses their live leases on its items, whichever way they join (an
invitation, the admin's member list)."""

from __future__ import annotations

from typing import Any

from django.db.models import Exists, OuterRef

from leaderboard.models import Task

from .models import Assignment
from .services.conflicts import revoke_conflicting_leases
from .services.judgments import revoke_leases

Membership = Task.annotators.through


def revoke_leases_on_joining(sender, instance, action, reverse, pk_set, **kwargs) -> None:
    if action != "post_add" or not pk_set:
        return
    pairs = [(other, instance.pk) if reverse else (instance.pk, other) for other in pk_set]
    revoke_conflicting_leases(memberships=pairs)


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
