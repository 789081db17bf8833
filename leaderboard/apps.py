from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "leaderboard"
    verbose_name = "Leaderboard"

    def ready(self) -> None:
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
