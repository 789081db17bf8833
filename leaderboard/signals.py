"""Receivers: a password change revokes the user's API token; an address saved in any way
(the admin, ``createsuperuser``, a script) is stored in its normalised form, as the account
forms already give it (``email_domains.normalize_email``); a membership that ends is recorded
(``services.teams.record_departures``) whichever way it ends, the admin's member list included.

Django has no "password changed" signal; ``set_password`` keeps the new raw password on the user
(``_password``) until the next save, which is how Django itself calls ``password_changed``. So this
covers every path that sets a password and saves: the admin's password form, the password change
and reset views, ``changepassword``, scripts. The hash upgrade on sign-in clears ``_password``
before saving and does not count.
"""

from __future__ import annotations

import contextlib

from .email_domains import normalize_email
from .services.teams import record_departures
from .services.tokens import revoke_token


def revoke_token_on_password_change(sender, instance, created, **kwargs) -> None:
    if not created and getattr(instance, "_password", None) is not None:
        revoke_token(user=instance)


def normalize_saved_email(sender, instance, **kwargs) -> None:
    """Store ``instance.email`` (a user's, or allauth's ``EmailAddress``) normalised; one IDNA
    refuses is left as it is, for the forms' validators to have refused."""
    if instance.email:
        with contextlib.suppress(ValueError):
            instance.email = normalize_email(instance.email)


def record_ended_memberships(sender, instance, action, reverse, pk_set, **kwargs) -> None:
    """``Team.members`` is about to lose people (``remove``, which ``set`` uses, or ``clear``):
    read who is really a member before the rows go (``remove`` names anyone it was given), in
    the transaction Django runs the change in."""
    if action not in ("pre_remove", "pre_clear"):
        return
    rows = sender.objects.filter(**{"user_id" if reverse else "team_id": instance.pk})
    if action == "pre_remove":
        rows = rows.filter(**{"team_id__in" if reverse else "user_id__in": pk_set or ()})
    record_departures(pairs=rows.values_list("team_id", "user_id"))
