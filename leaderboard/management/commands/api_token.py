"""`manage.py api_token USER`: make (or replace) a user's API token and print its key once."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from leaderboard.management.commands.create_task import users_named
from leaderboard.services.tokens import rotate_token


class Command(BaseCommand):
    help = (
        "Make a user's API token, replacing the one they had (which stops working), and "
        "print its key: it is shown this once, only its digest is stored."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")

    def handle(self, *args, username: str, **options):
        (user,) = users_named([username], "username")
        self.stdout.write(rotate_token(user=user).key)
