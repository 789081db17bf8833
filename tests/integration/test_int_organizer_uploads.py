"""Organizers' uploads through the real worker: what a web request receives (a committed
``received`` upload, its message on Redis) is loaded by the Celery worker process (``loaded``
with its counts, or ``rejected`` with its first 20 problems and their total), and the stored
file is gone once it is settled. The API and pages around it: tests/leaderboard/api/
test_lb_api_organizer_uploads.py; a whole task built through the API: test_int_outside_checks.py."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.files.storage import default_storage

from annotation.models import GoldItem
from leaderboard.models import Item, OrganizerUpload, Task
from leaderboard.services.organizer_uploads import receive_upload

from pipeline_support import add_items, make_task

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def settled(upload: OrganizerUpload, wait_for) -> OrganizerUpload:
    def done():
        upload.refresh_from_db()
        return upload if upload.state in OrganizerUpload.SETTLED else None

    return wait_for(done, timeout=60, interval=0.1, message=f"upload {upload.pk} settled")


def test_the_worker_loads_or_rejects_what_the_web_received(celery_worker, wait_for):
    organizer = get_user_model().objects.create_user("org")
    task = make_task(slug="int-up", title="Uploads")
    add_items(task, 3)
    bad = b"".join(b"missing-%d\tcorrect\n" % i for i in range(100))
    rejected = receive_upload(
        task=task, user=organizer, kind="gold", upload=io.BytesIO(bad), file_name="bad.tsv"
    )
    stored = rejected.stored
    rejected = settled(rejected, wait_for)
    assert (rejected.state, rejected.problem_count, len(rejected.problems)) == ("rejected", 100, 20)
    assert rejected.problems[0] == {
        "line": 1,
        "message": "no item with key 'missing-0' in task int-up",
    }
    assert not default_storage.exists(stored) and not GoldItem.objects.exists()
    good = receive_upload(
        task=task,
        user=organizer,
        kind="gold",
        upload=io.BytesIO(b"k0\tcorrect\nk1\tincorrect\n"),
        file_name="gold.tsv",
    )
    good = settled(good, wait_for)
    assert (good.state, good.counts) == ("loaded", {"created": 2, "updated": 0, "unchanged": 0})
    assert GoldItem.objects.count() == 2

    pool = make_task(slug="int-pool", title="Pool", kind=Task.Kind.CLOSED_POOL)
    loaded = receive_upload(
        task=pool,
        user=organizer,
        kind="pool",
        upload=io.BytesIO(b"a\nb\nc\n"),
        file_name="pool.tsv",
        payloads=io.BytesIO(b'{"key": "b", "payload": {"t": 1}}\n'),
        payloads_name="p.jsonl",
    )
    loaded = settled(loaded, wait_for)
    assert (loaded.state, loaded.counts) == ("loaded", {"items": 3})
    assert Item.objects.get(task=pool, key="b").payload == {"t": 1}
