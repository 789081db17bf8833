"""Settings come from the environment: SQLite + filesystem broker by default, else URLs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from kombu import Connection

from config import celery_app
from config.settings import (
    cache_config_from_env,
    celery_broker_from_env,
    database_config_from_env,
    demo_secret_key,
    email_config_from_env,
    env_bool,
    env_list,
    registration_from_env,
    secret_key_from_env,
)
from config.settings_test import TEST_SECRET_KEY
from evaluation.management.commands._demo_processes import DemoProcesses

# Environment variables that settings read; stripped so each subprocess sees only what a test sets.
SETTINGS_ENV = (
    "DJANGO_SECRET_KEY",
    "DJANGO_DEBUG",
    "DJANGO_ALLOWED_HOSTS",
    "DATABASE_URL",
    "REDIS_URL",
    "DJANGO_SETTINGS_MODULE",
)

PROBE = """
import json
from django.conf import settings
import django
django.setup()
from config import celery_app
print(json.dumps({
    "secret_key": settings.SECRET_KEY,
    "debug": settings.DEBUG,
    "allowed_hosts": settings.ALLOWED_HOSTS,
    "database": {k: str(v) for k, v in settings.DATABASES["default"].items()
                 if k in ("ENGINE", "NAME", "HOST", "PORT", "USER")},
    "cache_backend": settings.CACHES["default"]["BACKEND"],
    "celery_broker_url": celery_app.conf.broker_url,
    "celery_transport_options": celery_app.conf.broker_transport_options,
    "celery_main": celery_app.main,
}))
"""


def load_settings(repo_root: Path, **env: str) -> dict:
    """Load the real settings in a fresh interpreter with only ``env`` (plus the basics) set."""
    proc = run_probe(repo_root, **env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def run_probe(repo_root: Path, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in SETTINGS_ENV}
    clean.update(env, DJANGO_SETTINGS_MODULE="config.settings")
    return subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=repo_root,
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


# --- the settings as actually loaded --------------------------------------------------------------


@pytest.mark.slow
def test_defaults_are_sqlite_and_filesystem_broker(repo_root: Path) -> None:
    loaded = load_settings(repo_root, DJANGO_SECRET_KEY="only-the-key-set")
    assert loaded["database"]["ENGINE"] == "django.db.backends.sqlite3"
    assert loaded["database"]["NAME"] == str(repo_root / "var" / "db.sqlite3")
    assert loaded["celery_broker_url"] == "filesystem://"
    queue_dir = Path(loaded["celery_transport_options"]["data_folder_in"])
    assert queue_dir == repo_root / "var" / "celery" / "queue"
    assert queue_dir.is_dir(), "settings must create the broker folders"
    assert loaded["cache_backend"] == "django.core.cache.backends.locmem.LocMemCache"
    assert loaded["secret_key"] == "only-the-key-set"
    assert loaded["debug"] is False
    assert loaded["allowed_hosts"] == ["localhost", "127.0.0.1", "[::1]"]
    assert loaded["celery_main"] == "leaderboard"


@pytest.mark.slow
def test_environment_overrides_reach_django_and_celery(repo_root: Path) -> None:
    loaded = load_settings(
        repo_root,
        DJANGO_SECRET_KEY="s3cret",
        DJANGO_DEBUG="true",
        DJANGO_ALLOWED_HOSTS="board.example.org, .example.net",
        DATABASE_URL="postgres://lb:pw@db.example.org:5433/leaderboard",
        REDIS_URL="redis://cache.example.org:6379/2",
    )
    assert loaded["secret_key"] == "s3cret"
    assert loaded["debug"] is True
    assert loaded["allowed_hosts"] == ["board.example.org", ".example.net"]
    assert loaded["database"] == {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "leaderboard",
        "HOST": "db.example.org",
        "PORT": "5433",
        "USER": "lb",
    }
    assert loaded["celery_broker_url"] == "redis://cache.example.org:6379/2"
    assert loaded["cache_backend"] == "config.cache.ForgivingRedisCache"


def test_without_a_secret_key_nothing_starts_and_says_what_to_set(repo_root: Path) -> None:
    """Issue 29, N7: the public development key is gone; outside the demo no key, no start."""
    proc = run_probe(repo_root)
    assert proc.returncode != 0
    assert "ImproperlyConfigured: DJANGO_SECRET_KEY is not set" in proc.stderr
    assert "make run" in proc.stderr and "secrets.token_urlsafe" in proc.stderr
    check = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=repo_root,
        env={k: v for k, v in os.environ.items() if k not in SETTINGS_ENV},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert check.returncode != 0 and "DJANGO_SECRET_KEY is not set" in check.stderr


def test_the_demo_makes_its_own_key_once_readable_by_its_owner_only(tmp_path: Path) -> None:
    argv = ["manage.py", "demo", "--port", "8000"]
    key = secret_key_from_env({}, argv, base_dir=tmp_path)
    stored = tmp_path / "var" / "demo-secret-key"
    assert stored.read_text().strip() == key and len(key) >= 50
    assert stored.stat().st_mode & 0o777 == 0o600
    assert secret_key_from_env({}, argv, base_dir=tmp_path) == key  # kept across runs
    assert secret_key_from_env({}, ["/x/manage.py", "demo"], base_dir=tmp_path) == key
    other = tmp_path / "elsewhere" / "demo-secret-key"
    assert demo_secret_key(other) != key  # each installation its own
    other.chmod(0o644)
    demo_secret_key(other)
    assert other.stat().st_mode & 0o777 == 0o600
    # A set key wins, in the demo too; any other command without one is refused.
    assert secret_key_from_env({"DJANGO_SECRET_KEY": "set"}, argv, base_dir=tmp_path) == "set"
    for not_demo in (["manage.py", "runserver"], ["gunicorn", "demo"], ["manage.py"]):
        with pytest.raises(ImproperlyConfigured):
            secret_key_from_env({"DJANGO_SECRET_KEY": " "}, not_demo, base_dir=tmp_path)


def test_the_demo_hands_its_key_to_the_processes_it_starts(tmp_path: Path) -> None:
    processes = DemoProcesses(
        base_dir=tmp_path, host="127.0.0.1", port=8000, stdout=None, stderr=None
    )
    assert processes.env()["DJANGO_SECRET_KEY"] == settings.SECRET_KEY == TEST_SECRET_KEY


@pytest.mark.slow
def test_manage_py_check_passes_with_defaults(repo_root: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS_ENV}
    env["DJANGO_SECRET_KEY"] = "a-key-of-this-deployment"
    proc = subprocess.run(
        [sys.executable, "manage.py", "check", "--fail-level", "WARNING"],
        cwd=repo_root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_apps_and_celery_policy_in_test_settings() -> None:
    for app in ("rest_framework", "evaluation", "annotation", "leaderboard"):
        assert any(entry == app or entry.startswith(f"{app}.") for entry in settings.INSTALLED_APPS)
    assert celery_app.main == "leaderboard"
    assert celery_app.conf.task_acks_late is True
    assert celery_app.conf.worker_prefetch_multiplier == 1


# --- the helpers ----------------------------------------------------------------------------------


def test_database_default_is_sqlite_file_under_var(tmp_path: Path) -> None:
    config = database_config_from_env({}, base_dir=tmp_path)
    assert config["ENGINE"] == "django.db.backends.sqlite3"
    assert config["NAME"] == str(tmp_path / "var" / "db.sqlite3")
    assert config["OPTIONS"]["transaction_mode"] == "IMMEDIATE"


def test_database_url_parses_postgres(tmp_path: Path) -> None:
    config = database_config_from_env(
        {"DATABASE_URL": "postgresql://user:p%40ss@localhost:5432/board"}, base_dir=tmp_path
    )
    assert config["ENGINE"] == "django.db.backends.postgresql"
    assert (config["NAME"], config["USER"], config["PASSWORD"]) == ("board", "user", "p@ss")
    assert (config["HOST"], config["PORT"]) == ("localhost", 5432)
    assert config["CONN_MAX_AGE"] == 60
    assert "transaction_mode" not in config.get("OPTIONS", {})


def test_empty_database_url_means_default(tmp_path: Path) -> None:
    config = database_config_from_env({"DATABASE_URL": ""}, base_dir=tmp_path)
    assert config["ENGINE"] == "django.db.backends.sqlite3"


def test_redis_url_switches_broker_and_cache(tmp_path: Path) -> None:
    env = {"REDIS_URL": "redis://localhost:6379/0"}
    assert celery_broker_from_env(env, base_dir=tmp_path) == {
        "url": "redis://localhost:6379/0",
        "transport_options": {"visibility_timeout": 1800.0},
    }
    env["CELERY_VISIBILITY_TIMEOUT"] = "30"
    assert celery_broker_from_env(env)["transport_options"] == {"visibility_timeout": 30.0}
    assert cache_config_from_env(env) == {
        "BACKEND": "config.cache.ForgivingRedisCache",
        "LOCATION": "redis://localhost:6379/0",
        "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
    }


def test_filesystem_broker_round_trips_a_message(tmp_path: Path) -> None:
    broker = celery_broker_from_env({}, base_dir=tmp_path)
    assert broker["url"] == "filesystem://"
    options = broker["transport_options"]
    for key in ("data_folder_in", "data_folder_out", "control_folder"):
        assert Path(options[key]).is_relative_to(tmp_path / "var" / "celery")
        Path(options[key]).mkdir(parents=True, exist_ok=True)
    with Connection(broker["url"], transport_options=options) as conn:
        queue = conn.SimpleQueue("probe")
        queue.put({"run": 7})
        message = queue.get(timeout=5)
        assert message.payload == {"run": 7}
        message.ack()
        queue.close()


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1", True),
        ("TRUE", True),
        (" yes ", True),
        ("on", True),
        ("0", False),
        ("false", False),
        ("", False),
        ("off", False),
        (None, False),
    ],
)
def test_env_bool(raw: str | None, expected: bool) -> None:
    assert env_bool(raw) is expected


def test_env_bool_rejects_typos() -> None:
    with pytest.raises(ValueError, match="not a boolean"):
        env_bool("ture")


def test_env_list() -> None:
    assert env_list(None, ["a"]) == ["a"]
    assert env_list("a, b,,c ", []) == ["a", "b", "c"]
    assert env_list("", ["a"]) == []


def test_mail_is_printed_unless_an_smtp_host_is_set() -> None:
    assert email_config_from_env({})["EMAIL_BACKEND"].endswith("console.EmailBackend")
    smtp = email_config_from_env(
        {"EMAIL_HOST": "mail.example.org", "EMAIL_PORT": "25", "EMAIL_USE_TLS": "0"}
    )
    assert smtp["EMAIL_BACKEND"] == "django.core.mail.backends.smtp.EmailBackend"
    assert (smtp["EMAIL_HOST"], smtp["EMAIL_PORT"], smtp["EMAIL_USE_TLS"]) == (
        "mail.example.org",
        25,
        False,
    )


def test_the_test_settings_write_mail_to_files() -> None:
    from config import settings_test

    assert settings_test.EMAIL_BACKEND == "django.core.mail.backends.filebased.EmailBackend"


@pytest.mark.parametrize(
    ("raw", "mode"), [(None, "open"), (" Invite ", "invite"), ("closed", "closed")]
)
def test_registration_modes(raw: str | None, mode: str) -> None:
    assert registration_from_env(raw) == mode


def test_an_unknown_registration_mode_is_an_error() -> None:
    with pytest.raises(ValueError, match="REGISTRATION must be one of open, invite, closed"):
        registration_from_env("anyone")
