"""Undo: one's own last answer, within the window, whatever the item's state: it changes the
task's judgment set and re-opens the item's request."""

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Assignment, GoldAnswer, GoldItem, Judgment, VerificationRequest
from annotation.services import (
    JudgmentError,
    answer_assignment,
    claim_assignments,
    pause_annotator,
    undo_answer,
)
from annotation.services.judgments import number_judgments
from leaderboard.models import Item

from pipeline_support import annotator, requested_queue

pytestmark = pytest.mark.django_db


def lease_for(task, user):
    return claim_assignments(task=task, annotator=user).assignments[0]


def answer(user, lease, value="correct"):
    return answer_assignment(
        annotator=user, token=lease.token, client_id=uuid.uuid4(), answer=value
    )


def code_of(fn):
    with pytest.raises(JudgmentError) as exc:
        fn()
    return exc.value.code


def test_undo_withdraws_the_answer_restores_counts_and_leases_the_item_again():
    task, _ = requested_queue(3, judgments=2)
    user = annotator(task)
    lease = lease_for(task, user)
    out = answer(user, lease, "correct")
    assert VerificationRequest.objects.get(pk=lease.request_id).judgments_counted == 1
    undone = undo_answer(annotator=user, client_id=out.record.client_id)
    judgment = Judgment.objects.get(pk=out.record.pk)
    assert judgment.withdrawn_at is not None and not judgment.counted  # kept: audit trail
    req = VerificationRequest.objects.get(pk=lease.request_id)
    assert req.judgments_counted == 0
    fresh = undone.assignment
    assert fresh.request_id == lease.request_id and fresh.token != lease.token
    assert fresh.state == "active" and fresh.expires_at > timezone.now()
    # Replaying the undo gives the same fresh lease back.
    assert undo_answer(annotator=user, client_id=out.record.client_id).assignment.pk == fresh.pk
    # The item can be answered again, and counts once.
    again = answer(user, fresh, "incorrect")
    assert again.counted
    assert VerificationRequest.objects.get(pk=lease.request_id).judgments_counted == 1
    assert Judgment.objects.filter(request_id=lease.request_id, withdrawn_at=None).count() == 1


def test_undo_after_the_window_is_refused(settings):
    task, _ = requested_queue(3, judgments=2)
    user = annotator(task)
    out = answer(user, lease_for(task, user))
    Judgment.objects.filter(pk=out.record.pk).update(
        created_at=timezone.now() - timedelta(seconds=settings.ANNOTATION_UNDO_SECONDS + 1)
    )
    assert (
        code_of(lambda: undo_answer(annotator=user, client_id=out.record.client_id))
        == "undo_expired"
    )


def test_only_the_last_answer_can_be_undone_and_only_by_its_author():
    task, _ = requested_queue(3, judgments=2)
    a, b = annotator(task, "a"), annotator(task, "b")
    first = answer(a, lease_for(task, a))
    second = answer(a, lease_for(task, a))
    assert (
        code_of(lambda: undo_answer(annotator=a, client_id=first.record.client_id))
        == "not_last_answer"
    )
    assert (
        code_of(lambda: undo_answer(annotator=b, client_id=second.record.client_id)) == "not_found"
    )
    assert code_of(lambda: undo_answer(annotator=a, client_id=uuid.uuid4())) == "not_found"
    undo_answer(annotator=a, client_id=second.record.client_id)
    # With the last one withdrawn, the one before is the last now.
    undo_answer(annotator=a, client_id=first.record.client_id)


def test_an_answer_that_completed_the_item_is_undone_like_any_other():
    # The engine reads the judgment set of a version: taking an answer back only changes the
    # set (the withdrawal takes the next version), the item waits for an answer again, and what
    # was planned or estimated before stays reproducible from its version.
    task, _ = requested_queue(1, judgments=1)
    user = annotator(task)
    out = answer(user, lease_for(task, user))
    assert out.resolved
    assert number_judgments(task.pk) == 1  # an engine job read it
    undo = undo_answer(annotator=user, client_id=out.record.client_id)
    task.refresh_from_db()
    withdrawn = Judgment.objects.get()
    assert withdrawn.withdrawn_at is not None and not withdrawn.counted
    assert (withdrawn.seq, withdrawn.withdrawn_seq, task.labels_version) == (1, 2, 2)
    request = VerificationRequest.objects.get()
    assert request.state == "pending" and request.judgments_counted == 0
    assert request.resolved_at is None and undo.assignment.request_id == request.pk
    # No counted judgment is left: the item is no longer verified.
    assert Item.objects.get(pk=request.item_id).verified_at is None
    assert answer(user, undo.assignment, "incorrect").resolved


def test_undoing_one_of_two_judgments_keeps_the_other_and_asks_for_one_again():
    task, items = requested_queue(1, judgments=2)
    a, b, c = annotator(task, "a"), annotator(task, "b"), annotator(task, "c")
    first = answer(a, lease_for(task, a), "correct")
    second = answer(b, lease_for(task, b), "incorrect")
    assert second.resolved
    assert number_judgments(task.pk) == 1
    undo_answer(annotator=b, client_id=second.record.client_id)  # version 2
    request = VerificationRequest.objects.get()
    assert (request.state, request.judgments_counted, request.judgments_required) == (
        "pending",
        1,
        2,
    )
    assert Item.objects.get(pk=items[0].pk).verified_at == first.record.created_at
    # b holds the fresh lease on the free slot; c gets the item once b's lease is gone.
    assert claim_assignments(task=task, annotator=c).status == "empty"
    Assignment.objects.filter(annotator=b, state="active").update(state="released")
    assert answer(c, lease_for(task, c), "correct").resolved
    assert number_judgments(task.pk) == 3
    live = Judgment.objects.filter(withdrawn_at=None, counted=True).order_by("seq")
    assert [(j.annotator.username, j.seq) for j in live] == [("a", 1), ("c", 3)]


def test_undoing_a_skip_lets_the_annotator_answer_the_item():
    task, _ = requested_queue(1, judgments=1)
    user = annotator(task)
    lease = lease_for(task, user)
    skip = answer(user, lease, "cannot_tell")
    assert claim_assignments(task=task, annotator=user).status == "empty"
    fresh = undo_answer(annotator=user, client_id=skip.record.client_id).assignment
    assert fresh.request_id == lease.request_id
    assert answer(user, fresh, "correct").counted
    # A skip asks for nothing: the answer after the undo completes the item.
    req = VerificationRequest.objects.get()
    assert req.judgments_required == 1 and req.state == "resolved"


def test_undo_of_a_gold_answer_withdraws_it_and_serves_the_gold_item_again():
    task, items = requested_queue(2, judgments=1, gold_rate=1.0)  # every slot gold, if any is left
    gold = GoldItem.objects.create(task=task, item=items[1], answer=True)
    user = annotator(task)
    got = claim_assignments(task=task, annotator=user, count=2).assignments
    gold_lease = next(a for a in got if a.gold_id)
    out = answer(user, gold_lease, "incorrect")
    assert isinstance(out.record, GoldAnswer) and out.record.correct is False
    undone = undo_answer(annotator=user, client_id=out.record.client_id)
    assert undone.assignment.gold_id == gold.pk
    assert GoldAnswer.objects.get().withdrawn_at is not None
    assert Assignment.objects.filter(gold=gold, state="active").count() == 1


def test_what_an_answer_after_an_undo_tells_never_depends_on_others_answers():
    # The probe: with two judgments required, what undo and the next answer said told whether
    # the other annotator had answered (and so what). Only the annotator's own acts show.
    task, _ = requested_queue(1, judgments=2)
    a, b, c = annotator(task, "a"), annotator(task, "b"), annotator(task, "c")
    la, lb = lease_for(task, a), lease_for(task, b)
    skip = answer(a, la, "cannot_tell")  # a's slot is free again...
    lc = lease_for(task, c)  # ...and c takes it
    fresh = undo_answer(annotator=a, client_id=skip.record.client_id).assignment
    assert fresh is not None and fresh.request_id == la.request_id
    answer(b, lb, "correct")
    assert answer(c, lc, "incorrect").resolved
    after = answer(a, fresh, "correct")
    assert after.counted and after.message == ""  # as if b and c had not answered yet
    # The request never takes more judgments than it asked for: a's is kept, uncounted.
    request = VerificationRequest.objects.get()
    assert (request.judgments_counted, request.judgments_required) == (2, 2)
    stored = Judgment.objects.get(pk=after.record.pk)
    assert not stored.counted and not stored.late and stored.seq is None
    # Taking it back is allowed as for any answer and changes nothing the engine reads.
    undo_answer(annotator=a, client_id=after.record.client_id)
    request.refresh_from_db()
    assert (request.state, request.judgments_counted) == ("resolved", 2)


def test_undo_of_a_late_answer_withdraws_it_and_hands_out_nothing_gold_or_real():
    task, items = requested_queue(2, judgments=1, gold_rate=1.0)
    GoldItem.objects.create(task=task, item=items[1], answer=True)
    VerificationRequest.objects.filter(item=items[1]).delete()
    user = annotator(task)
    leases = claim_assignments(task=task, annotator=user, count=2).assignments
    Assignment.objects.filter(annotator=user).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    for lease in leases:
        out = answer(user, lease, "correct")
        undone = undo_answer(annotator=user, client_id=out.record.client_id)
        assert undone.assignment is None and undone.record.withdrawn_at is not None
    assert not Assignment.objects.filter(annotator=user, state="active").exists()


def test_undo_while_paused_withdraws_the_answer_and_hands_out_no_lease():
    task, _ = requested_queue(2, judgments=1)
    user = annotator(task)
    out = answer(user, lease_for(task, user), "correct")
    pause_annotator(task=task, annotator=user, reason="review")
    undone = undo_answer(annotator=user, client_id=out.record.client_id)
    assert undone.assignment is None
    request = VerificationRequest.objects.get(pk=out.record.request_id)
    assert (request.state, request.judgments_counted) == ("pending", 0)
    assert not Assignment.objects.filter(annotator=user, state="active").exists()
