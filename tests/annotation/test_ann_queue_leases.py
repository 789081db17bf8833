"""Leases cannot be hoarded or outlive their holder's right to answer.

At most ``ANNOTATION_MAX_CLAIM`` live leases per annotator and task (the page's prefetch depth),
a lifetime heartbeats cannot extend, no revival of an expired lease, leases revoked by a pause
and by removing the annotator from the task;
an answer on a lease its annotator no longer holds is kept but never counted, and gold and real
leases behave alike throughout.
"""

import json
import uuid
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from annotation.models import Assignment, GoldAnswer, GoldItem, Judgment, VerificationRequest
from annotation.selectors import answers_export_rows, queue_health
from annotation.services import (
    JudgmentError,
    answer_assignment,
    claim_assignments,
    heartbeat,
    pause_annotator,
    undo_answer,
)
from annotation.services.gold import gold_record
from annotation.services.judgments import number_judgments
from annotation.services.queue import free_requests
from leaderboard.services.task_roles import remove_annotator

from pipeline_support import add_items, annotator, requested_queue

pytestmark = pytest.mark.django_db


def claim(task, user, count=1, holding=()):
    return claim_assignments(task=task, annotator=user, count=count, holding=holding)


def answer(user, lease, value="correct"):
    return answer_assignment(
        annotator=user, token=lease.token, client_id=uuid.uuid4(), answer=value
    )


def expire(*leases):
    Assignment.objects.filter(pk__in=[a.pk for a in leases]).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )


def live(task, user):
    return Assignment.objects.filter(
        task=task, annotator=user, state="active", expires_at__gt=timezone.now()
    ).count()


def test_an_annotator_never_holds_more_live_leases_than_the_page_prefetches(settings):
    # The probe: one annotator took all 38 pending items and the next one got "empty".
    task, _ = requested_queue(38)
    hoarder, other = annotator(task, "hoarder"), annotator(task, "other")
    for _ in range(20):  # a script that never says what it holds
        claim(task, hoarder, count=settings.ANNOTATION_MAX_CLAIM)
    assert live(task, hoarder) == settings.ANNOTATION_MAX_CLAIM
    # Tokens it pretends not to hold, or someone else's, buy nothing.
    mine = list(Assignment.objects.filter(annotator=hoarder).values_list("token", flat=True))
    got = claim(task, other, count=settings.ANNOTATION_MAX_CLAIM, holding=mine)
    assert len(got.assignments) == settings.ANNOTATION_MAX_CLAIM
    # Never beaten, its leases come back to it (a reload), never more of them.
    back = claim(task, hoarder, count=settings.ANNOTATION_MAX_CLAIM)
    assert {a.token for a in back.assignments} == set(mine)
    assert live(task, hoarder) == settings.ANNOTATION_MAX_CLAIM
    heartbeat(annotator=hoarder, tokens=mine)  # held by a page now: nothing more to give
    again = claim(task, hoarder, count=1)
    assert again.status == "ok" and again.assignments == [] and again.message
    # Answering one frees one.
    answer(hoarder, Assignment.objects.filter(annotator=hoarder, state="active").first())
    assert len(claim(task, hoarder, count=settings.ANNOTATION_MAX_CLAIM).assignments) == 1


def test_the_page_prefetches_what_the_server_allows(client, settings):
    settings.ANNOTATION_MAX_CLAIM = 4
    task, _ = requested_queue(1)
    user = annotator(task, "ann")
    client.force_login(user)
    page = client.get(f"/annotate/{task.slug}/").content.decode()
    config = json.loads(
        page.split('id="ann-config" type="application/json">')[1].split("</script>")[0]
    )
    assert config["prefetch"] == 4


def test_heartbeats_never_extend_a_lease_past_its_lifetime(settings):
    settings.ANNOTATION_LEASE_MAX_SECONDS = 300
    task, _ = requested_queue(1)
    a, b = annotator(task, "a"), annotator(task, "b")
    lease = claim(task, a).assignments[0]
    born = timezone.now() - timedelta(seconds=250)
    Assignment.objects.filter(pk=lease.pk).update(created_at=born)
    row = heartbeat(annotator=a, tokens=[lease.token])[0]
    assert row["valid"] and row["expires_at"] == born + timedelta(seconds=300)
    Assignment.objects.filter(pk=lease.pk).update(created_at=born - timedelta(seconds=51))
    assert heartbeat(annotator=a, tokens=[lease.token])[0]["valid"] is False
    assert claim(task, b).assignments[0].request_id == lease.request_id


def test_an_expired_lease_is_dead_for_gold_and_real_items_alike():
    # Reviving an expired lease whose slot was still free told gold items apart: a real item's
    # slot goes to someone else, a gold item's never does.
    task, items = requested_queue(2, judgments=1, gold_rate=1.0)
    gold = GoldItem.objects.create(task=task, item=items[1], answer=True)
    VerificationRequest.objects.filter(item=items[1]).delete()
    user = annotator(task)
    leases = claim(task, user, count=2).assignments
    assert sorted(a.gold_id is not None for a in leases) == [False, True]
    expire(*leases)
    rows = heartbeat(annotator=user, tokens=[a.token for a in leases])
    assert [r["valid"] for r in rows] == [False, False]
    outs = [answer(user, lease, "correct") for lease in leases]
    assert [(o.counted, bool(o.message)) for o in outs] == [(False, True), (False, True)]
    assert all(o.record.late and o.record.seq is None for o in outs)
    # Kept, never counted: not a judgment of the request, not in the annotator's accuracy.
    assert VerificationRequest.objects.get().judgments_counted == 0
    assert gold_record(task=task, annotator=user) == (0, 0)
    assert GoldAnswer.objects.get(gold=gold).correct is True  # the audit trail stays whole
    assert not any(
        row.gold_answers and row.gold_accuracy is not None
        for row in queue_health(task=task).annotators
    )


def test_a_late_answer_never_counts_and_never_displaces_the_new_holder():
    # The probe: an answer on an expired lease counted after the item went to someone else.
    task, _ = requested_queue(1, judgments=1)
    a, b = annotator(task, "a"), annotator(task, "b")
    la = claim(task, a).assignments[0]
    expire(la)
    lb = claim(task, b).assignments[0]
    assert lb.request_id == la.request_id
    late = answer(a, la, "incorrect")
    assert late.created and not late.counted and "not counted" in late.message
    stored = Judgment.objects.get(annotator=a)
    assert (stored.counted, stored.late, stored.seq) == (False, True, None)
    request = VerificationRequest.objects.get()
    assert (request.state, request.judgments_counted) == ("pending", 0)
    assert heartbeat(annotator=b, tokens=[lb.token])[0]["valid"]
    on_time = answer(b, lb, "correct")
    assert on_time.counted and on_time.resolved
    assert number_judgments(task.pk) == 1  # the engine's next read numbers it, alone
    assert Judgment.objects.get(annotator=b).seq == 1
    # Organizers see both in the answers export, and which one came late.
    header, *rows = answers_export_rows(task=task)
    assert [
        (r[header.index("annotator")], r[header.index("counted")], r[header.index("late")])
        for r in rows
    ] == [("a", False, True), ("b", True, False)]


def test_a_released_lease_takes_no_answer_either():
    task, _ = requested_queue(1, judgments=1)
    user = annotator(task)
    lease = claim(task, user).assignments[0]
    Assignment.objects.filter(pk=lease.pk).update(state="released")
    out = answer(user, lease)
    assert not out.counted and out.record.late
    assert Assignment.objects.get(pk=lease.pk).state == "released"


def test_a_pause_revokes_live_leases_and_answers_on_them_are_kept_uncounted():
    # The probe: 32 hoarded leases kept alive by heartbeat after the gold pause, all counted.
    task, _ = requested_queue(5, judgments=1)
    user = annotator(task)
    leases = claim(task, user, count=3).assignments
    pause_annotator(task=task, annotator=user, reason="review")
    assert set(
        Assignment.objects.filter(pk__in=[a.pk for a in leases]).values_list("state", flat=True)
    ) == {"revoked"}
    assert not any(r["valid"] for r in heartbeat(annotator=user, tokens=[a.token for a in leases]))
    outs = [answer(user, lease) for lease in leases]
    assert not any(o.counted for o in outs) and all(o.record.late for o in outs)
    assert not VerificationRequest.objects.filter(judgments_counted__gt=0).exists()
    task.refresh_from_db()
    assert task.labels_version == 0
    assert claim(task, user).status == "paused"
    # The items went back to the queue at once.
    other = annotator(task, "other")
    assert len(claim(task, other, count=3).assignments) == 3


def leases_of(user):
    return dict(Assignment.objects.filter(annotator=user).values_list("token", "state"))


@pytest.mark.parametrize("gold_rate", [0.0, 1.0])
def test_removing_an_annotator_revokes_their_leases_as_a_pause_does(gold_rate):
    # The probe (N14): a removed annotator's leases stayed live until they expired, their items
    # held from everyone else.
    task, _ = requested_queue(5, judgments=1, gold_rate=gold_rate)
    GoldItem.objects.create(task=task, item=add_items(task, 1)[0], answer=True)
    user, other = annotator(task), annotator(task, "other")
    leases = claim(task, user, count=3).assignments
    assert len(leases) == 3 and (gold_rate == 0 or any(a.gold_id for a in leases))
    assert free_requests(task=task, annotator=other, now=timezone.now()).count() < 5
    remove_annotator(task=task, user=user)
    assert set(leases_of(user).values()) == {"revoked"}
    assert not any(r["valid"] for r in heartbeat(annotator=user, tokens=[a.token for a in leases]))
    # The items went back to the queue at once.
    assert free_requests(task=task, annotator=other, now=timezone.now()).count() == 5
    with pytest.raises(JudgmentError) as refused:
        answer(user, leases[0])
    assert refused.value.code == "not_annotator"
    assert not Judgment.objects.exists() and not GoldAnswer.objects.exists()


def test_a_removal_revokes_only_the_removed_annotators_leases_on_that_task():
    task, _ = requested_queue(4, judgments=2, slug="one")
    elsewhere, _ = requested_queue(2, judgments=1, slug="two")
    user, other = annotator(task), annotator(task, "other")
    elsewhere.annotators.add(user)
    mine, theirs = claim(task, user, count=2), claim(task, other, count=2)
    kept = claim(elsewhere, user, count=1).assignments
    remove_annotator(task=task, user=user)
    states = leases_of(user)
    assert {states[a.token] for a in mine.assignments} == {"revoked"}
    assert states[kept[0].token] == "active"
    assert set(leases_of(other).values()) == {"active"} and len(theirs.assignments) == 2


def test_every_way_of_removing_revokes_the_leases():
    # The organize page and the API call the service; the admin and a shell change the
    # membership directly, from either side: the queue hears of every one.
    task, _ = requested_queue(6, judgments=1)
    for remove in (
        lambda user: user.annotated_tasks.remove(task),
        lambda user: task.annotators.clear(),
        lambda user: user.annotated_tasks.clear(),
        lambda user: task.annotators.set([]),
    ):
        user = annotator(task)
        leases = claim(task, user, count=1).assignments
        remove(user)
        assert leases_of(user)[leases[0].token] == "revoked"
        Assignment.objects.all().delete()


def test_a_removed_annotator_cannot_take_an_answer_back():
    task, _ = requested_queue(2, judgments=1)
    user = annotator(task)
    (lease,) = claim(task, user).assignments
    given = answer(user, lease)
    remove_annotator(task=task, user=user)
    with pytest.raises(JudgmentError) as refused:
        undo_answer(annotator=user, client_id=given.record.client_id)
    assert refused.value.code == "not_annotator"
    assert Judgment.objects.get().withdrawn_at is None
    assert not Assignment.objects.filter(state="active").exists()


def test_the_gold_answer_that_pauses_revokes_the_other_leases_it_held():
    task, items = requested_queue(
        3, judgments=1, gold_rate=1.0, gold_min_answers=1, gold_min_accuracy=0.9
    )
    GoldItem.objects.create(task=task, item=items[2], answer=True)
    VerificationRequest.objects.filter(item=items[2]).delete()
    user = annotator(task)
    leases = claim(task, user, count=3).assignments
    gold_lease = next(a for a in leases if a.gold_id)
    answer(user, gold_lease, "incorrect")  # wrong: paused
    real = [a for a in leases if not a.gold_id]
    assert real and not any(answer(user, lease).counted for lease in real)
    assert not Judgment.objects.filter(counted=True).exists()


def test_the_api_says_when_an_answer_was_not_counted():
    task, _ = requested_queue(1, judgments=1, slug="tk")
    user = annotator(task)
    c = Client()
    c.force_login(user)
    lease = c.post("/annotate/api/tasks/tk/claim", "{}", content_type="application/json").json()[
        "assignments"
    ][0]
    Assignment.objects.filter(token=lease["token"]).update(
        expires_at=timezone.now() - timedelta(minutes=5)
    )
    r = c.post(
        "/annotate/api/answers",
        json.dumps({"client_id": str(uuid.uuid4()), "token": lease["token"], "answer": "correct"}),
        content_type="application/json",
    )
    assert r.status_code == 201
    body = r.json()["answer"]
    assert body["counted"] is False and "not counted" in body["message"]
