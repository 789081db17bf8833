"""Probe tasks that only the test workers load (``celery worker --include=worker_tasks``, with
this directory on ``PYTHONPATH``; see ``celery_worker`` in tests/conftest.py).

The test process sends them by name (``current_app.send_task(RECORD_USER_COUNT, ...)``) and never
imports this module, so nothing here can run in the test process by accident.
"""

from __future__ import annotations

import os

from celery import shared_task
from django.contrib.auth.models import Group, User
from django.db.backends.signals import connection_created

RECORD_USER_COUNT = "tests_support.record_user_count"


def _sqlite_without_fsync(sender, connection, **kwargs) -> None:
    # As in the test process (tests/conftest.py): the test database is disposable.
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA synchronous = OFF")


connection_created.connect(_sqlite_without_fsync, dispatch_uid="tests-sqlite-without-fsync")


@shared_task(name=RECORD_USER_COUNT)
def record_user_count(tag: str) -> None:
    """Write what this process sees into the shared database: a ``Group`` named
    ``"<tag> users=<number of User rows> pid=<this process id>"``."""
    Group.objects.create(name=f"{tag} users={User.objects.count()} pid={os.getpid()}")
