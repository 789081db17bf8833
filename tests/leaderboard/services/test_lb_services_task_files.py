"""A task's data files: added with their size and SHA-256 under a storage name of the
platform's, changed (listing, or content under the same id), deleted; refused whole when too
large, empty or one too many, leaving nothing stored."""

from __future__ import annotations

import hashlib
import io

import pytest
from django.core.files.storage import default_storage

from leaderboard.models import TaskFile
from leaderboard.services.task_files import (
    TaskFileError,
    add_task_file,
    change_task_file,
    delete_task_file,
)
from site_platform.errors import InvalidFields

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media_root")]

BODY = b"key\tpayload\n" * 100


def stored_files(task) -> list[str]:
    folder = f"task-files/{task.pk}"
    return default_storage.listdir(folder)[1] if default_storage.exists(folder) else []


def add(task, organizer, body=BODY, name="items.tsv", **fields):
    return add_task_file(
        task=task, user=organizer, upload=io.BytesIO(body), file_name=name, **fields
    )


def test_a_file_is_stored_with_its_size_and_digest(task, organizer):
    added = add(task, organizer, kind="sample_run", description="the format")
    assert (added.size, added.sha256) == (len(BODY), hashlib.sha256(BODY).hexdigest())
    assert (added.file_name, added.title, added.kind) == ("items.tsv", "items.tsv", "sample_run")
    assert added.uploaded_by == organizer
    assert added.stored.startswith(f"task-files/{task.pk}/") and "items" not in added.stored
    with default_storage.open(added.stored) as f:
        assert f.read() == BODY


def test_gzip_data_counts_as_stored_not_decompressed(task, organizer, settings):
    import gzip

    settings.TASK_FILE_MAX_BYTES = 10_000
    body = gzip.compress(b"0" * 1_000_000)  # 1 MB inflated, ~1 KB stored
    added = add(task, organizer, body=body, name="big.tsv.gz")
    assert added.size == len(body) < 10_000


def test_the_uploaded_name_never_reaches_the_storage_path(task, organizer):
    added = add(task, organizer, name="../../etc/pass\x00wd\\..\\evil.sh")
    assert added.file_name == "evil.sh"
    assert ".." not in added.stored and "evil" not in added.stored


def test_a_file_over_the_limit_is_refused_and_nothing_stays(task, organizer, settings):
    settings.TASK_FILE_MAX_BYTES = 1000
    with pytest.raises(TaskFileError) as info:
        add(task, organizer, body=b"x" * 1001)
    assert (info.value.code, info.value.http_status) == ("too_large", 413)
    assert "1000 bytes" in info.value.message or "1,000 bytes" in info.value.message
    assert stored_files(task) == [] and not TaskFile.objects.exists()


def test_a_stream_over_the_limit_is_stopped_as_it_is_copied(task, organizer, settings):
    settings.TASK_FILE_MAX_BYTES = 1000

    class Unsized(io.BytesIO):
        size = None  # as a stream whose size is not declared

    with pytest.raises(TaskFileError) as info:
        add_task_file(task=task, user=organizer, upload=Unsized(b"x" * 5000), file_name="a.txt")
    assert info.value.code == "too_large"
    assert stored_files(task) == []


def test_an_empty_file_is_refused(task, organizer):
    with pytest.raises(TaskFileError) as info:
        add(task, organizer, body=b"")
    assert (info.value.code, info.value.http_status) == ("empty_file", 400)
    assert stored_files(task) == []


def test_a_file_without_a_name_is_refused(task, organizer):
    with pytest.raises(TaskFileError) as info:
        add(task, organizer, name="")
    assert info.value.code == "missing_file"


def test_one_file_too_many_is_refused(task, organizer, settings):
    settings.TASK_FILES_MAX = 2
    add(task, organizer, name="a.tsv")
    add(task, organizer, name="b.tsv")
    with pytest.raises(TaskFileError) as info:
        add(task, organizer, name="c.tsv")
    assert (info.value.code, info.value.http_status) == ("too_many_files", 409)
    assert len(stored_files(task)) == 2


@pytest.mark.parametrize(
    ("fields", "field"),
    [({"kind": "video"}, "kind"), ({"title": "t" * 201}, "title")],
)
def test_invalid_listing_fields_are_refused_by_name(task, organizer, fields, field):
    with pytest.raises(InvalidFields) as info:
        add(task, organizer, **fields)
    assert field in info.value.field_errors
    assert stored_files(task) == []


def test_a_change_of_a_field_a_file_does_not_have_is_refused(task, organizer):
    added = add(task, organizer)
    with pytest.raises(InvalidFields) as info:
        change_task_file(task_file=added, user=organizer, colour="red")
    assert "colour" in info.value.field_errors


def test_changing_the_listing_keeps_the_content(task, organizer):
    added = add(task, organizer)
    changed = change_task_file(task_file=added, user=organizer, title="Items", kind="other")
    changed.refresh_from_db()
    assert (changed.title, changed.kind, changed.sha256) == ("Items", "other", added.sha256)
    # An empty title keeps the one it has.
    assert change_task_file(task_file=changed, user=organizer, title="").title == "Items"


def test_replacing_the_content_keeps_the_id_and_deletes_the_old_content_on_commit(
    task, organizer, django_capture_on_commit_callbacks
):
    added = add(task, organizer)
    old = added.stored
    with django_capture_on_commit_callbacks(execute=True):
        changed = change_task_file(
            task_file=added, user=organizer, upload=io.BytesIO(b"new\n"), file_name="v2.tsv"
        )
    assert changed.pk == added.pk and changed.title == "items.tsv"
    assert (changed.file_name, changed.size) == ("v2.tsv", 4)
    assert changed.sha256 == hashlib.sha256(b"new\n").hexdigest()
    assert not default_storage.exists(old) and default_storage.exists(changed.stored)


def test_a_refused_replacement_changes_nothing(task, organizer, settings):
    added = add(task, organizer)
    settings.TASK_FILE_MAX_BYTES = 10
    with pytest.raises(TaskFileError):
        change_task_file(
            task_file=added, user=organizer, upload=io.BytesIO(b"x" * 11), file_name="x.tsv"
        )
    added.refresh_from_db()
    assert added.file_name == "items.tsv" and stored_files(task) == [added.stored.split("/")[-1]]


def test_deleting_removes_the_row_and_its_content(
    task, organizer, django_capture_on_commit_callbacks
):
    added = add(task, organizer)
    with django_capture_on_commit_callbacks(execute=True):
        delete_task_file(task_file=added)
    assert not TaskFile.objects.exists() and stored_files(task) == []
