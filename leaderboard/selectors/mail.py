"""What mail a person gets: the kinds of notification they have on."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..models import MailKind, MailOptOut

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def mail_preferences(user: User) -> dict[str, bool]:
    """Whether ``user`` gets each kind of notification (on unless they turned it off), in the
    order of :class:`~leaderboard.models.MailKind`."""
    off = set(MailOptOut.objects.filter(user=user).values_list("kind", flat=True))
    return {kind: kind not in off for kind in MailKind.values}
