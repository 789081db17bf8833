"""What mail a person gets: the kinds of notification they have on."""

from __future__ import annotations

from ..models import MailKind, MailOptOut


def mail_preferences(user) -> dict[str, bool]:
    """Whether ``user`` gets each kind of notification (on unless they turned it off), in the
    order of :class:`~leaderboard.models.MailKind`."""
    off = set(MailOptOut.objects.filter(user=user).values_list("kind", flat=True))
    return {kind: kind not in off for kind in MailKind.values}
