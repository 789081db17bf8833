"""Organizer uploads stay out of the web request (issue 29, finding N6).

What the probe saw: a 14 MB gold file answered 148 MB after seconds of parsing in the web
worker; one 100 MB line took 56 s; more than 250,000 gold keys answered 503. Target: the web
request answers at once with a few hundred bytes whatever the file, and the worker loads or
rejects it with at most 20 problems kept.

What it does, in this process on a fresh SQLite database (a temporary directory; the web
request through DRF's test client, the worker's job as the Celery task calls it):

1. A task with ``--items`` items (300,000) and its organizer.
2. A gold file of ``--bad-lines`` lines (600,000) naming no item: the upload's time and answer
   size, the worker's time, the problems kept and counted, the size of ``GET`` on the upload.
3. A gold file of every item: the same times, and what was loaded.
4. A file of one 100 MB line, and a gzip of identical 6-byte lines (30 MB decompressed): the
   refusal's time and answer size.

Usage::

    .venv/bin/python bench/organizer_uploads.py --json bench/results/organizer_uploads.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time

from _util import REPO, machine


def setup(directory: str) -> None:
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": f"sqlite:///{directory}/bench.sqlite3",
            "MEDIA_ROOT": f"{directory}/media",
            "DJANGO_SECRET_KEY": "bench-only-" + os.urandom(16).hex(),
            "API_THROTTLE_UPLOADS": "1000000/hour",
            "DJANGO_ALLOWED_HOSTS": "testserver",
        }
    )
    sys.path.insert(0, REPO)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def timed_upload(client, slug: str, name: str, body: bytes) -> dict:
    from django.core.files.uploadedfile import SimpleUploadedFile

    from annotation.services import load_organizer_upload

    started = time.perf_counter()
    response = client.post(
        f"/api/tasks/{slug}/gold/", {"file": SimpleUploadedFile(name, body)}, format="multipart"
    )
    row = {
        "file_bytes": len(body),
        "web_seconds": round(time.perf_counter() - started, 2),
        "status": response.status_code,
        "answer_bytes": len(response.content),
    }
    if response.status_code != 202:
        row["message"] = response.json()["error"]["message"]
        return row
    started = time.perf_counter()
    load_organizer_upload(response.json()["id"])
    row["worker_seconds"] = round(time.perf_counter() - started, 2)
    state = client.get(response["Location"])
    body_ = state.json()
    row.update(
        state=body_["state"],
        counts=body_["counts"],
        problems_kept=len(body_["problems"]),
        problem_count=body_["problem_count"],
        get_bytes=len(state.content),
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=300_000)
    parser.add_argument("--bad-lines", type=int, default=600_000)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        setup(directory)
        from django.contrib.auth import get_user_model
        from rest_framework.test import APIClient

        from leaderboard.models import Item, Task
        from leaderboard.services.tasks import create_task

        organizer = get_user_model().objects.create_user("org")
        task = create_task(slug="bench-gold", title="Bench", organizers=[organizer])
        Item.objects.bulk_create(
            [Item(task=task, key=f"k{i}", index=i) for i in range(args.items)], batch_size=5000
        )
        Task.objects.filter(pk=task.pk).update(n_items=args.items)
        client = APIClient()
        client.force_authenticate(organizer)
        bad = b"".join(b"nope-key-%08d\tcorrect\n" % i for i in range(args.bad_lines))
        good = b"".join(b"k%d\tcorrect\n" % i for i in range(args.items))
        rows = {
            "every_line_wrong": timed_upload(client, task.slug, "bad.tsv", bad),
            "every_item": timed_upload(client, task.slug, "gold.tsv", good),
            "one_100_mb_line": timed_upload(client, task.slug, "line.tsv", b"x" * (100 * 2**20)),
            "gzip_of_identical_lines": timed_upload(
                client, task.slug, "same.tsv.gz", gzip.compress(b"k\tcorrect\n" * 3_000_000)
            ),
        }
    result = {"machine": machine(), "args": vars(args), "results": rows}
    print(json.dumps(result, indent=1))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out, indent=1)


if __name__ == "__main__":
    main()
