"""Drawing a reference sample's documents: seeded and recorded, every candidate of the drawn
documents (and only those) queued through the verification queue, one draw at a time; cancelling
a draw, and asking to settle its stuck candidates (taken only while every candidate in doubt is
stuck; the estimation does it: tests/evaluation/services/test_ev_reference_sample_settle.py)."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from reference_samples import complete_latest

from annotation.models import VerificationRequest
from annotation.services import (
    cancel_reference_sample,
    draw_reference_sample,
    settle_reference_sample,
)
from annotation.services.reference_sample import drawn_documents
from leaderboard.models import ReferenceSample, Task
from leaderboard.services.reference_candidates import ReferenceSampleError, upload_candidates

from pipeline_support import make_task

pytestmark = pytest.mark.django_db

DOCUMENTS = {f"doc{d}": [f"d{d}-{k}" for k in range(d % 3 + 1)] for d in range(12)}


@pytest.fixture
def organizer(no_broker):
    return get_user_model().objects.create_user("org")


@pytest.fixture
def task(organizer):
    task = make_task(judgments_per_item=2, gold_rate=0.0)
    task.organizers.add(organizer)
    lines = "".join(f"{key}\t{doc}\n" for doc, keys in DOCUMENTS.items() for key in keys)
    upload = io.BytesIO(lines.encode())
    upload.name = "candidates.tsv"
    upload_candidates(task=task, user=organizer, upload=upload)
    return task


def requested_keys(task) -> set[str]:
    return set(VerificationRequest.objects.filter(task=task).values_list("item__key", flat=True))


def test_a_draw_queues_exactly_the_drawn_documents_candidates(
    task, organizer, sent_messages, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        sample = draw_reference_sample(task=task, user=organizer, size=4, seed=7)
    assert sample.state == ReferenceSample.State.VERIFYING
    assert (sample.seed, sample.size, sample.n_documents) == (7, 4, 12)
    assert len(set(sample.documents)) == 4 and set(sample.documents) <= set(DOCUMENTS)
    expected = {key for doc in sample.documents for key in DOCUMENTS[doc]}
    assert requested_keys(task) == expected and sample.n_candidates == len(expected)
    assert set(
        VerificationRequest.objects.filter(task=task).values_list("judgments_required", flat=True)
    ) == {2}
    assert sample.created_by == organizer
    # The estimation will look at the sample's progress.
    assert sent_messages == [("evaluation.estimate_task", [task.pk])]


def test_the_seed_says_which_documents_are_drawn(task, organizer):
    sample = draw_reference_sample(task=task, user=organizer, size=5, seed=123)
    assert sample.documents == drawn_documents(list(DOCUMENTS), 5, 123)
    # The same seed, the same documents (whatever order the candidates came in); another, not.
    assert drawn_documents(list(reversed(DOCUMENTS)), 5, 123) == sample.documents
    assert drawn_documents(list(DOCUMENTS), 5, 124) != sample.documents


def test_without_a_seed_one_is_drawn_and_recorded(task, organizer):
    sample = draw_reference_sample(task=task, user=organizer, size=3)
    sample.refresh_from_db()
    assert sample.documents == drawn_documents(list(DOCUMENTS), 3, sample.seed)


def test_a_second_draw_is_refused_while_one_is_verified(task, organizer):
    first = draw_reference_sample(task=task, user=organizer, size=2, seed=1)
    before = requested_keys(task)
    with pytest.raises(ReferenceSampleError) as info:
        draw_reference_sample(task=task, user=organizer, size=3, seed=2)
    assert (info.value.code, info.value.http_status) == ("sample_in_progress", 409)
    assert info.value.extra == {"sample": first.pk}
    assert requested_keys(task) == before
    assert list(ReferenceSample.objects.values_list("pk", flat=True)) == [first.pk]
    # Once it is complete, a new draw may start.
    ReferenceSample.objects.filter(pk=first.pk).update(state=ReferenceSample.State.COMPLETE)
    assert draw_reference_sample(task=task, user=organizer, size=3, seed=2).pk != first.pk


@pytest.mark.parametrize(
    ("size", "seed", "message"),
    [
        (0, 1, "size must be a whole number of documents, at least 1"),
        ("3", 1, "size must be a whole number of documents, at least 1"),
        (True, 1, "size must be a whole number of documents, at least 1"),
        (13, 1, "size 13 is more than the 12 documents uploaded"),
        (2, -1, "seed must be a whole number from 0 to 4611686018427387903"),
        (2, 2**62, "seed must be a whole number from 0 to 4611686018427387903"),
    ],
)
def test_bad_sizes_and_seeds_are_refused(task, organizer, size, seed, message):
    with pytest.raises(ReferenceSampleError) as info:
        draw_reference_sample(task=task, user=organizer, size=size, seed=seed)
    assert (info.value.code, info.value.http_status, info.value.message) == (
        "invalid",
        400,
        message,
    )
    assert not ReferenceSample.objects.exists() and not requested_keys(task)


def test_nothing_to_draw_from(organizer):
    task = make_task(slug="empty")
    with pytest.raises(ReferenceSampleError) as info:
        draw_reference_sample(task=task, user=organizer, size=1)
    assert (info.value.code, info.value.http_status) == ("no_candidates", 409)


def test_a_closed_pool_task_draws_nothing(task, organizer):
    Task.objects.filter(pk=task.pk).update(kind=Task.Kind.CLOSED_POOL)
    task.refresh_from_db()
    with pytest.raises(ReferenceSampleError) as info:
        draw_reference_sample(task=task, user=organizer, size=1)
    assert info.value.code == "not_open_world"
    assert not requested_keys(task)


# Cancelling a sample still being verified.


def test_cancelling_a_verifying_sample_frees_the_task_for_a_new_draw(task, organizer):
    task.reference_version = 3
    task.save(update_fields=["reference_version"])
    sample = draw_reference_sample(task=task, user=organizer, size=2, seed=1)
    queued = requested_keys(task)
    cancelled = cancel_reference_sample(task=task, by=organizer)
    assert cancelled.pk == sample.pk
    sample.refresh_from_db()
    assert sample.state == ReferenceSample.State.CANCELLED
    assert sample.cancelled_by == organizer and sample.cancelled_at is not None
    # The queue has no way to withdraw a request: the sample's requests stay, nothing deleted.
    assert requested_keys(task) == queued
    # The reference sample is unchanged.
    task.refresh_from_db()
    assert task.reference_version == 3
    # A new draw is allowed.
    again = draw_reference_sample(task=task, user=organizer, size=3, seed=2)
    assert again.state == ReferenceSample.State.VERIFYING and again.pk != sample.pk


def test_cancelling_twice_is_a_no_op(task, organizer):
    sample = draw_reference_sample(task=task, user=organizer, size=2, seed=1)
    first = cancel_reference_sample(task=task, by=organizer)
    at = first.cancelled_at
    second = cancel_reference_sample(task=task, by=None)
    assert second.pk == sample.pk and second.state == ReferenceSample.State.CANCELLED
    sample.refresh_from_db()
    assert sample.cancelled_at == at and sample.cancelled_by == organizer


def test_a_complete_sample_cannot_be_cancelled(task, organizer):
    sample = draw_reference_sample(task=task, user=organizer, size=2, seed=1)
    ReferenceSample.objects.filter(pk=sample.pk).update(
        state=ReferenceSample.State.COMPLETE, reference_version=1
    )
    with pytest.raises(ReferenceSampleError) as info:
        cancel_reference_sample(task=task, by=organizer)
    assert info.value.code == "sample_complete" and info.value.http_status == 409
    sample.refresh_from_db()
    assert sample.state == ReferenceSample.State.COMPLETE


def test_nothing_drawn_nothing_to_cancel(task, organizer):
    with pytest.raises(ReferenceSampleError) as info:
        cancel_reference_sample(task=task, by=organizer)
    assert info.value.code == "no_sample" and info.value.http_status == 409


# Draws add up within a sampling frame; replacing the sample is explicit.
def keys_of(documents) -> list[str]:
    return [key for doc in documents for key in DOCUMENTS[doc]]


def test_a_further_draw_takes_documents_no_complete_draw_of_the_frame_took(task, organizer):
    first = draw_reference_sample(task=task, user=organizer, size=4, seed=7)
    complete_latest(task, keys_of(first.documents)[:2])
    second = draw_reference_sample(task=task, user=organizer, size=5, seed=7)
    left = sorted(set(DOCUMENTS) - set(first.documents))
    assert second.documents == drawn_documents(left, 5, 7)
    assert (second.n_documents, second.frame, second.replace) == (8, first.frame, False)
    assert requested_keys(task) == set(keys_of(first.documents + second.documents))
    complete_latest(task)
    with pytest.raises(ReferenceSampleError) as info:
        draw_reference_sample(task=task, user=organizer, size=4, seed=1)
    assert (info.value.code, info.value.http_status) == ("invalid", 400)
    assert info.value.message == "size 4 is more than the 3 documents not drawn yet"
    draw_reference_sample(task=task, user=organizer, size=3, seed=1)
    complete_latest(task)
    with pytest.raises(ReferenceSampleError) as info:
        draw_reference_sample(task=task, user=organizer, size=1, seed=1)
    assert (info.value.code, info.value.http_status) == ("all_drawn", 409)
    assert "every one of the 12 documents" in info.value.message


def test_replacing_a_sample_with_items_needs_a_confirmation(task, organizer):
    first = draw_reference_sample(task=task, user=organizer, size=4, seed=7)
    complete_latest(task, keys_of(first.documents)[:3])
    before = requested_keys(task)
    with pytest.raises(ReferenceSampleError) as info:
        draw_reference_sample(task=task, user=organizer, size=2, seed=1, replace=True)
    assert (info.value.code, info.value.http_status) == ("confirmation_needed", 409)
    assert "replaces the reference sample (3 items in" in info.value.message
    assert ReferenceSample.objects.count() == 1 and requested_keys(task) == before
    again = draw_reference_sample(
        task=task, user=organizer, size=12, seed=1, replace=True, confirm=True
    )
    # From every document, in a new frame that starts when it is complete.
    assert (again.n_documents, again.frame, again.replace) == (12, first.frame + 1, True)
    assert Task.objects.get(pk=task.pk).reference_frame == first.frame


def test_an_empty_sample_is_replaced_without_a_confirmation(task, organizer):
    draw_reference_sample(task=task, user=organizer, size=2, seed=7)
    complete_latest(task)  # nothing true
    again = draw_reference_sample(task=task, user=organizer, size=12, seed=1, replace=True)
    assert again.replace and again.n_documents == 12


def file(text: str) -> io.BytesIO:
    upload = io.BytesIO(text.encode())
    upload.name = "upload.tsv"
    return upload


def test_a_sample_uploaded_as_a_file_cannot_be_added_to(task, organizer):
    from leaderboard.services.reference import upload_reference

    upload_reference(task=task, user=organizer, upload=file("d0-0\tdoc0\n"))
    with pytest.raises(ReferenceSampleError) as info:
        draw_reference_sample(task=task, user=organizer, size=1, seed=1)
    assert (info.value.code, info.value.http_status) == ("cannot_extend", 409)
    assert "(1 item in 1 document) was uploaded as a file" in info.value.message
    assert "replace=true, confirm=true" in info.value.message
    assert not ReferenceSample.objects.exists()
    drawn = draw_reference_sample(task=task, user=organizer, size=1, replace=True, confirm=True)
    assert drawn.replace


def test_a_sample_drawn_from_candidates_replaced_since_cannot_be_added_to(task, organizer):
    first = draw_reference_sample(task=task, user=organizer, size=4, seed=7)
    complete_latest(task, keys_of(first.documents)[:1])
    lines = "".join(f"{k}\t{d}\n" for d, keys in DOCUMENTS.items() for k in keys)
    upload_candidates(task=task, user=organizer, upload=file(lines), confirm=True)
    with pytest.raises(ReferenceSampleError) as info:
        draw_reference_sample(task=task, user=organizer, size=1, seed=1)
    assert info.value.code == "cannot_extend"
    assert "was drawn from candidates that have been replaced since" in info.value.message


# Settling the stuck candidates: asked while every candidate in doubt is stuck, done by the
# estimation (the progress below is what the latest estimation recorded).
def stuck_draw(task, organizer, *, stuck=("d1-0",), awaiting=0) -> ReferenceSample:
    sample = draw_reference_sample(task=task, user=organizer, size=4, seed=1)
    unresolved = len(stuck) + awaiting
    ReferenceSample.objects.filter(pk=sample.pk).update(
        stuck=list(stuck), n_resolved=sample.n_candidates - unresolved
    )
    sample.refresh_from_db()
    return sample


def test_settling_is_asked_when_every_candidate_in_doubt_is_stuck(
    task, organizer, no_broker, django_capture_on_commit_callbacks
):
    sample = stuck_draw(task, organizer, stuck=("d1-0", "d2-1"))
    no_broker.clear()
    with django_capture_on_commit_callbacks(execute=True):
        asked = settle_reference_sample(task=task, by=organizer)
    assert asked.pk == sample.pk and asked.state == ReferenceSample.State.VERIFYING
    assert asked.settle_requested_by == organizer and asked.settle_requested_at is not None
    # The estimation decides them: one is asked for at once.
    assert no_broker == [("evaluation.estimate_task", [task.pk])]
    # Asking again changes nothing.
    again = settle_reference_sample(task=task, by=None)
    assert again.settle_requested_at == asked.settle_requested_at
    assert again.settle_requested_by == organizer


@pytest.mark.parametrize(
    "stuck, awaiting, code, says",
    [
        ((), 0, "nothing_stuck", "no candidate of the draw is stuck"),
        ((), 3, "nothing_stuck", "no candidate of the draw is stuck"),
        (("d1-0",), 1, "answers_pending", "1 candidate of the draw is not resolved yet"),
        (("d1-0",), 2, "answers_pending", "2 candidates of the draw are not resolved yet"),
    ],
)
def test_settling_is_refused_until_every_candidate_in_doubt_is_stuck(
    task, organizer, stuck, awaiting, code, says
):
    sample = stuck_draw(task, organizer, stuck=stuck, awaiting=awaiting)
    with pytest.raises(ReferenceSampleError) as info:
        settle_reference_sample(task=task, by=organizer)
    assert (info.value.code, info.value.http_status) == (code, 409)
    assert info.value.message.startswith(says) and "nothing was changed" in info.value.message
    assert info.value.extra == {"sample": sample.pk}
    sample.refresh_from_db()
    assert sample.settle_requested_at is None


@pytest.mark.parametrize(
    "state, says",
    [
        (None, "no reference sample has been drawn"),
        ("complete", "the latest draw is complete (reference version 1)"),
        ("cancelled", "the latest draw was cancelled"),
    ],
)
def test_settling_needs_a_draw_being_verified(task, organizer, state, says):
    if state is not None:
        sample = stuck_draw(task, organizer)
        ReferenceSample.objects.filter(pk=sample.pk).update(state=state, reference_version=1)
    with pytest.raises(ReferenceSampleError) as info:
        settle_reference_sample(task=task, by=organizer)
    assert (info.value.code, info.value.http_status) == ("no_draw_verifying", 409)
    assert info.value.message.startswith(says)
    assert not ReferenceSample.objects.exclude(settle_requested_at=None).exists()


def test_a_closed_pool_task_has_nothing_to_settle(organizer):
    pool = make_task(slug="pool", kind=Task.Kind.CLOSED_POOL)
    with pytest.raises(ReferenceSampleError) as info:
        settle_reference_sample(task=pool, by=organizer)
    assert info.value.code == "not_open_world"
