"""Django settings for the on-demand evaluation leaderboard.

Everything that differs between a laptop demo and a production deployment comes from environment
variables:

``DJANGO_SECRET_KEY``
    Secret key (signs sessions, password resets and address confirmations). Required: without it
    the settings refuse to load, except in the demo (``manage.py demo``, ``make run``), which makes
    a random key of its own on its first run, keeps it in ``var/demo-secret-key`` (mode 0600) and
    hands it to the processes it starts. No key is public (issue 29, N7).
``DJANGO_DEBUG``
    ``1``/``true``/``yes``/``on`` turns debug mode on. Default: off.
``DJANGO_ALLOWED_HOSTS``
    Comma-separated host names. Default: ``localhost,127.0.0.1,[::1]``.
``DATABASE_URL``
    Any URL understood by dj-database-url, e.g. ``postgres://user:pass@host:5432/name``.
    Default: the SQLite file ``var/db.sqlite3`` under the project directory.
``DJANGO_SECURE``
    ``1`` when the site is served over HTTPS: secure cookies, HTTP redirected to HTTPS, HSTS
    (``DJANGO_HSTS_SECONDS``, default one year). ``DJANGO_SECURE_PROXY=1`` trusts a TLS-ending
    proxy's ``X-Forwarded-Proto``. ``DJANGO_CSRF_TRUSTED_ORIGINS``: comma-separated origins.
``REGISTRATION``
    Who may sign up: ``open`` (anyone, the default), ``invite`` (only with a valid team invitation
    link) or ``closed``. Accounts are django-allauth's; a new address must be verified by email.
``TASK_CREATION``
    Who may create tasks (at ``/tasks/new/`` and ``POST /api/tasks/``): ``role`` (the default:
    staff, or users granted the permission ``leaderboard.add_task`` once by an admin) or
    ``anyone`` (every signed-in user). The creator organizes the new task.
``EMAIL_HOST``
    When set, mail goes out by SMTP (``EMAIL_PORT``, default 587; ``EMAIL_HOST_USER``,
    ``EMAIL_HOST_PASSWORD``, ``EMAIL_USE_TLS``, default on; ``DEFAULT_FROM_EMAIL``). Unset, every
    mail (address verification, password reset, notifications, invitations) is printed on the
    terminal instead.
``SITE_URL``
    The site's address as its users reach it (default ``http://localhost:8000``, the demo's):
    the links in the mail that workers send (notifications, invitations by mail) start with it.
``S3_BUCKET``
    When set, received files (runs, a task's data files, organizer uploads) live in this bucket
    of an S3-compatible object store (AWS S3, MinIO, SeaweedFS, ... through django-storages), so
    that web and worker machines share it; the bucket must exist and be private. ``S3_ENDPOINT_URL``
    (e.g. ``http://minio:9000``; unset: AWS), ``S3_REGION``, ``S3_ACCESS_KEY_ID`` and
    ``S3_SECRET_ACCESS_KEY`` (unset: boto3's own chain, e.g. ``AWS_ACCESS_KEY_ID`` or an instance
    role), ``S3_PREFIX`` (a folder inside the bucket). Unset (the default), they live on the
    filesystem under ``MEDIA_ROOT`` (default ``var/media``), which web and worker must share.
``REDIS_URL``
    Optional, e.g. ``redis://localhost:6379/0``. When set, it is the Celery broker and the Django
    cache. When unset, Celery uses kombu's ``filesystem://`` transport (message files under
    ``var/celery/``; no server needed, web and worker must share the directory), the cache is
    per-process memory, and throttle and failed sign-in counters live in a database table.
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"

DEMO_SECRET_KEY_FILE = "demo-secret-key"  # under var/

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}


def env_bool(value: str | None, default: bool = False) -> bool:
    """Parse a boolean environment value; unknown spellings are an error, not silently false."""
    if value is None:
        return default
    normalized = value.strip().lower()
    if normalized in _TRUE:
        return True
    if normalized in _FALSE:
        return False
    raise ValueError(f"not a boolean: {value!r} (use one of {sorted(_TRUE | _FALSE)})")


def env_list(value: str | None, default: list[str]) -> list[str]:
    """Parse a comma-separated environment value, dropping blanks."""
    if value is None:
        return list(default)
    return [part.strip() for part in value.split(",") if part.strip()]


def is_demo_command(argv: Sequence[str]) -> bool:
    """Whether this process is the demo: ``manage.py demo`` (what ``make run`` starts)."""
    return len(argv) > 1 and Path(argv[0]).name == "manage.py" and argv[1] == "demo"


def demo_secret_key(path: Path) -> str:
    """The demo's own key: made at random on its first run, kept in ``path`` (mode 0600, only
    its owner reads it) and read again on later runs, so sessions outlive a restart."""
    for _attempt in range(2):
        try:
            key = path.read_text().strip()
        except FileNotFoundError:
            key = ""
        if key:
            if path.stat().st_mode & 0o077:
                path.chmod(0o600)
            return key
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another demo process made it first (or left it empty)
            continue
        key = secrets.token_urlsafe(50)
        with os.fdopen(fd, "w") as file:
            file.write(key + "\n")
        return key
    raise ImproperlyConfigured(f"{path} is empty: delete it and start the demo again")


def secret_key_from_env(
    env: Mapping[str, str], argv: Sequence[str], base_dir: Path = BASE_DIR
) -> str:
    """``DJANGO_SECRET_KEY``; else, in the demo only, :func:`demo_secret_key`; else refused."""
    key = env.get("DJANGO_SECRET_KEY", "").strip()
    if key:
        return key
    if is_demo_command(argv):
        return demo_secret_key(base_dir / "var" / DEMO_SECRET_KEY_FILE)
    raise ImproperlyConfigured(
        "DJANGO_SECRET_KEY is not set. Set it to a long random value, the same for every web "
        "and worker process, and keep it secret: python -c 'import secrets; "
        "print(secrets.token_urlsafe(50))'. Only the demo (make run, manage.py demo) makes a "
        f"key of its own, in var/{DEMO_SECRET_KEY_FILE}; to run other commands on the demo's "
        f'data, export DJANGO_SECRET_KEY="$(cat var/{DEMO_SECRET_KEY_FILE})".'
    )


def default_database_url(base_dir: Path = BASE_DIR) -> str:
    return f"sqlite:///{base_dir / 'var' / 'db.sqlite3'}"


def database_config_from_env(
    env: Mapping[str, str], base_dir: Path = BASE_DIR
) -> dj_database_url.DBConfig:
    """The ``DATABASES['default']`` entry for ``env`` (``DATABASE_URL`` or the SQLite default)."""
    url = env.get("DATABASE_URL") or default_database_url(base_dir)
    config = dj_database_url.parse(url)
    if config["ENGINE"] == "django.db.backends.sqlite3":
        # Web and worker processes share the file: wait for locks instead of failing at once, and
        # take the write lock when a transaction starts so read-then-write cannot deadlock.
        config.setdefault("OPTIONS", {}).update({"timeout": 20, "transaction_mode": "IMMEDIATE"})
    else:
        config["CONN_MAX_AGE"] = 60
        config["CONN_HEALTH_CHECKS"] = True
    return config


def celery_broker_from_env(env: Mapping[str, str], base_dir: Path = BASE_DIR) -> dict[str, Any]:
    """Celery broker settings: Redis if ``REDIS_URL`` is set, else the filesystem transport.

    Returns ``{"url": ..., "transport_options": ...}``.
    """
    redis_url = env.get("REDIS_URL")
    if redis_url:
        # An unacknowledged message (its worker died) is redelivered after this many seconds; it
        # must exceed the longest task, or a slow task runs twice (harmless: tasks are idempotent).
        timeout = float(env.get("CELERY_VISIBILITY_TIMEOUT", "1800"))
        return {"url": redis_url, "transport_options": {"visibility_timeout": timeout}}
    root = base_dir / "var" / "celery"
    return {
        "url": "filesystem://",
        "transport_options": {
            # Producers write to data_folder_out, consumers read data_folder_in: one shared folder.
            "data_folder_in": str(root / "queue"),
            "data_folder_out": str(root / "queue"),
            "control_folder": str(root / "control"),
            "store_processed": False,
        },
    }


def filesystem_broker_dirs(transport_options: Mapping[str, Any]) -> list[Path]:
    keys = ("data_folder_in", "data_folder_out", "control_folder")
    return sorted({Path(transport_options[k]) for k in keys if k in transport_options})


def cache_config_from_env(env: Mapping[str, str]) -> dict[str, Any]:
    """The ``CACHES['default']`` entry: Redis if ``REDIS_URL`` is set, else per-process memory.

    Nothing may rely on the cache for correctness (the database is the source of truth).
    """
    redis_url = env.get("REDIS_URL")
    if redis_url:
        # Fails soft (config/cache.py): an outage costs the cache, never a request.
        return {
            "BACKEND": "config.cache.ForgivingRedisCache",
            "LOCATION": redis_url,
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        }
    return {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}


def storage_config_from_env(env: Mapping[str, str]) -> dict[str, Any]:
    """The ``STORAGES['default']`` entry, where received files live: the filesystem under
    ``MEDIA_ROOT``, or with ``S3_BUCKET`` set an S3-compatible bucket (``config/storage.py``)."""
    bucket = env.get("S3_BUCKET", "").strip()
    if not bucket:
        return {"BACKEND": "django.core.files.storage.FileSystemStorage"}
    from botocore.config import Config

    endpoint = env.get("S3_ENDPOINT_URL", "").strip()
    options: dict[str, Any] = {
        "bucket_name": bucket,
        "location": env.get("S3_PREFIX", "").strip("/"),
        # As on the filesystem: a second file under a taken name gets another name, never
        # replaces the first (names are random anyway).
        "file_overwrite": False,
        "default_acl": None,  # private: files are served only through the app's own checks
        # Stored as opaque bytes: no content type or encoding guessed from a name.
        "object_parameters": {"ContentType": "application/octet-stream"},
        "client_config": Config(
            signature_version="s3v4",
            # Self-hosted servers (MinIO, SeaweedFS) are addressed by path, not by DNS name.
            s3={"addressing_style": "path" if endpoint else "auto"},
            connect_timeout=5,
            read_timeout=60,
            retries={"max_attempts": 3, "mode": "standard"},
        ),
    }
    optional = {
        "endpoint_url": "S3_ENDPOINT_URL",
        "region_name": "S3_REGION",
        "access_key": "S3_ACCESS_KEY_ID",
        "secret_key": "S3_SECRET_ACCESS_KEY",
    }
    for option, variable in optional.items():
        if env.get(variable, "").strip():
            options[option] = env[variable].strip()
    return {"BACKEND": "config.storage.ObjectStorage", "OPTIONS": options}


# The table of the database fallback of the throttle cache (made by a leaderboard migration).
THROTTLE_CACHE_TABLE = "throttle_cache"


def throttle_cache_config_from_env(env: Mapping[str, str]) -> dict[str, Any]:
    """The ``CACHES['throttle']`` entry: API throttles and failed sign-ins, counted for every web
    process at once (a per-process count would multiply the limits by the number of workers).

    Redis if ``REDIS_URL`` is set (failing soft: an outage lifts the limits rather than refusing
    every request), else a table of the database.
    """
    if env.get("REDIS_URL"):
        return {**cache_config_from_env(env), "KEY_PREFIX": "throttle"}
    # Past MAX_ENTRIES, expired counters are dropped first; only a flood of live ones (tens of
    # thousands of clients within a window) would evict live counters.
    return {
        "BACKEND": "config.cache.CountingDatabaseCache",
        "LOCATION": THROTTLE_CACHE_TABLE,
        "OPTIONS": {"MAX_ENTRIES": 50_000},
    }


REGISTRATION_MODES = ("open", "invite", "closed")


def registration_from_env(value: str | None) -> str:
    """Who may sign up (``REGISTRATION``): ``open`` (the default), ``invite`` or ``closed``."""
    mode = (value or "open").strip().lower()
    if mode not in REGISTRATION_MODES:
        raise ValueError(f"REGISTRATION must be one of {', '.join(REGISTRATION_MODES)}: {value!r}")
    return mode


TASK_CREATION_MODES = ("role", "anyone")


def task_creation_from_env(value: str | None) -> str:
    """Who may create tasks (``TASK_CREATION``): ``role`` (the default) or ``anyone``."""
    mode = (value or "role").strip().lower()
    if mode not in TASK_CREATION_MODES:
        raise ValueError(
            f"TASK_CREATION must be one of {', '.join(TASK_CREATION_MODES)}: {value!r}"
        )
    return mode


def email_config_from_env(env: Mapping[str, str]) -> dict[str, Any]:
    """The mail settings (``EMAIL_*``, ``DEFAULT_FROM_EMAIL``): SMTP if ``EMAIL_HOST`` is set,
    else the console backend, every mail printed on the terminal (the demo and development)."""
    host = env.get("EMAIL_HOST", "")
    return {
        "EMAIL_BACKEND": "django.core.mail.backends."
        + ("smtp.EmailBackend" if host else "console.EmailBackend"),
        "EMAIL_HOST": host or "localhost",
        "EMAIL_PORT": int(env.get("EMAIL_PORT", "587")),
        "EMAIL_HOST_USER": env.get("EMAIL_HOST_USER", ""),
        "EMAIL_HOST_PASSWORD": env.get("EMAIL_HOST_PASSWORD", ""),
        "EMAIL_USE_TLS": env_bool(env.get("EMAIL_USE_TLS"), default=True),
        "DEFAULT_FROM_EMAIL": env.get("DEFAULT_FROM_EMAIL", "leaderboard@localhost"),
    }


# --- Core ---------------------------------------------------------------------------------------

SECRET_KEY = secret_key_from_env(os.environ, sys.argv)
DEBUG = env_bool(os.environ.get("DJANGO_DEBUG"), default=False)
ALLOWED_HOSTS = env_list(
    os.environ.get("DJANGO_ALLOWED_HOSTS"), default=["localhost", "127.0.0.1", "[::1]"]
)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "csp",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "evaluation.apps.EvaluationConfig",
    "annotation.apps.AnnotationConfig",
    "leaderboard.apps.LeaderboardConfig",
    # After the apps: their templates (the site's look of the account pages) come first.
    "allauth",
    "allauth.account",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "allauth.account.middleware.AccountMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database and cache -------------------------------------------------------------------------

VAR_DIR.mkdir(parents=True, exist_ok=True)
DATABASES = {"default": database_config_from_env(os.environ)}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The SQLite test database is a file, not in-memory, so that Celery worker processes started
    # by the integration tests can open it. One file per test process (concurrent runs and xdist
    # do not clobber each other); PostgreSQL gets Django's `test_<name>` database instead.
    DATABASES["default"]["TEST"] = {
        "NAME": os.environ.get("TEST_SQLITE_NAME")
        or str(VAR_DIR / f"test-db-{os.getpid()}.sqlite3")
    }
CACHES = {
    "default": cache_config_from_env(os.environ),
    "throttle": throttle_cache_config_from_env(os.environ),
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Celery (read by config/celery.py with namespace "CELERY") ---------------------------------

_broker = celery_broker_from_env(os.environ)
CELERY_BROKER_URL = _broker["url"]
CELERY_BROKER_TRANSPORT_OPTIONS = _broker["transport_options"]
if "visibility_timeout" in CELERY_BROKER_TRANSPORT_OPTIONS:
    # Redis: kombu looks for messages of dead workers (unacknowledged past the visibility timeout)
    # only on every 10th tick of a 10 s timer, so a crashed worker's job waited up to 100 s more;
    # look on every tick, every 10 s (sooner with a short timeout, as in the fault tests).
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        **CELERY_BROKER_TRANSPORT_OPTIONS,
        "unacked_restore_interval": max(
            1, min(10, int(CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"] / 4))
        ),
        "unacked_restore_throttle": 1,
    }
for _dir in filesystem_broker_dirs(CELERY_BROKER_TRANSPORT_OPTIONS):
    _dir.mkdir(parents=True, exist_ok=True)
# A task is acknowledged only after it finishes, and a worker reserves one task at a time, so a
# crashed worker's task is redelivered and long tasks do not starve behind each other.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
# Off in the demo (manage.py demo): its worker's console mail backend prints on the terminal.
CELERY_WORKER_REDIRECT_STDOUTS = env_bool(
    os.environ.get("CELERY_WORKER_REDIRECT_STDOUTS"), default=True
)
CELERY_BEAT_SCHEDULE = {
    "pipeline-watchdog": {
        "task": "evaluation.watchdog",
        "schedule": float(os.environ.get("PIPELINE_WATCHDOG_INTERVAL", "60")),
    },
    # Holds boards at their tasks' deadlines and publishes them at their reveal times. Pages
    # already treat a passed deadline as held; a late tick only records it (and publishes late).
    "task-phases": {
        "task": "evaluation.apply_task_phases",
        "schedule": float(os.environ.get("TASK_PHASES_INTERVAL", "60")),
    },
}
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")

# --- Pipeline ------------------------------------------------------------------------------------

# Answers arriving within this many seconds are folded into one re-estimation of the task.
ESTIMATE_DEBOUNCE_SECONDS = float(os.environ.get("ESTIMATE_DEBOUNCE_SECONDS", "2"))
# A run (or a task's pending estimation) untouched for longer than this in a working state is
# re-queued by the watchdog; after PIPELINE_MAX_ATTEMPTS it fails with a reason (quota refunded).
PIPELINE_STUCK_SECONDS = float(os.environ.get("PIPELINE_STUCK_SECONDS", "600"))
PIPELINE_MAX_ATTEMPTS = int(os.environ.get("PIPELINE_MAX_ATTEMPTS", "3"))
# How long one worker may hold a task's engine lock (plan and estimate run one at a time per task).
ENGINE_LOCK_SECONDS = float(os.environ.get("ENGINE_LOCK_SECONDS", "900"))
# How long a plan or estimation job waits for a task's engine lease another job holds before it
# is retried with Celery's back-off (evaluation/locks.py).
ENGINE_LOCK_WAIT_SECONDS = float(os.environ.get("ENGINE_LOCK_WAIT_SECONDS", "3"))
# Memory (MiB) each worker process may keep for the run-and-round part of its tasks' engine states
# (evaluation.kinds.open_world.state): about 16 bytes per prediction plus 50 per item, least
# recently used task evicted first, the current one always kept. 0 rebuilds the state for every job.
ENGINE_STATE_CACHE_MB = float(os.environ.get("ENGINE_STATE_CACHE_MB", "4096"))
# A run that needs more planning rounds than this ends `partial`.
PIPELINE_MAX_ROUNDS = int(os.environ.get("PIPELINE_MAX_ROUNDS", "60"))

# --- Annotation queue ----------------------------------------------------------------------------

# A claimed item is reserved for its annotator this long; the open page renews it (heartbeat).
ANNOTATION_LEASE_SECONDS = float(os.environ.get("ANNOTATION_LEASE_SECONDS", "90"))
# ...but never longer than this after it was handed out, however often it is renewed.
ANNOTATION_LEASE_MAX_SECONDS = float(os.environ.get("ANNOTATION_LEASE_MAX_SECONDS", "600"))
# An annotator may take back their last answer within this many seconds.
ANNOTATION_UNDO_SECONDS = float(os.environ.get("ANNOTATION_UNDO_SECONDS", "60"))
# Most live leases one annotator holds on a task, all tabs together: the annotator page's
# prefetch depth (the item shown plus those ahead; the page reads it from here).
ANNOTATION_MAX_CLAIM = int(os.environ.get("ANNOTATION_MAX_CLAIM", "3"))

# --- Uploads -------------------------------------------------------------------------------------

# Uploads larger than this spill from memory to a temporary file (runs are streamed, not slurped).
FILE_UPLOAD_MAX_MEMORY_SIZE = 4 * 1024 * 1024
FILE_UPLOAD_TEMP_DIR = None
# Hard ceiling for any request body; each task has its own, usually lower, limit.
DATA_UPLOAD_MAX_MEMORY_SIZE = 4 * 1024 * 1024
UPLOAD_MAX_BYTES = int(os.environ.get("UPLOAD_MAX_BYTES", str(1024 * 1024 * 1024)))
# Received run files wait in Django's default storage until a worker has validated them; each is
# deleted once its run is queued or rejected. Web and worker processes must share it: the
# directory MEDIA_ROOT (as they share the filesystem broker's), or with S3_BUCKET set a bucket.
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT") or VAR_DIR / "media")
STORAGES = {
    "default": storage_config_from_env(os.environ),
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
UPLOAD_DIR = "received-runs"
# A task's data files (input data, a sample run, a starter script) are kept in the default
# storage under TASK_FILE_DIR: at most TASK_FILES_MAX per task, each at most TASK_FILE_MAX_BYTES
# (and never more than UPLOAD_MAX_BYTES, the ceiling of any request).
TASK_FILE_DIR = "task-files"
TASK_FILE_MAX_BYTES = int(os.environ.get("TASK_FILE_MAX_BYTES", str(256 * 1024 * 1024)))
TASK_FILES_MAX = int(os.environ.get("TASK_FILES_MAX", "20"))
# Organizers' uploads (gold items, a pool, a reference sample, reference candidates) wait under
# ORGANIZER_UPLOAD_DIR for a worker, as runs do, within the task's upload size (decompressed)
# and these caps on the text: lines, and bytes in one line. A worker keeps the first
# ORGANIZER_UPLOAD_PROBLEMS problems of a refused file (and counts them all).
ORGANIZER_UPLOAD_DIR = "organizer-uploads"
ORGANIZER_UPLOAD_MAX_LINES = int(os.environ.get("ORGANIZER_UPLOAD_MAX_LINES", "5000000"))
ORGANIZER_UPLOAD_MAX_LINE_BYTES = int(
    os.environ.get("ORGANIZER_UPLOAD_MAX_LINE_BYTES", str(1024 * 1024))
)
ORGANIZER_UPLOAD_PROBLEMS = 20
# While a worker validates a file it updates the run's reason this often (seconds).
INGEST_PROGRESS_SECONDS = float(os.environ.get("INGEST_PROGRESS_SECONDS", "1"))

# --- REST API ------------------------------------------------------------------------------------

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "leaderboard.api.authentication.HashedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    # DRF's defaults, the browsable pages made to fit the Content-Security-Policy.
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "site_platform.api.openapi.BrowsableAPIRenderer",
    ],
    # DRF's throttles, counting in CACHES["throttle"] (shared by every web process).
    "DEFAULT_THROTTLE_CLASSES": [
        "leaderboard.api.throttles.AnonRateThrottle",
        "leaderboard.api.throttles.UserRateThrottle",
        "leaderboard.api.throttles.ScopedRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": os.environ.get("API_THROTTLE_ANON", "120/minute"),
        "user": os.environ.get("API_THROTTLE_USER", "1200/minute"),
        "uploads": os.environ.get("API_THROTTLE_UPLOADS", "30/hour"),
        "auth": os.environ.get("API_THROTTLE_AUTH", "10/hour"),
    },
    # Who a caller is, for throttles: the connecting address, or with API_NUM_PROXIES=n trusted
    # proxies in front, the n-th address from the right of X-Forwarded-For. Unset, DRF would
    # trust any client's X-Forwarded-For and a forged header would buy a fresh anonymous budget.
    "NUM_PROXIES": int(os.environ.get("API_NUM_PROXIES", "0")),
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "leaderboard.api.schema.ApiSchema",
    # One error body for both JSON APIs (the REST API and the annotation queue's).
    "EXCEPTION_HANDLER": "site_platform.api.errors.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "On-demand evaluation leaderboard API",
    "DESCRIPTION": (
        "Tasks, run uploads, run status, leaderboard snapshots with confidence intervals, "
        "quotas, organizer controls and API tokens, and the annotation queue (tag `annotation`, "
        "under `/annotate/api/`). Errors of both share one body: "
        '`{"error": {"code", "message", "problems", "total", "run"}}`. See docs/API.md.'
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": "/api/",
    "PREPROCESSING_HOOKS": ["leaderboard.api.schema.only_json_apis"],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "site_platform.api.openapi.throttled_everywhere",
    ],
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "TaskStateEnum": "leaderboard.models.Task.State",
        "RunStateEnum": "leaderboard.models.Run.State",
        "TaskKindEnum": "leaderboard.models.Task.Kind",
        "TaskFileKindEnum": "leaderboard.models.TaskFile.Kind",
    },
    # Swagger UI from this project's static files (no CDN).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
}

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"

# --- Accounts (django-allauth) and teams --------------------------------------------------------

AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
REGISTRATION = registration_from_env(os.environ.get("REGISTRATION"))
TASK_CREATION = task_creation_from_env(os.environ.get("TASK_CREATION"))
ACCOUNT_ADAPTER = "leaderboard.views.account_adapter.AccountAdapter"
ACCOUNT_FORMS = {"login": "leaderboard.forms.SignInForm"}
ACCOUNT_LOGIN_METHODS = {"username", "email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "username*", "password1*", "password2*"]
ACCOUNT_EMAIL_VERIFICATION = "mandatory"
ACCOUNT_UNIQUE_EMAIL = True
ACCOUNT_LOGIN_ON_EMAIL_CONFIRMATION = True
ACCOUNT_LOGOUT_REDIRECT_URL = "home"
# The sign-in page stays open to a signed-in user (to sign in as someone else).
ACCOUNT_AUTHENTICATED_LOGIN_REDIRECTS = False
# allauth's own rate limits, counted in CACHES["throttle"] like the site's brakes (the app's
# ready() points them there: the default cache is per process without Redis). They bound the mail
# a password holder can have sent: a verification mail (at a sign-in to an unverified account, the
# address page's re-send, a new address) at most once per VERIFICATION_MAIL_COOLDOWN
# seconds and VERIFICATION_MAILS_PER_DAY times a day per address; changes of addresses per user;
# reset mails per address on top of PASSWORD_RESET_LIMIT. Failed sign-ins are the site's brake's
# (leaderboard.services.sign_in, per account), not allauth's (per login as typed, issue 29 N12).
VERIFICATION_MAIL_COOLDOWN = int(os.environ.get("VERIFICATION_MAIL_COOLDOWN", "180"))
VERIFICATION_MAILS_PER_DAY = int(os.environ.get("VERIFICATION_MAILS_PER_DAY", "10"))
ACCOUNT_RATE_LIMITS = {
    "confirm_email": (f"1/{VERIFICATION_MAIL_COOLDOWN}s/key,{VERIFICATION_MAILS_PER_DAY}/d/key"),
    "manage_email": "10/m/user,30/h/user",
    "reset_password": "20/m/ip,5/m/key",
    "login_failed": None,
}
# Sign-ups and password-reset requests allowed per client address (and reset mails per address
# asked for) in ACCOUNT_ATTEMPT_WINDOW seconds.
SIGNUP_LIMIT = int(os.environ.get("SIGNUP_LIMIT", "10"))
PASSWORD_RESET_LIMIT = int(os.environ.get("PASSWORD_RESET_LIMIT", "5"))
ACCOUNT_ATTEMPT_WINDOW = int(os.environ.get("ACCOUNT_ATTEMPT_WINDOW", "3600"))
# A team invitation link works once, for this many hours; a team has at most this many members.
TEAM_INVITATION_HOURS = float(os.environ.get("TEAM_INVITATION_HOURS", "72"))
TEAM_MAX_MEMBERS = int(os.environ.get("TEAM_MAX_MEMBERS", "10"))
# A link that makes someone an annotator or a co-organizer of a task works once, this many hours.
TASK_INVITATION_HOURS = float(os.environ.get("TASK_INVITATION_HOURS", "72"))

# Invitations (to teams and to roles on tasks) one person may send by mail, counted by address,
# within INVITATION_MAIL_WINDOW seconds: past it they are refused (429) until the window ends.
INVITATION_MAIL_LIMIT = int(os.environ.get("INVITATION_MAIL_LIMIT", "50"))
INVITATION_MAIL_WINDOW = int(os.environ.get("INVITATION_MAIL_WINDOW", "3600"))

# --- Email ---------------------------------------------------------------------------------------

# The links of the mail workers send start with this (no request there to take the host from).
SITE_URL = os.environ.get("SITE_URL", "http://localhost:8000").rstrip("/")

_email = email_config_from_env(os.environ)
EMAIL_BACKEND = _email["EMAIL_BACKEND"]
EMAIL_HOST = _email["EMAIL_HOST"]
EMAIL_PORT = _email["EMAIL_PORT"]
EMAIL_HOST_USER = _email["EMAIL_HOST_USER"]
EMAIL_HOST_PASSWORD = _email["EMAIL_HOST_PASSWORD"]
EMAIL_USE_TLS = _email["EMAIL_USE_TLS"]
DEFAULT_FROM_EMAIL = _email["DEFAULT_FROM_EMAIL"]

# --- Security headers and cookies (see docs/SECURITY.md) ---------------------------------------

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
# The annotator page reads the CSRF token from a <meta> tag, so no script needs the cookie.
CSRF_COOKIE_HTTPONLY = True
CSRF_COOKIE_SAMESITE = "Lax"
CSRF_TRUSTED_ORIGINS = env_list(os.environ.get("DJANGO_CSRF_TRUSTED_ORIGINS"), default=[])
X_FRAME_OPTIONS = "DENY"
# Content-Security-Policy (django-csp) on every response: scripts, styles, images, fonts and
# requests from this site only; no inline script or style (pages use static files), no plugins,
# no framing, forms only to this site. A page that needs more must move the need to a file.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
# DJANGO_SECURE=1 when served over HTTPS: cookies only over TLS, http redirected, HSTS on.
# DJANGO_SECURE_PROXY=1 when a proxy terminates TLS and sets X-Forwarded-Proto.
SECURE_DEPLOYMENT = env_bool(os.environ.get("DJANGO_SECURE"), default=False)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = SECURE_SSL_REDIRECT = SECURE_DEPLOYMENT
SECURE_HSTS_SECONDS = int(
    os.environ.get("DJANGO_HSTS_SECONDS", "31536000" if SECURE_DEPLOYMENT else "0")
)
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_DEPLOYMENT
# Browser preload lists are hard to leave again: only on explicit request.
SECURE_HSTS_PRELOAD = env_bool(os.environ.get("DJANGO_HSTS_PRELOAD"), default=False)
if env_bool(os.environ.get("DJANGO_SECURE_PROXY"), default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Stop reading an upload once its files pass UPLOAD_MAX_BYTES (before any view: no disk filling).
FILE_UPLOAD_HANDLERS = [
    "leaderboard.views.uploads.UploadCeilingHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]
# Failed sign-ins allowed per client address and per user name in LOGIN_FAILURE_WINDOW seconds.
LOGIN_FAILURE_LIMIT = int(os.environ.get("LOGIN_FAILURE_LIMIT", "10"))
LOGIN_FAILURE_WINDOW = int(os.environ.get("LOGIN_FAILURE_WINDOW", "900"))

# --- Auth, i18n, static files -------------------------------------------------------------------

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
# Static files are served by the app itself (WhiteNoise), straight from the apps' static folders
# unless `collectstatic` has been run: the embedded default needs no web server in front.
WHITENOISE_USE_FINDERS = True
