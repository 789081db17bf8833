from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "leaderboard"
    verbose_name = "Leaderboard"

    def ready(self) -> None:
        _count_allauth_limits_with_the_brakes()
        from allauth.account.models import EmailAddress
        from django.contrib.auth import get_user_model
        from django.db.models.signals import m2m_changed, post_save, pre_save

        from .models import Team
        from .signals import (
            normalize_saved_email,
            record_ended_memberships,
            revoke_token_on_password_change,
        )

        post_save.connect(
            revoke_token_on_password_change,
            sender=get_user_model(),
            dispatch_uid="leaderboard.revoke_token_on_password_change",
        )
        for model in (get_user_model(), EmailAddress):
            pre_save.connect(
                normalize_saved_email,
                sender=model,
                dispatch_uid=f"leaderboard.normalize_saved_email.{model._meta.label}",
            )
        m2m_changed.connect(
            record_ended_memberships,
            sender=Team.members.through,
            dispatch_uid="leaderboard.record_ended_memberships",
        )


def _count_allauth_limits_with_the_brakes() -> None:
    """allauth counts its rate limits (``ACCOUNT_RATE_LIMITS``) in the default cache, which is
    per process without Redis (each web process would allow the limit again): count them in
    ``CACHES["throttle"]``, shared by every process, as the site's own brakes are."""
    from allauth.core.internal import ratelimit
    from django.core.cache import caches
    from django.utils.connection import ConnectionProxy

    ratelimit.cache = ConnectionProxy(caches, "throttle")
