"""Real services for the integration tests, as a pytest plugin (loaded by ``tests/conftest.py``):

``redis_server`` (session)
    A private ``redis-server`` process on a free port (no persistence). ``.url``, ``.port``,
    ``.client()``, ``.stop()``, ``.kill()``, ``.start()``, ``.restart()``, ``.flushall()``.
``celery_worker`` (function)
    A real ``celery -A config worker --pool=solo`` OS process on the test database and the
    ``redis_server`` broker; the in-process Celery app and Django settings are pointed at the same
    broker for the test. ``.stop()`` (warm), ``.kill()`` (SIGKILL), ``.start()``, ``.pid``,
    ``.nodename``, ``.log_tail()``. Its log is attached to the report of a failing test.
``celery_worker_factory`` (function)
    Starts more workers (``factory(env={...})``), e.g. a second one to pick up a killed one's work.

Tests using ``celery_worker`` need committed data, so they request ``transactional_db`` through
the fixture (mark them ``@pytest.mark.django_db(transaction=True)`` as well, for clarity), and
they are marked ``integration`` automatically (``tests/conftest.py``) so that ``make test`` re-runs
them on PostgreSQL. ``worker_database_url()`` gives another process this process's test database.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import quote

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
# Modules only the test workers import (`celery worker --include`), e.g. probe tasks.
WORKER_SUPPORT_DIR = REPO_ROOT / "tests" / "integration" / "support"
WORKER_SUPPORT_MODULES = ("worker_tasks",)

# Environment given to every test worker (a test can override any of it per worker). No beat
# runs in tests: a test triggers the watchdog itself (`send_task("evaluation.watchdog")`).
WORKER_TEST_ENV = {
    "ESTIMATE_DEBOUNCE_SECONDS": "0.2",
    "PIPELINE_WATCHDOG_INTERVAL": "1",
}

_TRUE = {"1", "true", "yes", "on"}


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in _TRUE


def missing_service(message: str, *, required_by: str) -> NoReturn:
    """Skip the test whose service is not installed, or fail it when the environment flag
    ``required_by`` (``REQUIRE_REDIS``, ``REQUIRE_S3``: set by ``.ci/run``) says it must run."""
    if env_flag(required_by):
        pytest.fail(f"{required_by}=1 but {message}", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository root (where manage.py lives)."""
    return REPO_ROOT


# --- Processes ----------------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _die_with_parent() -> None:
    """``preexec_fn`` for service processes: SIGKILL them if pytest dies without tearing down
    (e.g. killed, or pytest-timeout's thread method), so no worker outlives its test run."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG (Linux)


def spawn(
    command: list[str], *, cwd: Path, log: Any, env: Mapping[str, str] | None = None
) -> subprocess.Popen:
    """A service process in a session of its own (so that a whole group can be killed), its
    output appended to ``log``, SIGKILLed if pytest dies."""
    return subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=_die_with_parent,
    )


def _terminate(proc: subprocess.Popen, sig: int, timeout: float) -> None:
    """Send ``sig`` and wait; SIGKILL the process group if it is still alive after ``timeout``."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(sig)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def _tail(path: Path, lines: int) -> str:
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return "(no log file)"
    return "\n".join(text.splitlines()[-lines:])


# --- Redis --------------------------------------------------------------------------------------


class RedisServer:
    """A ``redis-server`` subprocess on 127.0.0.1:``port``, without persistence."""

    def __init__(self, binary: str, workdir: Path, port: int) -> None:
        self.binary = binary
        self.workdir = workdir
        self.port = port
        self.log_path = workdir / "redis.log"
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def client(self):
        import redis

        return redis.Redis.from_url(self.url, socket_timeout=5)

    def start(self, timeout: float = 20.0) -> None:
        if self.running:
            return
        args = [
            self.binary,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--appendonly", "no",
            "--dir", str(self.workdir),
            "--logfile", str(self.log_path),
        ]  # fmt: skip
        self.proc = subprocess.Popen(
            args,
            cwd=self.workdir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        import redis

        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"redis-server exited with code {self.proc.returncode}:\n"
                    f"{_tail(self.log_path, 30)}"
                )
            try:
                if self.client().ping():
                    return
            except redis.RedisError:
                pass
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(
                    f"redis-server did not answer PING within {timeout:g}s:\n"
                    f"{_tail(self.log_path, 30)}"
                )
            time.sleep(0.05)

    def stop(self, timeout: float = 10.0) -> None:
        """Shut down (SIGTERM; nothing is saved)."""
        if self.proc is not None:
            _terminate(self.proc, signal.SIGTERM, timeout)

    def kill(self) -> None:
        """Crash: SIGKILL."""
        if self.proc is not None:
            _terminate(self.proc, signal.SIGKILL, 10)

    def restart(self) -> None:
        """Stop and start again on the same port (all data is lost: no persistence)."""
        self.stop()
        self.start()

    def flushall(self) -> None:
        self.client().flushall()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A private Redis server for the test session; skipped (or failed, with REQUIRE_REDIS=1)
    when the ``redis-server`` binary is not installed."""
    # Debian installs it in /usr/bin; look in sbin directories too, which may be off a user's PATH.
    binary = (
        os.environ.get("REDIS_SERVER_BIN")
        or shutil.which("redis-server")
        or shutil.which("redis-server", path="/usr/sbin:/usr/local/sbin:/sbin")
    )
    if not binary:
        missing_service(
            "redis-server is not installed (Debian: apt-get install redis-server; "
            ".ci/run installs it)",
            required_by="REQUIRE_REDIS",
        )
    server = RedisServer(binary, tmp_path_factory.mktemp("redis"), free_port())
    server.start()
    try:
        yield server
    finally:
        server.stop()


# --- Celery worker ------------------------------------------------------------------------------

_WORKERS_KEY = pytest.StashKey[list]()


def worker_database_url() -> str:
    """A ``DATABASE_URL`` for the test database this process uses (after pytest-django set it up):
    the SQLite test file, or PostgreSQL's ``test_<name>`` database."""
    from django.db import connection

    conf = connection.settings_dict
    name = str(conf["NAME"])
    if connection.vendor == "sqlite":
        if name == ":memory:" or "mode=memory" in name:
            raise RuntimeError(
                f"the SQLite test database is in memory ({name!r}): a worker process cannot open "
                "it; see DATABASES['default']['TEST']['NAME'] in config/settings.py"
            )
        return f"sqlite:///{Path(name).resolve()}"
    if connection.vendor == "postgresql":
        credentials = quote(conf.get("USER") or "", safe="")
        if conf.get("PASSWORD"):
            credentials += ":" + quote(conf["PASSWORD"], safe="")
        host = conf.get("HOST") or "127.0.0.1"
        port = conf.get("PORT") or 5432
        return f"postgres://{credentials}@{host}:{port}/{quote(name, safe='')}"
    raise RuntimeError(f"no worker DATABASE_URL for the {connection.vendor} backend")


class CeleryWorker:
    """A real ``celery -A config worker --pool=solo`` process (tasks run in that very process:
    ``.pid`` is the process that executes them, and ``.kill()`` crashes it mid-task)."""

    def __init__(self, name: str, env: Mapping[str, str], log_path: Path) -> None:
        self.nodename = f"{name}@pytest"
        self.env = dict(env)
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None
        self._log_offset = 0

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def command(self) -> list[str]:
        includes = ",".join(WORKER_SUPPORT_MODULES)
        return [
            sys.executable, "-m", "celery", "-A", "config", "worker",
            "--pool=solo", "--loglevel=INFO", "-n", self.nodename, f"--include={includes}",
            # No cluster chatter: each test worker is independent (and starts a second sooner).
            "--without-mingle", "--without-gossip", "--without-heartbeat",
        ]  # fmt: skip

    def start(self, timeout: float = 60.0) -> CeleryWorker:
        """Start the process and wait until it answers a ping through the broker."""
        if self.running:
            return self
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with self.log_path.open("ab") as log:
            log.write(f"\n===== starting {' '.join(self.command())}\n".encode())
            log.flush()
            self.proc = spawn(self.command(), cwd=REPO_ROOT, log=log, env=self.env)
        self._wait_ready(timeout)
        return self

    def _wait_ready(self, timeout: float) -> None:
        from config.celery import app

        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"celery worker {self.nodename} exited with code {self.proc.returncode} "
                    f"while starting; log:\n{self.log_tail()}"
                )
            if self._logged_since_start(" ready."):
                # Ready by its own account; now prove the in-process app reaches it.
                if app.control.ping(destination=[self.nodename], timeout=0.5):
                    return
            else:
                time.sleep(0.1)
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(
                    f"celery worker {self.nodename} not ready within {timeout:g}s; log:\n"
                    f"{self.log_tail()}"
                )

    def _logged_since_start(self, needle: str) -> bool:
        with self.log_path.open("rb") as log:
            log.seek(self._log_offset)
            return needle.encode() in log.read()

    def stop(self, timeout: float = 30.0) -> None:
        """Warm shutdown (SIGTERM: finish the current task, return reserved ones to the queue);
        SIGKILL after ``timeout`` seconds."""
        if self.proc is not None:
            _terminate(self.proc, signal.SIGTERM, timeout)

    def kill(self) -> None:
        """Crash (SIGKILL): a task being executed is neither finished nor acknowledged. (Redis
        hands an unacknowledged message to another worker only after the broker's
        ``visibility_timeout``, one hour by default.)"""
        if self.proc is not None:
            _terminate(self.proc, signal.SIGKILL, 10)

    def restart(self) -> CeleryWorker:
        self.stop()
        return self.start()

    def log_tail(self, lines: int = 60) -> str:
        return _tail(self.log_path, lines)


def _point_celery_at(redis_url: str, settings: Any) -> Callable[[], None]:
    """Make this process publish to ``redis_url`` (the workers' broker); returns an undo."""
    import kombu.pools
    from celery import current_app

    from config.celery import app

    assert current_app._get_current_object() is app, "the Celery app in use is not config's"
    keys = ("broker_url", "broker_transport_options")
    saved = {key: app.conf[key] for key in keys}

    def reset_pools() -> None:
        # Close and forget every pooled broker connection (kombu keeps process-wide pools keyed
        # by URL), so that nothing is published through a connection from before the switch.
        with contextlib.suppress(Exception):
            kombu.pools.reset()
        app._pool = None
        app.amqp._producer_pool = None

    app.conf.broker_url = redis_url
    app.conf.broker_transport_options = {}
    reset_pools()
    # pytest-django's `settings` fixture restores these after the test.
    settings.CELERY_BROKER_URL = redis_url
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {}
    from config.settings import cache_config_from_env

    settings.CACHES = {
        **settings.CACHES,
        "default": cache_config_from_env({"REDIS_URL": redis_url}),
    }
    # The debounce countdown is chosen by the process that enqueues (this one).
    settings.ESTIMATE_DEBOUNCE_SECONDS = float(WORKER_TEST_ENV["ESTIMATE_DEBOUNCE_SECONDS"])

    def undo() -> None:
        for key, value in saved.items():
            app.conf[key] = value
        reset_pools()

    return undo


@pytest.fixture
def celery_worker_factory(
    request: pytest.FixtureRequest,
    transactional_db: None,
    redis_server: RedisServer,
    settings: Any,
    tmp_path: Path,
) -> Iterator[Callable[..., CeleryWorker]]:
    """``factory(env=None, start=True) -> CeleryWorker``: real worker processes for this test.

    All share the test database (committed data: this fixture makes the test transactional) and
    the ``redis_server`` broker, which starts empty. At teardown every worker is stopped (before
    pytest-django flushes the database) and Redis is flushed.
    """
    redis_server.start()  # a previous test may have stopped it
    redis_server.flushall()
    undo = _point_celery_at(redis_server.url, settings)
    workers: list[CeleryWorker] = []
    request.node.stash[_WORKERS_KEY] = workers
    base_env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": worker_database_url(),
        "REDIS_URL": redis_server.url,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(WORKER_SUPPORT_DIR)]),
        "PYTHONUNBUFFERED": "1",
        **WORKER_TEST_ENV,
    }
    for key in ("CELERY_BROKER_URL", "CELERY_BROKER_READ_URL", "CELERY_BROKER_WRITE_URL"):
        base_env.pop(key, None)

    def make(env: Mapping[str, str] | None = None, start: bool = True) -> CeleryWorker:
        name = f"w{len(workers) + 1}-{uuid.uuid4().hex[:8]}"
        worker = CeleryWorker(name, {**base_env, **(env or {})}, tmp_path / f"celery-{name}.log")
        workers.append(worker)
        return worker.start() if start else worker

    try:
        yield make
    finally:
        for worker in workers:
            worker.stop()
        with contextlib.suppress(Exception):
            redis_server.start()
            redis_server.flushall()
        undo()


@pytest.fixture
def celery_worker(celery_worker_factory: Callable[..., CeleryWorker]) -> CeleryWorker:
    """One real, running Celery worker process (see :class:`CeleryWorker`)."""
    return celery_worker_factory()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[Any]:
    report = yield
    if report.failed:
        for worker in item.stash.get(_WORKERS_KEY, []):
            report.sections.append(
                (f"celery worker {worker.nodename} log ({worker.log_path})", worker.log_tail())
            )
    return report
