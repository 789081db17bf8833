"""Judgments: idempotent by client id, one per (item, annotator), resolved once all asked are in."""

import uuid

import pytest
from django.contrib.auth import get_user_model

from annotation.models import Judgment, VerificationRequest
from annotation.services import JudgmentError, request_verification, submit_judgment
from annotation.services.judgments import number_judgments

from pipeline_support import PipelineDriver, add_items, annotator, make_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(monkeypatch):
    driver = PipelineDriver(monkeypatch)
    task = make_task(judgments_per_item=1)
    items = add_items(task, 4)
    request_verification(task=task, item_ids=[it.pk for it in items])
    return task, items, driver


def _req(item):
    return VerificationRequest.objects.get(item=item)


def test_first_counted_answer_resolves_and_the_next_reader_numbers_it(
    setup, django_capture_on_commit_callbacks
):
    task, items, driver = setup
    user = annotator(task)
    with django_capture_on_commit_callbacks(execute=True):
        out = submit_judgment(request_id=_req(items[0]).pk, annotator=user, answer="correct")
    assert out.created and out.resolved
    items[0].refresh_from_db()
    task.refresh_from_db()
    assert out.judgment.seq is None and items[0].verified_at is not None
    assert task.labels_version == 0 and task.estimate_pending
    assert driver.sent == [("evaluation.estimate_task", [task.pk])]
    assert number_judgments(task.pk) == 1
    out.judgment.refresh_from_db()
    assert out.judgment.seq == 1


def test_retry_with_the_same_client_id_stores_once(setup):
    task, items, _ = setup
    user = annotator(task)
    cid = uuid.uuid4()
    first = submit_judgment(
        request_id=_req(items[0]).pk, annotator=user, answer="incorrect", client_id=cid
    )
    again = submit_judgment(
        request_id=_req(items[0]).pk, annotator=user, answer="incorrect", client_id=str(cid)
    )
    assert first.created and not again.created
    assert again.judgment.pk == first.judgment.pk and Judgment.objects.count() == 1
    assert number_judgments(task.pk) == 1


def test_a_second_answer_on_the_same_item_is_refused(setup):
    task, items, _ = setup
    user = annotator(task)
    submit_judgment(request_id=_req(items[0]).pk, annotator=user, answer="cannot_tell")
    with pytest.raises(JudgmentError, match="already answered"):
        submit_judgment(request_id=_req(items[0]).pk, annotator=user, answer="correct")


def test_client_id_reused_for_another_item_is_refused(setup):
    task, items, _ = setup
    user = annotator(task)
    cid = uuid.uuid4()
    submit_judgment(request_id=_req(items[0]).pk, annotator=user, answer="correct", client_id=cid)
    with pytest.raises(JudgmentError, match="already used"):
        submit_judgment(
            request_id=_req(items[1]).pk, annotator=user, answer="correct", client_id=cid
        )


@pytest.mark.parametrize("bad, message", [("maybe", "unknown answer"), (None, "unknown answer")])
def test_unknown_answers_are_refused(setup, bad, message):
    task, items, _ = setup
    with pytest.raises(JudgmentError, match=message):
        submit_judgment(request_id=_req(items[0]).pk, annotator=annotator(task), answer=bad)


def test_non_annotators_and_unknown_requests_are_refused(setup):
    task, items, _ = setup
    outsider = get_user_model().objects.create(username="outsider")
    with pytest.raises(JudgmentError, match="not an annotator"):
        submit_judgment(request_id=_req(items[0]).pk, annotator=outsider, answer="correct")
    with pytest.raises(JudgmentError, match="no verification request"):
        submit_judgment(request_id=10**9, annotator=annotator(task), answer="correct")
    with pytest.raises(JudgmentError, match="UUID"):
        submit_judgment(
            request_id=_req(items[0]).pk,
            annotator=annotator(task),
            answer="correct",
            client_id="not-a-uuid",
        )


def test_cannot_tell_is_kept_but_not_counted(setup):
    task, items, _ = setup
    out = submit_judgment(
        request_id=_req(items[0]).pk, annotator=annotator(task), answer="cannot_tell"
    )
    assert not out.judgment.counted and not out.resolved
    assert _req(items[0]).state == "pending"


def test_two_judgments_per_item_resolve_with_both_in_whatever_they_say(setup):
    task, items, _ = setup
    task.judgments_per_item = 2
    task.save()
    req = _req(items[0])
    VerificationRequest.objects.filter(pk=req.pk).update(judgments_required=2)
    a, b = (annotator(task, name) for name in "ab")
    assert not submit_judgment(request_id=req.pk, annotator=a, answer="correct").resolved
    assert submit_judgment(request_id=req.pk, annotator=b, answer="incorrect").resolved
    assert _req(items[0]).judgments_required == 2


def test_late_answer_after_resolution_is_kept_uncounted(setup):
    task, items, _ = setup
    req = _req(items[0])
    submit_judgment(request_id=req.pk, annotator=annotator(task, "a"), answer="correct")
    late = submit_judgment(request_id=req.pk, annotator=annotator(task, "b"), answer="incorrect")
    assert late.created and not late.judgment.counted and not late.resolved
    assert late.judgment.seq is None
    assert number_judgments(task.pk) == 1
    late.judgment.refresh_from_db()
    assert late.judgment.seq is None  # never counted, never numbered


def test_request_verification_skips_items_already_requested(setup):
    task, items, _ = setup
    assert request_verification(task=task, item_ids=[items[0].pk]) == 0
    more = add_items(task, 2)
    assert request_verification(task=task, item_ids=[more[0].pk, items[1].pk]) == 1
