"""Slow clients do not stall the web server `make run` starts (issue 29, F14).

The server is the demo's own command (``_demo_processes.web_command``: gunicorn, 2 workers of 16
threads) on the test database, with a 2 s head timeout. Forty connections that send a header
line every half second and never finish their head held every thread of gunicorn's ``gthread``
worker, and an anonymous request waited as long as they kept sending; now a request's head must
arrive before a thread takes it, and within the head timeout.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator

import pytest

from evaluation.management.commands._demo_processes import web_command

from live_services import REPO_ROOT, worker_database_url

# The server writes (sign-in counters) to the test database: no transaction of this process may
# hold it.
pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

HEAD_TIMEOUT = 2.0
SLOW = 40  # more than the 2 x 16 threads


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get(port: int, path: str = "/", *, timeout: float = 5.0) -> tuple[int, float]:
    """An anonymous request's status and wall time (an error if none within ``timeout``)."""
    started = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode()
        )
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return int(answer.split(b" ", 2)[1]), time.perf_counter() - started


@pytest.fixture
def server(tmp_path) -> Iterator[int]:
    argv = web_command("127.0.0.1", port := free_port(), access_log=tmp_path / "access.log")
    if "gunicorn" not in argv:
        pytest.skip("gunicorn is not installed: runserver serves the demo")
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": worker_database_url(),
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": "test-" + os.urandom(16).hex(),
        "MEDIA_ROOT": str(tmp_path / "media"),
        "WEB_HEAD_TIMEOUT": str(HEAD_TIMEOUT),
    }
    with (tmp_path / "web.log").open("wb") as log:
        proc = subprocess.Popen(
            argv,
            cwd=REPO_ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if get(port)[0] == 200:
                        break
                except OSError:
                    pass
                assert proc.poll() is None, (tmp_path / "web.log").read_text()
                assert time.monotonic() < deadline, "the web server did not come up"
                time.sleep(0.2)
            yield port
        finally:
            os.killpg(proc.pid, 15)
            proc.wait(timeout=30)


class SlowHeads:
    """``n`` connections sending a request line, then a header line every ``interval``."""

    def __init__(self, port: int, n: int, interval: float = 0.5):
        self.socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
        self.closed_at: dict[int, float] = {}
        self.started = time.monotonic()
        self.stop = threading.Event()
        for sock in self.socks:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        self.thread = threading.Thread(target=self._trickle, args=(interval,), daemon=True)
        self.thread.start()

    def _trickle(self, interval: float) -> None:
        line = 0
        while not self.stop.wait(interval):
            line += 1
            for i, sock in enumerate(self.socks):
                if i in self.closed_at:
                    continue
                try:
                    sock.sendall(f"X-Line-{line}: {line}\r\n".encode())
                    sock.setblocking(False)
                    try:
                        if sock.recv(1) == b"":
                            raise ConnectionResetError
                    except BlockingIOError:
                        pass
                    finally:
                        sock.setblocking(True)
                except OSError:
                    self.closed_at[i] = time.monotonic() - self.started

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=10)
        for sock in self.socks:
            sock.close()


def test_slow_heads_hold_no_thread_and_are_closed_after_the_head_timeout(server):
    slow = SlowHeads(server, SLOW)
    try:
        time.sleep(1.0)  # every slow head under way (two lines each)
        status, seconds = get(server, timeout=5.0)  # gthread: no answer while they trickle
        assert status == 200
        assert seconds < 2.0, seconds
        time.sleep(HEAD_TIMEOUT + 2.0)
        # Each one was closed once its head took longer than the timeout (and not long before).
        assert len(slow.closed_at) == SLOW
        assert min(slow.closed_at.values()) >= HEAD_TIMEOUT - 0.5
    finally:
        slow.close()


def test_a_head_in_pieces_and_a_kept_alive_connection_are_served(server):
    with socket.create_connection(("127.0.0.1", server), timeout=5) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\n")
        time.sleep(0.3)
        sock.sendall(b"Host: 127.0.0.1\r\n")
        time.sleep(0.3)
        sock.sendall(b"\r\n")
        first = sock.recv(65536)
        assert first.startswith(b"HTTP/1.1 200"), first[:100]
        while b"</html>" not in first:
            first += sock.recv(65536)
        # The same connection, kept alive: a second request whose head comes whole.
        sock.sendall(b"GET /no-such-page/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        second = b""
        while chunk := sock.recv(65536):
            second += chunk
        assert second.startswith(b"HTTP/1.1 404"), second[:100]


def test_clients_that_never_close_after_their_answer_do_not_stall_the_others(server):
    # gunicorn lingers up to 2 s after a "Connection: close" answer for the client to close
    # first; in its event loop, 12 such clients stalled every other connection about 12 s.
    lingering = []
    try:
        for _ in range(12):
            sock = socket.create_connection(("127.0.0.1", server), timeout=5)
            sock.sendall(
                b"GET /no-such-page/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
            )
            lingering.append(sock)  # never read, never closed
        time.sleep(0.5)
        status, seconds = get(server, timeout=5.0)
        assert status == 200
        assert seconds < 1.5, seconds
    finally:
        for sock in lingering:
            sock.close()


def test_the_access_log_leaves_out_the_keys_of_invitation_links(server, tmp_path):
    assert get(server, "/invitations/SECRETKEY-1/")[0] == 404
    assert get(server, "/teams/join/SECRETKEY-2/")[0] in (302, 404)
    time.sleep(0.5)
    logged = (tmp_path / "access.log").read_text()
    assert '"GET /invitations/[key]/ HTTP/1.1" 404' in logged
    assert "/teams/join/[key]/" in logged and "SECRETKEY" not in logged


def test_a_request_with_a_body_larger_than_what_is_read_ahead_is_served(server):
    body = b'{"username": "nobody", "password": "' + b"x" * 200_000 + b'"}'
    with socket.create_connection(("127.0.0.1", server), timeout=10) as sock:
        sock.sendall(
            b"POST /api/token/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            b"Content-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    # Refused for what it says (no such account), so the whole body reached the view.
    assert answer.startswith(b"HTTP/1.1 401"), answer[:300]
    assert b"credentials" in answer.lower() or b"password" in answer.lower(), answer[-300:]
