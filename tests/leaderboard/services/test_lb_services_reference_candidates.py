"""Reference candidates (documents and their candidate items): replaced whole, problems by line,
refused while a sample is being verified; the reference write path bumps the version once."""

from __future__ import annotations

import pytest

from leaderboard.models import Item, ReferenceCandidate, ReferenceItem, ReferenceSample, Task
from leaderboard.services.reference import replace_reference
from leaderboard.services.reference_candidates import (
    ReferenceSampleError,
    upload_candidates,
)
from leaderboard.services.runs import SubmissionError

pytestmark = pytest.mark.django_db


def candidate_rows(task) -> dict[str, str]:
    return dict(ReferenceCandidate.objects.filter(task=task).values_list("item__key", "document"))


def test_upload_creates_items_and_candidates(task, organizer, make_upload):
    loaded = upload_candidates(
        task=task,
        user=organizer,
        upload=make_upload("a\tdoc1\nb\tdoc1\nc\tdoc2\n", "cands.tsv"),
    )
    assert (loaded.candidates, loaded.documents) == (3, 2)
    assert candidate_rows(task) == {"a": "doc1", "b": "doc1", "c": "doc2"}
    task.refresh_from_db()
    assert task.n_items == 3 and task.reference_version == 0  # no reference sample yet


def test_json_lines_carry_payloads(task, organizer, make_upload):
    upload_candidates(
        task=task,
        user=organizer,
        upload=make_upload('{"key": "c", "document": "doc2", "payload": {"t": 1}}\n', "c.jsonl"),
    )
    assert candidate_rows(task) == {"c": "doc2"}
    assert Item.objects.get(task=task, key="c").payload == {"t": 1}


def test_a_new_upload_replaces_the_candidates(task, organizer, make_upload):
    upload_candidates(task=task, user=organizer, upload=make_upload("a\tdoc1\nb\tdoc2\n"))
    upload_candidates(task=task, user=organizer, upload=make_upload("b\tdoc3\n"))
    assert candidate_rows(task) == {"b": "doc3"}


@pytest.mark.parametrize(
    ("text", "problems"),
    [
        ("a\tdoc1\nb\n", [(2, "document missing: expected key<TAB>document")]),
        ("a\tdoc1\nb\t  \n", [(2, "document missing: expected key<TAB>document")]),
        ("a\tdoc1\nb\tdoc1\na\tdoc2\n", [(3, "duplicate key 'a' (first on line 1)")]),
    ],
)
def test_a_refused_file_names_its_lines_and_stores_nothing(
    task, organizer, make_upload, text, problems
):
    upload_candidates(task=task, user=organizer, upload=make_upload("z\tdoc0\n"))
    with pytest.raises(SubmissionError) as info:
        upload_candidates(task=task, user=organizer, upload=make_upload(text))
    exc = info.value
    assert exc.code == "rejected" and exc.http_status == 400
    assert [(p.line, p.message) for p in exc.problems] == problems
    assert candidate_rows(task) == {"z": "doc0"}
    assert list(Item.objects.filter(task=task).values_list("key", flat=True)) == ["z"]


def test_refused_while_a_sample_is_being_verified(task, organizer, make_upload):
    upload_candidates(task=task, user=organizer, upload=make_upload("a\tdoc1\n"))
    ReferenceSample.objects.create(task=task, seed=1, size=1, documents=["doc1"], n_documents=1)
    with pytest.raises(ReferenceSampleError) as info:
        upload_candidates(task=task, user=organizer, upload=make_upload("b\tdoc2\n"))
    assert (info.value.code, info.value.http_status) == ("sample_in_progress", 409)
    assert candidate_rows(task) == {"a": "doc1"}


def test_a_closed_pool_task_has_no_candidates(task, organizer, make_upload):
    Task.objects.filter(pk=task.pk).update(kind=Task.Kind.CLOSED_POOL)
    task.refresh_from_db()
    with pytest.raises(ReferenceSampleError) as info:
        upload_candidates(task=task, user=organizer, upload=make_upload("a\tdoc1\n"))
    assert (info.value.code, info.value.http_status) == ("not_open_world", 409)


def test_replace_reference_bumps_the_version_once(
    task, team, organizer, make_upload, sent_jobs, django_capture_on_commit_callbacks
):
    from leaderboard.models import Run

    upload_candidates(task=task, user=organizer, upload=make_upload("a\tdoc1\nb\tdoc2\n"))
    Run.objects.create(task=task, team=team, name="q", state=Run.State.QUEUED)
    ids = dict(Item.objects.filter(task=task).values_list("key", "pk"))
    with django_capture_on_commit_callbacks(execute=True):
        locked = Task.objects.select_for_update().get(pk=task.pk)
        version = replace_reference(task=locked, item_ids=[ids["b"]], groups=["doc2"])
    assert version == 1 == Task.objects.get(pk=task.pk).reference_version
    assert list(ReferenceItem.objects.values_list("item__key", "group")) == [("b", "doc2")]
    assert sent_jobs == [("evaluation.estimate_task", [task.pk])]


def test_each_upload_starts_a_new_sampling_frame(task, organizer, make_upload):
    assert task.reference_frame == 0
    upload_candidates(task=task, user=organizer, upload=make_upload("a\tdoc1\n"))
    upload_candidates(task=task, user=organizer, upload=make_upload("b\tdoc2\n"))
    assert Task.objects.get(pk=task.pk).reference_frame == 2 == task.reference_frame


def test_new_candidates_after_complete_draws_need_a_confirmation(task, organizer, make_upload):
    upload_candidates(task=task, user=organizer, upload=make_upload("a\tdoc1\nb\tdoc2\n"))
    ReferenceSample.objects.create(
        task=task, seed=1, size=1, documents=["doc1"], n_documents=2, frame=1, state="complete"
    )
    with pytest.raises(ReferenceSampleError) as info:
        upload_candidates(task=task, user=organizer, upload=make_upload("c\tdoc3\n"))
    assert (info.value.code, info.value.http_status) == ("confirmation_needed", 409)
    assert "1 complete draw, 1 document" in info.value.message
    assert "the next draw can then only replace the sample" in info.value.message
    assert candidate_rows(task) == {"a": "doc1", "b": "doc2"}
    assert Task.objects.get(pk=task.pk).reference_frame == 1
    upload_candidates(task=task, user=organizer, upload=make_upload("c\tdoc3\n"), confirm=True)
    assert candidate_rows(task) == {"c": "doc3"}
    assert Task.objects.get(pk=task.pk).reference_frame == 2


def test_a_verifying_draw_asks_for_an_estimation_when_something_may_settle_it(
    task, organizer, make_upload, sent_jobs, django_capture_on_commit_callbacks
):
    from leaderboard.services.reference_candidates import recheck_reference_sample

    with django_capture_on_commit_callbacks(execute=True):
        recheck_reference_sample(task)
    assert sent_jobs == []  # nothing being verified
    ReferenceSample.objects.create(task=task, seed=1, size=1, documents=["d"], n_documents=1)
    with django_capture_on_commit_callbacks(execute=True):
        recheck_reference_sample(task)
    assert sent_jobs == [("evaluation.estimate_task", [task.pk])]
