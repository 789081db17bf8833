"""The processes `manage.py demo` runs: a Celery worker with beat, the web server and, optionally,
simulated annotators; started in their own sessions and stopped together on Ctrl-C / SIGTERM."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings


@dataclass
class Child:
    name: str
    argv: list[str]
    log: Path
    # An essential child that exits ends the demo; the others may finish on their own.
    essential: bool = True
    # Its standard output goes to the demo's terminal, its standard error to ``log``: the console
    # mail backend writes mail to standard output (the web server's sign-up and password mails,
    # the worker's notifications and invitations), server messages and logs go to standard error.
    stdout_to_terminal: bool = False
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def process(self) -> subprocess.Popen[bytes]:
        """The process, once started (every child a supervisor holds is)."""
        assert self.proc is not None, f"{self.name} was never started"
        return self.proc

    def tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"


class Supervisor:
    """Starts children (each in a new session, output to its log, or only their standard error
    when their standard output goes to the terminal) and stops them all."""

    def __init__(
        self, *, cwd: Path, write: Callable[[str], object], env: dict[str, str] | None = None
    ):
        self.cwd = cwd
        self.write = write
        self.env = env if env is not None else dict(os.environ)
        self.children: list[Child] = []
        self.stop_requested = False

    def start(self, child: Child) -> Child:
        child.log.parent.mkdir(parents=True, exist_ok=True)
        with child.log.open("ab") as log:
            log.write(f"\n===== {' '.join(child.argv)}\n".encode())
            log.flush()
            # A session of its own: a Ctrl-C in the terminal reaches only the demo, which then
            # stops each child's whole process group (gunicorn workers, celery beat) in order.
            child.proc = subprocess.Popen(
                child.argv,
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=None if child.stdout_to_terminal else log,
                stderr=log if child.stdout_to_terminal else subprocess.STDOUT,
                start_new_session=True,
            )
        self.children.append(child)
        return child

    def request_stop(self, *_signal_args) -> None:
        self.stop_requested = True

    def dead_essential(self) -> Child | None:
        for child in self.children:
            if child.essential and child.process.poll() is not None:
                return child
        return None

    def watch(self, poll: float = 0.5) -> int:
        """Wait until a stop is requested (0) or an essential child exits (1)."""
        reported = set()
        while not self.stop_requested:
            dead = self.dead_essential()
            if dead is not None:
                self.write(
                    f"{dead.name} exited with code {dead.process.returncode}; last lines of "
                    f"{dead.log}:\n{dead.tail()}"
                )
                return 1
            for child in self.children:
                if (
                    not child.essential
                    and child.name not in reported
                    and child.process.poll() is not None
                ):
                    reported.add(child.name)
                    self.write(f"{child.name} finished: {child.tail(1)}")
            time.sleep(poll)
        return 0

    def stop_all(self, timeout: float = 20.0) -> None:
        """SIGTERM every child's process group (newest first), SIGKILL what outlives ``timeout``."""
        for child in reversed(self.children):
            if child.process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for child in reversed(self.children):
            try:
                child.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.process.pid, signal.SIGKILL)
                child.process.wait(timeout=10)


def port_open(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


# gunicorn's threaded workers, each thread given to a request only once its head has arrived
# (``config/web_worker.py``: slow heads held every thread, issue 29 F14); idle keep-alive
# connections hold none (the production command in README uses the same).
WEB_WORKERS, WEB_THREADS = 2, 16
WEB_WORKER_CLASS = "config.web_worker.HeadFirstThreadWorker"
# Its access log leaves out the keys of invitation and confirmation links (config/web_worker.py).
WEB_LOGGER_CLASS = "config.web_worker.KeylessAccessLogger"


def web_command(host: str, port: int, access_log: Path | None = None) -> list[str]:
    """gunicorn when installed (static files come from WhiteNoise), else Django's runserver.

    gunicorn appends its request lines to ``access_log`` (none without it), never to standard
    output, which the demo leaves to the mails of the console backend."""
    if importlib.util.find_spec("gunicorn") is not None:
        return [
            sys.executable,
            "-m",
            "gunicorn",
            "config.wsgi:application",
            "--bind",
            f"{host}:{port}",
            "--workers",
            str(WEB_WORKERS),
            "--worker-class",
            WEB_WORKER_CLASS,
            "--threads",
            str(WEB_THREADS),
            "--logger-class",
            WEB_LOGGER_CLASS,
            *(["--access-logfile", str(access_log)] if access_log is not None else []),
        ]
    return [sys.executable, "manage.py", "runserver", f"{host}:{port}", "--noreload", "--insecure"]


def worker_command() -> list[str]:
    """One Celery worker with beat embedded (``-B``): the demo's only worker, so it also runs
    the beat schedule (``CELERY_BEAT_SCHEDULE``: the watchdog, and the phase job that holds
    boards at deadlines and publishes them at reveal times). Quiet (no banner on standard
    output, which the demo leaves to the mail it sends)."""
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "config",
        "--quiet",
        "worker",
        "-B",
        "--pool=solo",
        "--loglevel=info",
    ]


class DemoProcesses:
    def __init__(self, *, base_dir: Path, host: str, port: int, stdout, stderr):
        self.base_dir = base_dir
        self.host, self.port = host, port
        self.stdout, self.stderr = stdout, stderr
        self.log_dir = base_dir / "var" / "demo"

    def run(
        self, *, simulate_args: list[str] | None, banner: str, ready_timeout: float = 60.0
    ) -> int:
        """Run the worker and the web server until Ctrl-C / SIGTERM; returns an exit code."""
        if port_open(self.host, self.port):
            self.stderr.write(f"{self.host}:{self.port} is already in use; choose another --port")
            return 2
        supervisor = Supervisor(cwd=self.base_dir, write=self.stderr.write, env=self.env())
        previous = {
            sig: signal.signal(sig, supervisor.request_stop)
            for sig in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            supervisor.start(
                Child(
                    "worker",
                    worker_command(),
                    self.log_dir / "worker.log",
                    stdout_to_terminal=True,  # its mail (console backend) is shown here
                )
            )
            supervisor.start(
                Child(
                    "web server",
                    web_command(self.host, self.port, access_log=self.log_dir / "web.log"),
                    self.log_dir / "web.log",
                    stdout_to_terminal=True,  # the mails (console backend) are shown here
                )
            )
            code = self._wait_until_ready(supervisor, ready_timeout)
            if code is not None:
                return code
            if simulate_args:
                supervisor.start(
                    Child(
                        "simulated annotators",
                        [sys.executable, "manage.py", *simulate_args],
                        self.log_dir / "annotators.log",
                        essential=False,
                    )
                )
            self.stdout.write(banner)
            self.stdout.write(
                f"Logs: {self.log_dir}/ (worker.log, web.log"
                f"{', annotators.log' if simulate_args else ''})"
            )
            return supervisor.watch()
        finally:
            self.stdout.write("Stopping the demo processes ...")
            supervisor.stop_all()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.stdout.write("Stopped.")

    def env(self) -> dict[str, str]:
        """The children's environment: the demo's secret key (its own, from
        ``var/demo-secret-key``, unless ``DJANGO_SECRET_KEY`` is set: they are not ``manage.py
        demo`` and would refuse to start without it), the links of the worker's mail lead to
        this demo's address, and the worker prints mail on standard output instead of logging
        it."""
        return {
            **os.environ,
            "DJANGO_SECRET_KEY": settings.SECRET_KEY,
            "SITE_URL": os.environ.get("SITE_URL") or f"http://{self.host}:{self.port}",
            "CELERY_WORKER_REDIRECT_STDOUTS": "0",
        }

    def _wait_until_ready(self, supervisor: Supervisor, timeout: float) -> int | None:
        deadline = time.monotonic() + timeout
        while not port_open(self.host, self.port):
            if supervisor.stop_requested:
                return 0
            dead = supervisor.dead_essential()
            if dead is not None:
                self.stderr.write(
                    f"{dead.name} exited with code {dead.process.returncode} while "
                    f"starting; last lines of {dead.log}:\n{dead.tail()}"
                )
                return 1
            if time.monotonic() > deadline:
                self.stderr.write(
                    f"the web server did not listen on {self.host}:{self.port} "
                    f"within {timeout:g}s; see {self.log_dir / 'web.log'}"
                )
                return 1
            time.sleep(0.2)
        return None
