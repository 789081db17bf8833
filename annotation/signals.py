"""Receivers: a person who joins a team loses their live leases on its items, whichever way they
join (an invitation, the admin's member list)."""

from __future__ import annotations

from .services.conflicts import revoke_conflicting_leases


def revoke_leases_on_joining(sender, instance, action, reverse, pk_set, **kwargs) -> None:
    if action != "post_add" or not pk_set:
        return
    pairs = [(other, instance.pk) if reverse else (instance.pk, other) for other in pk_set]
    revoke_conflicting_leases(memberships=pairs)
