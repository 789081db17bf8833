"""Failed sign-ins and API throttles are counted once for all web processes, not per process.

A second Python process (as a second gunicorn worker would be) signs in wrongly and calls the API
on the same database; this process then finds those attempts counted. With per-process counters
(Django's default memory cache) it would see none of them and allow more.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.throttling import SimpleRateThrottle

from live_services import REPO_ROOT, worker_database_url

PASSWORD = "right-password-42"
LIMIT = 3
ANON_RATE = "6/minute"
OTHER_WORKER = """
import json
import django
django.setup()
from django.test import Client

client = Client(HTTP_HOST="localhost")
statuses = [
    client.post("/accounts/login/", {"login": "victim", "password": "guess-1"}).status_code,
    client.post("/api/token/", json.dumps({"username": "victim", "password": "guess-2"}),
                content_type="application/json").status_code,
    client.get("/api/tasks/").status_code,
    client.get("/api/tasks/").status_code,
]
print(json.dumps(statuses))
"""


def other_worker(extra_env: dict[str, str]) -> list[int]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": worker_database_url(),
        "PYTHONPATH": str(REPO_ROOT),
        "LOGIN_FAILURE_LIMIT": str(LIMIT),
        "API_THROTTLE_ANON": ANON_RATE,
        **extra_env,
    }
    env.pop("REDIS_URL", None)
    env.update(extra_env)
    done = subprocess.run(
        [sys.executable, "-c", OTHER_WORKER],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(params=["database", pytest.param("redis", marks=pytest.mark.integration)])
def throttle_backend(request, settings, transactional_db):
    """Where both processes count: the database table (no REDIS_URL) or Redis."""
    if request.param == "database":
        return {}
    from config.settings import throttle_cache_config_from_env

    redis_server = request.getfixturevalue("redis_server")
    redis_server.start()
    redis_server.flushall()
    settings.CACHES = {
        **settings.CACHES,
        "throttle": throttle_cache_config_from_env({"REDIS_URL": redis_server.url}),
    }
    return {"REDIS_URL": redis_server.url}


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_another_process_failures_and_requests_count_here(throttle_backend, settings, monkeypatch):
    settings.LOGIN_FAILURE_LIMIT = LIMIT
    monkeypatch.setattr(
        SimpleRateThrottle,
        "THROTTLE_RATES",
        {**SimpleRateThrottle.THROTTLE_RATES, "anon": ANON_RATE},
    )
    get_user_model().objects.create_user("victim", password=PASSWORD)

    # Two failed sign-ins (one by the page, one by the token endpoint) and two API reads there.
    assert other_worker(throttle_backend) == [200, 401, 200, 200]

    # Here: one more failure reaches the limit; then even the right password is refused.
    client = Client()
    assert (
        client.post("/accounts/login/", {"login": "victim", "password": "guess-3"}).status_code
        == 200
    )
    refused = client.post("/accounts/login/", {"login": "victim", "password": PASSWORD})
    assert refused.status_code == 429
    token = client.post(
        "/api/token/", {"username": "victim", "password": PASSWORD}, content_type="application/json"
    )
    assert token.status_code == 429 and token.json()["error"]["code"] == "throttled"
    # The anonymous API budget (6 a minute): 3 calls there, 1 here so far.
    assert [client.get("/api/tasks/").status_code for _ in range(3)] == [200, 200, 429]
