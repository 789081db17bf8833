"""A team accepts a task's terms (the version it read), before its first run.

Acceptance is per team, because runs and quotas are a team's: any member accepts for it, and
who did is recorded, with when and the digest and text of the terms accepted. When the
organizers change the terms (their normalised text: re-saving the same words changes nothing),
every team accepts the new version before its next run, as on Kaggle or Codabench; runs
already submitted stand. Acceptances are never deleted: each version accepted stays on record.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from django.db import IntegrityError, transaction
from django.utils import timezone

from site_platform.errors import ServiceError

from ..models import Task, Team, TermsAcceptance
from ..selectors import terms_acceptance, terms_digest

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class TermsError(ServiceError):
    """Terms that cannot be accepted: ``no_terms`` (the task has none), ``terms_changed`` (the
    text changed since the version the caller read), ``not_team_member``."""

    statuses = {"no_terms": 409, "terms_changed": 409, "not_team_member": 403}


def accept_terms(
    *, task: Task, team: Team, user: User, digest: str = "", now: datetime | None = None
) -> tuple[TermsAcceptance, bool]:
    """``user``, a member of ``team``, accepts the task's current terms for the team; with
    ``digest`` (the version they read) only if the terms are still that version. Idempotent:
    returns the acceptance and whether it was made now."""
    if not team.members.filter(pk=user.pk).exists():
        raise TermsError(f"you are not a member of team {team.name!r}", code="not_team_member")
    current = terms_digest(task)
    if not current:
        raise TermsError(f"task {task.slug!r} has no terms to accept", code="no_terms")
    if digest and digest != current:
        raise TermsError(
            f"the terms of task {task.slug!r} changed since the version you read: read them "
            f"again and accept the current version ({current[:12]})",
            code="terms_changed",
            digest=current,
        )
    existing = terms_acceptance(task=task, team=team)
    if existing is not None:
        return existing, False
    try:
        with transaction.atomic():
            acceptance = TermsAcceptance.objects.create(
                task=task,
                team=team,
                digest=current,
                terms=task.terms,
                accepted_by=user,
                accepted_at=now or timezone.now(),
            )
    except IntegrityError:  # another member accepted for the team meanwhile
        accepted = terms_acceptance(task=task, team=team)
        assert accepted is not None  # the unique constraint names this very row
        return accepted, False
    return acceptance, True
