"""Organizers' uploads go the way runs go (``leaderboard.services.organizer_uploads``): the web
request only stores the file under its caps (size, lines, line length; a refused file keeps
nothing) and records it ``received``, asking a worker on commit; the worker moves it to
``parsing`` and to ``loaded`` (all of it, with counts) or ``rejected`` (its first 20 problems and
their total, nothing of it stored); a retried or redelivered message is harmless; the stored
files are deleted once it is settled."""

from __future__ import annotations

import gzip
import io
from datetime import timedelta

import pytest
from django.core.files.storage import default_storage

from annotation.models import GoldItem
from annotation.services import load_organizer_upload
from leaderboard.models import Item, OrganizerUpload, ReferenceItem, Task
from leaderboard.services import runs as runs_service
from leaderboard.services.organizer_uploads import receive_upload
from leaderboard.services.pool import PoolError, upload_pool
from leaderboard.services.runs import SubmissionError

from pipeline_support import add_items, make_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def task(organizer):
    task = make_task(slug="up", title="Uploads")
    task.organizers.add(organizer)
    add_items(task, 3)  # k0 k1 k2
    return task


@pytest.fixture
def pool_task(organizer):
    task = make_task(slug="cp", title="Pool", kind=Task.Kind.CLOSED_POOL)
    task.organizers.add(organizer)
    return task


def stored_files(media_root) -> list[str]:
    return sorted(p.name for p in media_root.rglob("*") if p.is_file())


def receive(task, user, kind: str, body: bytes, name: str = "f.tsv", **fields):
    return receive_upload(
        task=task, user=user, kind=kind, upload=io.BytesIO(body), file_name=name, **fields
    )


def loaded(upload: OrganizerUpload) -> OrganizerUpload:
    load_organizer_upload(upload.pk)
    upload.refresh_from_db()
    return upload


def test_a_received_upload_is_stored_not_read_and_a_worker_is_asked_on_commit(
    task, organizer, media_root, sent_jobs, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        upload = receive(task, organizer, "gold", b"k0\tcorrect\n", "gold.tsv")
    assert (upload.state, upload.kind, upload.file_name, upload.n_bytes) == (
        "received",
        "gold",
        "gold.tsv",
        11,
    )
    assert upload.message == "received gold.tsv (11 bytes); waiting to be loaded"
    assert sent_jobs == [("evaluation.load_upload", [upload.pk])]
    assert default_storage.exists(upload.stored) and not GoldItem.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        load_organizer_upload(upload.pk)
    upload.refresh_from_db()
    assert (upload.state, upload.counts) == (
        "loaded",
        {"created": 1, "updated": 0, "unchanged": 0},
    )
    assert upload.message == "loaded: 1 created, 0 updated, 0 unchanged"
    assert upload.stored == "" and stored_files(media_root) == []  # deleted once settled
    assert GoldItem.objects.count() == 1


@pytest.mark.parametrize(
    ("caps", "body", "message"),
    [
        ({"max_upload_bytes": 16}, b"k0\tcorrect\nk1\tincorrect\n", "larger than the limit"),
        ({"lines": 2}, b"k0\tcorrect\n\n\n", "more than the limit of 2 lines"),
        ({"line_bytes": 12}, b"k0\tcorrect\nk1\tincorrect-and-long\n", "line 2: is longer than"),
    ],
)
def test_a_file_over_a_cap_is_refused_and_nothing_is_kept(
    task, organizer, media_root, settings, monkeypatch, caps, body, message
):
    # The line cap is the site's unless the task's runs may have more lines (below).
    monkeypatch.setattr(runs_service, "TRAILING_BLANK_LINES", 0)
    Task.objects.filter(pk=task.pk).update(
        max_upload_bytes=caps.get("max_upload_bytes", 10**6), max_predictions_per_run=1
    )
    task.refresh_from_db()
    settings.ORGANIZER_UPLOAD_MAX_LINES = caps.get("lines", 100)
    settings.ORGANIZER_UPLOAD_MAX_LINE_BYTES = caps.get("line_bytes", 100)
    with pytest.raises(SubmissionError) as info:
        receive(task, organizer, "gold", body)
    assert info.value.code == "too_large" and info.value.http_status == 413
    assert message in info.value.message and info.value.message.endswith("nothing was stored")
    assert stored_files(media_root) == [] and not OrganizerUpload.objects.exists()


def test_a_file_in_the_wrong_format_is_refused_as_it_is_received(task, organizer, media_root):
    with pytest.raises(SubmissionError) as info:
        receive(task, organizer, "gold", b"k0,correct\nk1,incorrect\n")
    assert info.value.code == "wrong_format" and len(info.value.problems) == 1
    assert stored_files(media_root) == [] and not OrganizerUpload.objects.exists()


def test_what_the_task_cannot_take_is_refused_before_anything_is_stored(
    task, pool_task, organizer, media_root
):
    with pytest.raises(PoolError) as info:
        receive(task, organizer, "pool", b"a\n")
    assert info.value.code == "not_closed_pool"
    assert stored_files(media_root) == [] and not OrganizerUpload.objects.exists()


def test_a_problem_ful_file_keeps_its_first_20_problems_and_their_total(
    task, organizer, media_root
):
    body = b"".join(b"k%d\tmaybe\n" % i for i in range(5000))  # 5,000 bad answers
    upload = loaded(receive(task, organizer, "gold", body))
    assert (upload.state, upload.problem_count, len(upload.problems)) == ("rejected", 5000, 20)
    assert [p["line"] for p in upload.problems] == list(range(1, 21))
    assert upload.message.startswith("rejected: 5,000 problems (first: line 1: answer must be")
    assert not GoldItem.objects.exists() and upload.stored == ""
    # The parsers' own problems too (a pool's duplicate keys): capped, all counted.
    pool = make_task(slug="cp2", title="P", kind=Task.Kind.CLOSED_POOL)
    pool.organizers.add(organizer)
    upload = loaded(receive(pool, organizer, "pool", b"a\n" * 300))
    assert (upload.state, upload.problem_count, len(upload.problems)) == ("rejected", 299, 20)
    assert not Item.objects.filter(task=pool).exists()


def test_a_load_is_all_or_nothing_and_a_task_that_changed_since_rejects_it(
    pool_task, organizer, media_root
):
    first = receive(pool_task, organizer, "pool", b"a\nb\n")
    # One pool upload at a time (its items are stored in several transactions).
    with pytest.raises(PoolError) as info:
        receive(pool_task, organizer, "pool", b"c\n")
    assert info.value.code == "pool_upload_waiting" and f"upload {first.pk}" in str(info.value)
    # The pool uploaded another way (the command line) before the worker loads this one.
    upload_pool(task=pool_task, user="manage.py", upload=io.BytesIO(b"c\n"))
    first = loaded(first)
    assert first.state == "rejected" and first.problem_count == 0
    assert first.message.startswith("task 'cp' already has its pool (1 item")
    assert list(Item.objects.filter(task=pool_task).values_list("key", flat=True)) == ["c"]


def test_the_state_machine_and_a_retry_or_a_redelivered_message(task, organizer, media_root):
    upload = receive(task, organizer, "reference", b"k0\tdoc1\nnew\tdoc2\n")
    # A worker died while parsing: the redelivered message starts over and loads it once.
    OrganizerUpload.objects.filter(pk=upload.pk).update(state="parsing")
    assert load_organizer_upload(upload.pk) == "loaded"
    upload.refresh_from_db()
    assert upload.counts == {"items": 2, "documents": 2, "reference_version": 1}
    # A retried or duplicated message finds it settled: nothing is loaded again.
    assert load_organizer_upload(upload.pk) == "loaded"
    task.refresh_from_db()
    assert task.reference_version == 1 and ReferenceItem.objects.count() == 2
    assert load_organizer_upload(10**6) == "missing"


def test_a_stored_file_lost_before_it_is_read_rejects_the_upload(task, organizer, media_root):
    upload = receive(task, organizer, "gold", b"k0\tcorrect\n")
    default_storage.delete(upload.stored)
    upload = loaded(upload)
    assert upload.state == "rejected"
    assert upload.problems == [
        {"line": None, "message": "the stored file was lost before it was read: upload it again"}
    ]


def test_reference_candidates_keep_their_confirmation_for_the_worker(task, organizer, media_root):
    upload = loaded(
        receive(task, organizer, "candidates", b"k0\tdoc1\nk1\tdoc2\n", options={"confirm": True})
    )
    assert (upload.options, upload.counts) == ({"confirm": True}, {"candidates": 2, "documents": 2})


def test_the_watchdog_sends_a_stuck_upload_again_then_rejects_it(
    task, organizer, media_root, settings, sent_jobs, django_capture_on_commit_callbacks
):
    from evaluation.services.watchdog import watchdog

    settings.PIPELINE_STUCK_SECONDS, settings.PIPELINE_MAX_ATTEMPTS = 60, 2
    upload = receive(task, organizer, "gold", b"k0\tcorrect\n")  # its message was lost
    received_at = upload.updated_at
    assert watchdog(now=received_at + timedelta(seconds=30))["uploads"] == 0  # not stuck yet
    later = received_at
    for attempt in (1, 2):
        later += timedelta(seconds=61)
        with django_capture_on_commit_callbacks(execute=True):
            assert watchdog(now=later)["uploads"] == 1
        upload.refresh_from_db()
        assert (upload.state, upload.attempts) == ("received", attempt)
    assert sent_jobs == [("evaluation.load_upload", [upload.pk])] * 2
    later += timedelta(seconds=61)
    assert watchdog(now=later)["uploads_failed"] == 1
    upload.refresh_from_db()
    assert upload.state == "rejected" and "not loaded after 3 attempts" in upload.message
    assert not GoldItem.objects.exists()


def test_a_gzipped_gold_file_is_read_decompressed(task, organizer, media_root):
    body = gzip.compress(b"k0\tcorrect\nk1\tincorrect\n")
    assert loaded(receive(task, organizer, "gold", body, "gold.tsv.gz")).counts["created"] == 2
    cut = loaded(receive(task, organizer, "gold", gzip.compress(b"k2\tcorrect\n" * 50)[:-12]))
    assert cut.state == "rejected"
    assert cut.problems[0]["message"] == "the gzip data is corrupt or cut short here"
    assert GoldItem.objects.count() == 2
