"""Claims: leases on free slots, in the pipeline's order, never the same item twice."""

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Assignment, Judgment, VerificationRequest
from annotation.services import (
    answer_assignment,
    claim_assignments,
    heartbeat,
    release,
    request_verification,
)

from pipeline_support import add_items, annotator, make_task, requested_queue

pytestmark = pytest.mark.django_db


def claim(task, user, count=1, holding=()):
    return claim_assignments(task=task, annotator=user, count=count, holding=holding)


def answer(user, lease, value="correct"):
    return answer_assignment(
        annotator=user, token=lease.token, client_id=uuid.uuid4(), answer=value
    )


def expire(lease):
    Assignment.objects.filter(pk=lease.pk).update(expires_at=timezone.now() - timedelta(seconds=1))


def test_claims_follow_priority_then_request_id_and_never_repeat_an_item():
    task = make_task(judgments_per_item=1, gold_rate=0.0)
    late, early = add_items(task, 2), add_items(task, 2)
    request_verification(task=task, item_ids=[it.pk for it in late], priority=20)
    request_verification(task=task, item_ids=[it.pk for it in early], priority=10)
    user = annotator(task)
    seen = []
    for _ in range(4):
        got = claim(task, user)
        assert got.status == "ok" and len(got.assignments) == 1
        seen.append(got.assignments[0].request.item_id)
        answer(user, got.assignments[0], "cannot_tell")  # a skip: the item stays pending
    # Priority first; within a round, request id order (a shuffle of the items' order:
    # test_ann_gold_blindness.py).
    assert set(seen[:2]) == {it.pk for it in early} and set(seen[2:]) == {it.pk for it in late}
    assert seen == list(
        VerificationRequest.objects.order_by("priority", "id").values_list("item_id", flat=True)
    )
    assert claim(task, user).status == "empty"


def test_two_tabs_never_hold_the_same_item():
    task, _ = requested_queue(3)
    user = annotator(task)
    first = claim(task, user)
    heartbeat(annotator=user, tokens=[first.assignments[0].token])  # the page beats on its reply
    second = claim(task, user)
    a, b = first.assignments[0], second.assignments[0]
    assert a.request_id != b.request_id
    third = claim(task, user, count=3, holding=[a.token, b.token])
    assert len(third.assignments) == 1
    assert len({a.request_id, b.request_id, third.assignments[0].request_id}) == 3


def test_holding_tokens_reduce_the_count_and_are_never_returned_again():
    task, _ = requested_queue(5)
    user = annotator(task)
    got = claim(task, user, count=2)
    held = [a.token for a in got.assignments]
    again = claim(task, user, count=2, holding=held)
    assert again.status == "ok" and again.assignments == []
    more = claim(task, user, count=3, holding=[*held, uuid.uuid4()])  # unknown tokens ignored
    assert len(more.assignments) == 1
    assert not {a.token for a in more.assignments} & set(held)


def test_count_is_capped_by_the_setting(settings):
    settings.ANNOTATION_MAX_CLAIM = 2
    task, _ = requested_queue(5)
    assert len(claim(task, annotator(task), count=5).assignments) == 2


def test_the_last_slot_goes_to_one_annotator_only_until_the_lease_expires():
    task, _items = requested_queue(1, judgments=2)
    a, b, c = (annotator(task, n) for n in "abc")
    la, lb = claim(task, a).assignments[0], claim(task, b).assignments[0]
    assert la.request_id == lb.request_id
    assert claim(task, c).status == "empty"  # 2 slots, 2 live leases
    expire(lb)
    lc = claim(task, c).assignments[0]  # reclaimable at once
    assert lc.request_id == la.request_id
    assert claim(task, b).status == "empty"  # b's slot is c's now


def test_heartbeat_renews_live_leases_only(settings):
    # An expired lease is never revived, free slot or not (tests/annotation/
    # test_ann_queue_leases.py: reviving told gold items apart).
    task, _ = requested_queue(2, judgments=1)
    a, b = annotator(task, "a"), annotator(task, "b")
    la = claim(task, a, count=2).assignments
    old = la[0].expires_at
    rows = heartbeat(annotator=a, tokens=[la[0].token])
    assert rows[0]["valid"] and rows[0]["expires_at"] >= old
    expire(la[1])
    rows = heartbeat(annotator=a, tokens=[la[0].token, la[1].token, uuid.uuid4()])
    assert [r["valid"] for r in rows] == [True, False, False]
    assert rows[1]["expires_at"] is None
    assert Assignment.objects.get(pk=la[1].pk).state == "expired"
    assert claim(task, b).assignments[0].request_id == la[1].request_id
    answer(a, la[0])
    assert heartbeat(annotator=a, tokens=[la[0].token])[0]["valid"] is False
    assert heartbeat(annotator=b, tokens=[la[0].token])[0]["valid"] is False  # not b's


def test_release_frees_the_slot_at_once():
    task, _ = requested_queue(1)
    a, b = annotator(task, "a"), annotator(task, "b")
    la = claim(task, a).assignments[0]
    assert claim(task, b).status == "empty"
    assert release(annotator=b, tokens=[la.token]) == 0  # not b's lease
    assert release(annotator=a, tokens=[la.token]) == 1
    assert claim(task, b).assignments[0].request_id == la.request_id
    # The released page comes back: a late answer is still kept (never counted).
    late = answer(a, la)
    assert late.created and not late.counted and late.record.late


def test_non_annotators_are_refused_on_a_draft():
    from django.contrib.auth import get_user_model

    from annotation.services import JudgmentError

    task, _ = requested_queue(1, state="draft")
    outsider = get_user_model().objects.create(username="x")
    with pytest.raises(JudgmentError) as exc:
        claim(task, outsider)
    assert exc.value.code == "not_annotator"


def draft_with_candidates():
    """A draft task with two items queued: one a reference candidate, one not (a draft has no
    runs; the other stands for work that waits for the task to open), and a gold item."""
    from annotation.models import GoldItem
    from leaderboard.models import ReferenceCandidate

    task, (candidate, other) = requested_queue(2, state="draft")
    ReferenceCandidate.objects.create(task=task, item=candidate, document="doc1")
    (gold,) = add_items(task, 1)
    GoldItem.objects.create(task=task, item=gold, answer=True)
    return task, candidate, other, gold


def check_draft_serves_candidates_and_gold_only():
    task, candidate, other, _ = draft_with_candidates()
    task.gold_rate = 0.5
    task.save(update_fields=["gold_rate"])
    user = annotator(task)
    served = claim(task, user, count=5)
    assert served.status == "ok"
    items = {a.request.item_id if a.request_id else a.gold.item_id for a in served.assignments}
    assert candidate.pk in items and other.pk not in items
    for lease in served.assignments:
        assert answer(user, lease).counted
    empty = claim(task, user)
    assert empty.status == "empty" and "is a draft" in empty.message
    # Once open, the rest of the queue is served (with the gold item, if the draft's claim did
    # not serve it: the task's seed is random, so either may happen).
    task.state = "open"
    task.save(update_fields=["state"])
    leases = claim(task, user, count=3).assignments
    assert [a.request.item_id for a in leases if a.request_id] == [other.pk]


def test_a_draft_serves_its_reference_candidates_and_gold_items_only():
    check_draft_serves_candidates_and_gold_only()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_draft_serves_its_reference_candidates_and_gold_items_only_on_postgres(sent_messages):
    check_draft_serves_candidates_and_gold_only()


def test_an_answer_on_a_draft_is_refused_for_anything_but_candidates_and_gold():
    from annotation.services import JudgmentError

    task, candidate, other, _ = draft_with_candidates()
    user = annotator(task)
    task.state = "open"
    task.save(update_fields=["state"])
    leases = claim(task, user, count=2).assignments
    assert {a.request.item_id for a in leases} == {candidate.pk, other.pk}
    task.state = "draft"  # back to draft while the leases are held (no runs yet)
    task.save(update_fields=["state"])
    by_item = {a.request.item_id: a for a in leases}
    with pytest.raises(JudgmentError) as exc:
        answer(user, by_item[other.pk])
    assert exc.value.code == "task_closed" and "draft" in exc.value.message
    assert not Judgment.objects.filter(request__item=other).exists()
    assert answer(user, by_item[candidate.pk]).counted


def test_daily_cap_counts_answers_of_the_utc_day_and_live_leases():
    task, _ = requested_queue(6, annotator_daily_cap=3)
    user = annotator(task)
    got = claim(task, user, count=5)
    assert len(got.assignments) == 3  # the cap bounds the leases too
    for lease in got.assignments[:2]:
        answer(user, lease)
    assert claim(task, user, count=5, holding=[got.assignments[2].token]).assignments == []
    answer(user, got.assignments[2])
    capped = claim(task, user)
    assert capped.status == "daily_cap" and "limit of 3" in capped.message
    # Yesterday's answers do not count.
    Judgment.objects.update(created_at=timezone.now() - timedelta(days=1, hours=1))
    assert claim(task, user).status == "ok"
