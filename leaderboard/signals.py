"""Receivers: a password change revokes the user's API token; a membership that ends is
recorded (``services.teams.record_departures``) whichever way it ends, the admin's member list
included.

Django has no "password changed" signal; ``set_password`` keeps the new raw password on the user
(``_password``) until the next save, which is how Django itself calls ``password_changed``. So this
covers every path that sets a password and saves: the admin's password form, the password change
and reset views, ``changepassword``, scripts. The hash upgrade on sign-in clears ``_password``
before saving and does not count.
"""

from __future__ import annotations

from .services.teams import record_departures
from .services.tokens import revoke_token


def revoke_token_on_password_change(sender, instance, created, **kwargs) -> None:
    if not created and getattr(instance, "_password", None) is not None:
        revoke_token(user=instance)


def record_ended_memberships(sender, instance, action, reverse, pk_set, **kwargs) -> None:
    """``Team.members`` lost people: ``remove`` (and ``set``) name them; ``clear`` does not, so
    they are read before it."""
    if action == "post_remove":
        ids = set(pk_set or ())
    elif action == "pre_clear":
        ids = set((instance.teams if reverse else instance.members).values_list("pk", flat=True))
    else:
        return
    pairs = [(instance.pk, other) for other in ids]
    record_departures(pairs=[(b, a) for a, b in pairs] if reverse else pairs)
