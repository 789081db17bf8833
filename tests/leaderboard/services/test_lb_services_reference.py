"""Reference samples: replaced whole, versioned, re-estimated; a refused file stores nothing."""

from __future__ import annotations

import pytest

from leaderboard.models import Item, ReferenceItem, Run, Task
from leaderboard.services.items import ensure_items
from leaderboard.services.reference import upload_reference
from leaderboard.services.runs import SubmissionError

pytestmark = pytest.mark.django_db


def reference_rows(task) -> dict[str, str]:
    return dict(ReferenceItem.objects.filter(task=task).values_list("item__key", "group"))


def test_upload_creates_items_and_the_sample(
    task, organizer, make_upload, sent_jobs, django_capture_on_commit_callbacks
):
    ensure_items(task=task, keys=["x", "b"])
    with django_capture_on_commit_callbacks(execute=True):
        n = upload_reference(
            task=task, user=organizer, upload=make_upload("a\tdoc1\nb\tdoc1\nc\n", "ref.tsv")
        )
    assert n == 3
    assert reference_rows(task) == {"a": "doc1", "b": "doc1", "c": ""}
    assert dict(Item.objects.filter(task=task).values_list("key", "index")) == {
        "x": 0,
        "b": 1,
        "a": 2,
        "c": 3,
    }
    task.refresh_from_db()
    assert (task.reference_version, task.n_items) == (1, 4)
    assert sent_jobs == []  # no runs yet: nothing to re-estimate


def test_a_new_upload_replaces_the_sample_and_asks_for_an_estimate(
    task, team, organizer, make_upload, sent_jobs, django_capture_on_commit_callbacks
):
    upload_reference(task=task, user=organizer, upload=make_upload("a\nb\n"))
    Run.objects.create(task=task, team=team, name="r", state=Run.State.REJECTED)
    upload_reference(task=task, user=organizer, upload=make_upload("b\nc\n"))
    assert sent_jobs == []  # only a rejected run
    Run.objects.create(task=task, team=team, name="q", state=Run.State.QUEUED)
    with django_capture_on_commit_callbacks(execute=True):
        n = upload_reference(
            task=task,
            user=organizer,
            upload=make_upload('{"key": "c", "group": "g", "payload": {"t": 1}}\n', "ref.jsonl"),
        )
    assert n == 1 and reference_rows(task) == {"c": "g"}
    assert Item.objects.get(task=task, key="c").payload == {"t": 1}
    assert task.reference_version == 3
    assert sent_jobs == [("evaluation.estimate_task", [task.pk])]
    assert Task.objects.get(pk=task.pk).estimate_pending


def test_a_refused_file_stores_nothing(task, organizer, make_upload, sent_jobs):
    upload_reference(task=task, user=organizer, upload=make_upload("a\tg\n"))
    with pytest.raises(SubmissionError) as info:
        upload_reference(task=task, user=organizer, upload=make_upload("b\tg\nb\th\n"))
    exc = info.value
    assert exc.code == "rejected" and exc.run is None
    assert exc.message == "rejected: 1 problem (first: line 2: duplicate key 'b' (first on line 1))"
    assert reference_rows(task) == {"a": "g"}
    assert list(Item.objects.filter(task=task).values_list("key", flat=True)) == ["a"]
    task.refresh_from_db()
    assert task.reference_version == 1


def test_too_large(task, organizer, make_upload):
    task.max_upload_bytes = 10
    with pytest.raises(SubmissionError) as info:
        upload_reference(task=task, user=organizer, upload=make_upload("a-long-key\tgroup\n"))
    assert info.value.code == "too_large"
    assert not ReferenceItem.objects.exists()


def test_a_file_is_refused_while_a_draw_is_verified_and_starts_a_new_frame(
    task, organizer, make_upload
):
    from leaderboard.models import ReferenceSample
    from leaderboard.services.reference_candidates import ReferenceSampleError

    upload_reference(task=task, user=organizer, upload=make_upload("a\tg\n"))
    assert Task.objects.get(pk=task.pk).reference_frame == 1
    ReferenceSample.objects.create(task=task, seed=1, size=1, documents=["d"], n_documents=1)
    with pytest.raises(ReferenceSampleError) as info:
        upload_reference(task=task, user=organizer, upload=make_upload("b\tg\n"))
    assert (info.value.code, info.value.http_status) == ("sample_in_progress", 409)
    assert reference_rows(task) == {"a": "g"}
    assert Task.objects.get(pk=task.pk).reference_version == 1
