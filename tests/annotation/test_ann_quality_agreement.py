"""Agreement statistics and the organizer's queue health."""

import uuid

import numpy as np
import pytest
from django.contrib.auth import get_user_model

from annotation.agreement import agreement_from_counts
from annotation.models import GoldItem, Judgment, VerificationRequest
from annotation.selectors import queue_health
from annotation.services import answer_assignment, claim_assignments, request_verification

from pipeline_support import add_items, annotator, make_task

pytestmark = pytest.mark.django_db


def test_alpha_and_pairwise_match_a_hand_computed_example():
    # Votes (correct, incorrect) per item. Coincidences: o_cc = 3, o_ii = 2, o_ci = o_ic = 2;
    # n_c = 5, n_i = 4, n = 9. D_o = 4/9, D_e = 2*5*4/(9*8) = 5/9, alpha = 1 - 4/5 = 0.2.
    # Pairs: 1 + 1 + 1 + 3 = 6, agreeing 1 + 0 + 1 + 1 = 3: pairwise 0.5.
    alpha, pairwise = agreement_from_counts(np.array([[2, 0], [1, 1], [0, 2], [2, 1]]))
    assert alpha == pytest.approx(0.2)
    assert pairwise == pytest.approx(0.5)


def test_agreement_is_undefined_without_pairs_or_variation():
    assert agreement_from_counts(np.array([[1, 0], [0, 1]])) == (None, None)
    alpha, pairwise = agreement_from_counts(np.array([[2, 0], [3, 0]]))
    assert alpha is None and pairwise == 1.0


def test_task_agreement_reads_counted_judgments_of_items_with_two_or_more(sent_messages):
    task = make_task(judgments_per_item=3, gold_rate=0.0)
    items = add_items(task, 5)
    request_verification(task=task, item_ids=[it.pk for it in items])
    users = [annotator(task, f"u{i}") for i in range(3)]
    votes = [
        ("correct", "correct"),
        ("correct", "incorrect"),
        ("incorrect", "incorrect"),
        ("correct", "correct", "incorrect"),
        ("correct",),
    ]
    for req, answers in zip(VerificationRequest.objects.order_by("id"), votes, strict=True):
        for user, value in zip(users, answers, strict=False):
            Judgment.objects.create(request=req, annotator=user, answer=value, counted=True)
        req.judgments_counted = len(answers)
        req.save()
    # A skip and an uncounted late answer are left out.
    extra = get_user_model().objects.create(username="late")
    req = VerificationRequest.objects.order_by("id")[0]
    Judgment.objects.create(request=req, annotator=extra, answer="incorrect", counted=False)
    agreement = queue_health(task=task).agreement
    assert agreement["alpha"] == pytest.approx(0.2)
    assert agreement["pairwise"] == pytest.approx(0.5)
    assert agreement["items"] == 4 and "Krippendorff" in agreement["method"]


def test_queue_health_counts_the_queue_and_describes_each_annotator(sent_messages):
    task = make_task(judgments_per_item=2, gold_rate=0.0)
    items = add_items(task, 4)
    request_verification(task=task, item_ids=[it.pk for it in items[:3]])
    gold = GoldItem.objects.create(task=task, item=items[3], answer=True)
    a, b = annotator(task, "a"), annotator(task, "b")
    annotator(task, "idle")

    def answer(user, lease, value, seconds):
        return answer_assignment(
            annotator=user,
            token=lease.token,
            client_id=uuid.uuid4(),
            answer=value,
            seconds_spent=seconds,
        )

    la = claim_assignments(task=task, annotator=a, count=3).assignments
    answer(a, la[0], "correct", 2.0)
    answer(a, la[1], "correct", 4.0)
    lb = claim_assignments(task=task, annotator=b).assignments[0]
    answer(b, lb, "correct", 10.0)  # resolves the first request (2 of 2 agree)
    task.gold_rate = 1.0
    task.save()
    lg = claim_assignments(task=task, annotator=b, count=2).assignments
    gold_lease = next(x for x in lg if x.gold_id == gold.pk)
    answer(b, gold_lease, "incorrect", None)

    health = queue_health(task=task)
    assert health.pending_requests == 2 and health.resolved == 1
    # Pending: request 2 has 1 of 2, request 3 has 0 of 2.
    assert health.judgments_outstanding == 3
    assert health.leased_now == 1 + 1  # a's third lease, b's real lease from the last claim
    assert health.answers_last_hour == 4 and health.answers_last_day == 4
    assert health.stuck == 0
    rows = {r.username: r for r in health.annotators}
    assert set(rows) == {"a", "b", "idle"}
    assert (rows["a"].answers_total, rows["a"].answers_today, rows["a"].median_seconds) == (
        2,
        2,
        3.0,
    )
    assert rows["a"].gold_answers == 0 and rows["a"].gold_accuracy is None
    assert rows["b"].gold_answers == 1 and rows["b"].gold_accuracy == 0.0
    assert rows["b"].median_seconds == 10.0
    assert rows["idle"].answers_total == 0 and not rows["idle"].paused
