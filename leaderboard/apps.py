from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "leaderboard"
    verbose_name = "Leaderboard"

    def ready(self) -> None:
        from django.contrib.auth import get_user_model
        from django.db.models.signals import post_save

        from .signals import revoke_token_on_password_change

        post_save.connect(
            revoke_token_on_password_change,
            sender=get_user_model(),
            dispatch_uid="leaderboard.revoke_token_on_password_change",
        )
