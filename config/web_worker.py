"""The gunicorn classes the web server runs: a worker, ``gthread`` that gives a connection a thread
only once its request's head (request line and headers) has fully arrived, and an access log that
leaves out the secret keys some links carry in their path.

gunicorn's ``gthread`` worker hands a connection to one of its threads as soon as its first bytes
arrive; the thread then blocks until the rest of the head comes. Connections that send a header
line a second (slow clients, or an attacker's "slow loris") each held a thread that long: 64 of
them held the demo's 2 x 16 threads and an anonymous request waited 147 s (issue 29, F14). Here a
thread takes what the connection has received without waiting for more; while the head is
incomplete the connection goes back to the worker's event loop, which holds any number of them
without a thread, and comes back when more arrives; once it is whole, what was received is handed
to gunicorn's parser as if just read. A head has ``WEB_HEAD_TIMEOUT`` seconds (default 10; nginx's
``client_header_timeout`` is of the same kind) from the connection, or from the previous answer on
a kept-alive one, to arrive whole; then the connection is closed. Gunicorn's own limits (its
``--limit-request-*`` settings, the keep-alive timeout for a connection that sends nothing) still
apply. A connection closed after its answer lingers (gunicorn waits up to 2 s for the client to
close first) in its request's thread, not in the worker's event loop, where one client that never
closed stalled every other connection of the worker.

What this does not bound: a request body sent slowly holds its thread while the view reads it
(the uploads stream their files), and a worker holds at most ``--worker-connections`` (1000)
connections. In production a reverse proxy that buffers whole requests before passing them on
(nginx's default ``proxy_request_buffering on``) takes both (README, "Production").

This builds on ``gthread``'s internals (``handle``, its ``_DEFER`` answer, the connection's
parser), as of the pinned gunicorn 27.0.1: ``tests/config/test_web_worker.py`` runs the real
server and fails if they change under it.
"""

from __future__ import annotations

import os
import re
import socket
import time

from gunicorn.glogging import Logger
from gunicorn.workers.gthread import _DEFER, ThreadWorker

HEAD_TIMEOUT = float(os.environ.get("WEB_HEAD_TIMEOUT", "10"))
# A head this long without its end is handed to gunicorn's parser, which refuses it by its own
# limits (request line 4094 bytes, 100 fields of 8190 bytes).
MAX_HEAD_BYTES = 65536
HEAD_ENDS = (b"\r\n\r\n", b"\n\n")


def receive_available(sock: socket.socket, into: bytearray) -> bool:
    """Append what ``sock`` has received (without waiting) to ``into``, up to ``MAX_HEAD_BYTES``;
    False once the peer has closed or the connection broke (the parser then says so)."""
    while len(into) < MAX_HEAD_BYTES:
        try:
            chunk = sock.recv(MAX_HEAD_BYTES - len(into), socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return True
        except OSError:
            return False
        if not chunk:
            return False
        into += chunk
    return True


def head_complete(received: bytes) -> bool:
    """Whether ``received`` holds a whole request head (or more than one is allowed to be)."""
    return len(received) >= MAX_HEAD_BYTES or any(end in received for end in HEAD_ENDS)


class HeadFirstThreadWorker(ThreadWorker):
    """``gthread``, with a thread given to a request only once its head has arrived."""

    def handle(self, conn):
        if (
            self.cfg.is_ssl  # encrypted bytes: nothing to look at before the handshake
            or conn.is_http2
            or self.cfg.http2_cleartext in ("prior-knowledge", "both")
        ):
            return super().handle(conn)
        if getattr(conn, "head", None) is None:
            conn.head = bytearray()
            conn.head_deadline = time.monotonic() + HEAD_TIMEOUT
        # Bytes read ahead on a kept-alive connection come first.
        ahead = conn.parser.unreader.take_buffered() if conn.parser is not None else b""
        conn.head[:0] = ahead
        open_ = receive_available(conn.sock, conn.head)
        if open_ and not head_complete(conn.head):
            if time.monotonic() >= conn.head_deadline:
                self.log.info("Closing %s: no request head within %gs", conn.client, HEAD_TIMEOUT)
                conn.close()
                return False
            # Back to the event loop, which hands the connection over again when more arrives
            # (and closes it after the keep-alive timeout if nothing does).
            conn.data_ready = False
            return _DEFER
        head, conn.head = bytes(conn.head), None
        conn.sock.setblocking(True)
        conn.init()  # a new connection's parser (kept-alive ones have theirs)
        conn.parser.unreader.unread(head)
        conn.data_ready = True
        keep_alive = super().handle(conn)
        if not keep_alive:
            # gunicorn closes in its event loop, lingering up to 2 s for the client to close
            # first: a client that never does stalled every connection of the worker that long.
            # The linger happens here, in this request's thread, and the loop's close is then
            # immediate.
            conn.close(graceful=True)
        return keep_alive


# Links whose path is a secret: invitations to a task role or to a team, allauth's address
# confirmations and password resets. Whoever reads the access log must not be able to use them.
SECRET_IN_PATH = re.compile(
    r"(^|[\s\"]|://[^/\s\"]*)"  # where a path starts: a field, a request line, after a host
    r"(/(?:invitations|teams/join|accounts/confirm-email|accounts/password/reset/key)/)"
    r"(?!done/)[^/?#\s\"]+"
)
REDACTED = "[key]"


def without_keys(text: str) -> str:
    """``text`` with every secret key of a link's path replaced by ``[key]``."""
    return SECRET_IN_PATH.sub(rf"\g<1>\g<2>{REDACTED}", text)


class KeylessAccessLogger(Logger):
    """gunicorn's access log with the keys of invitation, confirmation and password-reset links
    left out of every field (the request line, the path, the Referer of the pages they open...).
    The links stay links (a key has to travel in the URL someone clicks); they are single-use and
    expire, but a log is kept longer and read by more people than the link."""

    def atoms(self, resp, req, environ, request_time):
        atoms = super().atoms(resp, req, environ, request_time)
        return {
            name: without_keys(value) if isinstance(value, str) else value
            for name, value in atoms.items()
        }
