"""A small HTTP client for the leaderboard's REST API (standard library only).

JSON requests go through ``http.client``; run files are streamed as a multipart body with a known
``Content-Length``, read from disk in chunks (never whole into memory), with a progress callback.
Every failure is an :class:`ApiError` carrying the server's error body, or a
:class:`ConnectionFailed`.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import os
import secrets
import socket
import ssl
from collections.abc import Callable
from urllib.parse import urlencode, urlsplit

CHUNK = 256 * 1024
TIMEOUT = 60.0


class ConnectionFailed(Exception):
    """The server could not be reached (refused, unknown host, timed out, reset)."""


class ApiError(Exception):
    """An error response: HTTP ``status`` and the API's error body fields."""

    def __init__(self, status: int, body: dict | None, text: str = ""):
        error = (body or {}).get("error") if isinstance(body, dict) else None
        error = error if isinstance(error, dict) else {}
        self.status = status
        self.code = error.get("code") or f"http_{status}"
        self.message = error.get("message") or text.strip()[:300] or f"HTTP {status}"
        self.problems = error.get("problems") or []
        self.total = error.get("total") or len(self.problems)
        super().__init__(self.message)


class Client:
    def __init__(self, url: str, token: str | None = None, *, timeout: float = TIMEOUT):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self.url = url.rstrip("/")
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port
        self.prefix = parts.path.rstrip("/")
        self.token = token
        self.timeout = timeout

    # -- plumbing --------------------------------------------------------------------------------
    def _connection(self) -> http.client.HTTPConnection:
        if self.scheme == "https":
            return http.client.HTTPSConnection(
                self.host, self.port, timeout=self.timeout, context=ssl.create_default_context()
            )
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)

    def _headers(self, extra: dict | None = None) -> dict:
        headers = {"Accept": "application/json", "User-Agent": "leaderboard-cli"}
        if self.token:
            headers["Authorization"] = f"Token {self.token}"
        return {**headers, **(extra or {})}

    def _path(self, path: str, params: dict | None = None) -> str:
        if path.startswith(("http://", "https://")):  # a `next` link from the server
            parts = urlsplit(path)
            path = parts.path + (f"?{parts.query}" if parts.query else "")
            return path
        query = f"?{urlencode(params, doseq=True)}" if params else ""
        return f"{self.prefix}{path}{query}"

    def _failed(self, exc: Exception) -> ConnectionFailed:
        reason = (
            exc.strerror
            if isinstance(exc, OSError) and exc.strerror
            else str(exc) or type(exc).__name__
        )
        if isinstance(exc, ConnectionRefusedError):
            reason = "connection refused"
        elif isinstance(exc, socket.timeout | TimeoutError):
            reason = "timed out"
        return ConnectionFailed(f"cannot reach {self.url}: {reason}")

    @staticmethod
    def _read(response: http.client.HTTPResponse):
        raw = response.read()
        text = raw.decode("utf-8", "replace")
        body = None
        if "json" in (response.getheader("Content-Type") or ""):
            try:
                body = json.loads(text)
            except ValueError:
                body = None
        if response.status >= 400:
            raise ApiError(response.status, body, text)
        return body if body is not None else text

    def request(
        self, method: str, path: str, *, params: dict | None = None, data: dict | None = None
    ):
        body = json.dumps(data).encode() if data is not None else None
        headers = self._headers({"Content-Type": "application/json"} if body else None)
        conn = self._connection()
        try:
            conn.request(method, self._path(path, params), body=body, headers=headers)
            return self._read(conn.getresponse())
        except (OSError, http.client.HTTPException) as exc:
            raise self._failed(exc) from None
        finally:
            conn.close()

    def get(self, path: str, **params):
        return self.request(
            "GET", path, params={k: v for k, v in params.items() if v is not None} or None
        )

    def post(self, path: str, data: dict | None = None):
        return self.request("POST", path, data=data)

    def pages(self, path: str, **params):
        """Every result of a paginated list, following ``next`` links."""
        page = self.get(path, **params)
        while True:
            yield from page.get("results", [])
            if not page.get("next"):
                return
            page = self.get(page["next"])

    def download(self, path: str, dest: str) -> tuple[int, str]:
        """GET ``path`` into the file ``dest``, streamed; returns its size and SHA-256. On an
        error nothing is left at ``dest``."""
        conn = self._connection()
        try:
            conn.request("GET", self._path(path), headers=self._headers())
            response = conn.getresponse()
            if response.status >= 400:
                self._read(response)  # raises the API's error
            digest, size = hashlib.sha256(), 0
            partial = f"{dest}.part"
            with open(partial, "wb") as out:
                while chunk := response.read(CHUNK):
                    out.write(chunk)
                    digest.update(chunk)
                    size += len(chunk)
            os.replace(partial, dest)
            return size, digest.hexdigest()
        except (OSError, http.client.HTTPException) as exc:
            with contextlib.suppress(OSError):
                os.remove(f"{dest}.part")
            raise self._failed(exc) from None
        finally:
            conn.close()

    # -- uploads ---------------------------------------------------------------------------------
    def upload(
        self,
        path: str,
        file_path: str,
        fields: dict[str, str],
        progress: Callable[[int, int], None] | None = None,
    ):
        """POST ``file_path`` as the multipart field ``file`` with ``fields``, streamed."""
        boundary = "leaderboard-" + secrets.token_hex(16)
        head = b"".join(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode()
            + value.encode("utf-8")
            + b"\r\n"
            for name, value in fields.items()
            if value is not None
        )
        file_name = os.path.basename(file_path).replace('"', "_")
        head += (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
            f'filename="{file_name}"\r\nContent-Type: application/octet-stream\r\n\r\n'
        ).encode()
        tail = f"\r\n--{boundary}--\r\n".encode()
        size = os.path.getsize(file_path)
        headers = self._headers(
            {
                "Content-Type": f"multipart/form-data; boundary={boundary}",
                "Content-Length": str(len(head) + size + len(tail)),
            }
        )
        conn = self._connection()
        try:
            conn.putrequest("POST", self._path(path), skip_accept_encoding=True)
            for name, value in headers.items():
                conn.putheader(name, value)
            conn.endheaders()
            # The server may answer early (e.g. too large) and stop reading: read its answer.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._send_body(conn, head, file_path, tail, size, progress)
            return self._read(conn.getresponse())
        except (OSError, http.client.HTTPException) as exc:
            raise self._failed(exc) from None
        finally:
            conn.close()

    @staticmethod
    def _send_body(conn, head: bytes, file_path: str, tail: bytes, size: int, progress) -> None:
        conn.send(head)
        sent = 0
        with open(file_path, "rb") as stream:
            while chunk := stream.read(CHUNK):
                conn.send(chunk)
                sent += len(chunk)
                if progress:
                    progress(sent, size)
        conn.send(tail)
