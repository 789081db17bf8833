"""`manage.py api_token USER`: make (or replace) a user's API token and print its key once."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from leaderboard.selectors import UnverifiedEmail
from leaderboard.services.tokens import rotate_token
from site_platform.commands import users_named


class Command(BaseCommand):
    help = (
        "Make a user's API token, replacing the one they had (which stops working), and "
        "print its key: it is shown this once, only its digest is stored."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")

    def handle(self, *args, username: str, **options):
        (user,) = users_named([username], "username")
        try:
            token = rotate_token(user=user)
        except UnverifiedEmail as refused:  # the API would refuse the key anyway
            raise CommandError(f"{username}: {refused.message}") from None
        self.stdout.write(token.key)
