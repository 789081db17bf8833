"""The integration plumbing itself: a real Redis broker, a real Celery worker process, and a test
database that both this process and the worker use (SQLite file, or PostgreSQL in the second pass
of ``make test``)."""

from __future__ import annotations

import os

import pytest
from celery import current_app
from django.contrib.auth.models import Group, User

from config.celery import app

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

# Defined in tests/integration/support/worker_tasks.py, which only the worker imports.
RECORD_USER_COUNT = "tests_support.record_user_count"


def _recorded(tag: str) -> str | None:
    group = Group.objects.filter(name__startswith=f"{tag} ").first()
    return group.name if group else None


def test_tasks_are_published_to_the_real_redis_not_run_eagerly(celery_worker, redis_server):
    assert current_app._get_current_object() is app
    assert not app.conf.task_always_eager
    assert app.conf.broker_url == redis_server.url
    assert app.connection_for_write().transport_cls == "redis"
    assert app.control.ping(destination=[celery_worker.nodename], timeout=5) == [
        {celery_worker.nodename: {"ok": "pong"}}
    ]


def test_worker_process_sees_committed_rows_and_its_writes_are_visible(celery_worker, wait_for):
    for name in ("ada", "grace", "edsger"):
        User.objects.create(username=name)

    current_app.send_task(RECORD_USER_COUNT, args=["smoke"])

    recorded = wait_for(lambda: _recorded("smoke"), timeout=30, message="the worker's Group row")
    assert recorded == f"smoke users=3 pid={celery_worker.pid}"
    assert celery_worker.pid != os.getpid()


def test_messages_wait_in_redis_until_a_worker_consumes_them(celery_worker, redis_server, wait_for):
    celery_worker.stop()
    assert not celery_worker.running

    current_app.send_task(RECORD_USER_COUNT, args=["queued"])

    # The message sits in the Redis list of the default queue: nobody executed it in-process.
    assert redis_server.client().llen("celery") == 1
    assert _recorded("queued") is None

    celery_worker.start()
    assert wait_for(lambda: _recorded("queued"), timeout=30, message="the queued task's row")
    wait_for(lambda: redis_server.client().llen("celery") == 0, timeout=10)


def test_a_killed_worker_can_be_started_again(celery_worker, wait_for):
    first_pid = celery_worker.pid
    celery_worker.kill()
    assert not celery_worker.running

    celery_worker.start()
    assert celery_worker.pid != first_pid

    current_app.send_task(RECORD_USER_COUNT, args=["restarted"])
    recorded = wait_for(lambda: _recorded("restarted"), timeout=30)
    assert recorded.endswith(f"pid={celery_worker.pid}")


def test_redis_server_restarts_on_the_same_url(redis_server):
    url = redis_server.url
    redis_server.client().set("k", "v")

    redis_server.restart()

    assert redis_server.url == url
    assert redis_server.client().ping()
    assert redis_server.client().get("k") is None  # no persistence


@pytest.mark.postgres
def test_postgres_tests_run_on_a_postgresql_test_database():
    from django.db import connection

    assert connection.vendor == "postgresql"
    assert connection.settings_dict["NAME"].startswith("test_")
