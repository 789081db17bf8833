"""Answers by lease token: idempotent by client id, one per (item, annotator), no majority:
requests resolve once every judgment asked is in, further looks re-open them."""

import uuid

import pytest

from annotation.models import Assignment, Judgment, VerificationRequest
from annotation.services import (
    JudgmentError,
    answer_assignment,
    claim_assignments,
)
from annotation.services.judgments import number_judgments

from pipeline_support import annotator, requested_queue

pytestmark = pytest.mark.django_db


def version(task):
    """The judgment-set version an engine job reading now would rest on (it numbers first)."""
    return number_judgments(task.pk)


def lease_for(task, user):
    return claim_assignments(task=task, annotator=user).assignments[0]


def answer(user, lease, value="correct", client_id=None, **extra):
    return answer_assignment(
        annotator=user,
        token=lease.token,
        client_id=client_id or uuid.uuid4(),
        answer=value,
        **extra,
    )


def test_a_replay_returns_the_stored_answer_and_stores_nothing_new():
    task, _ = requested_queue(2)
    user = annotator(task)
    lease = lease_for(task, user)
    cid = uuid.uuid4()
    first = answer(user, lease, "incorrect", cid, justification="typo", seconds_spent=4.5)
    again = answer(user, lease, "incorrect", str(cid), justification="typo", seconds_spent=4.5)
    assert first.created and not again.created
    assert again.record.pk == first.record.pk and Judgment.objects.count() == 1
    assert Assignment.objects.get(pk=lease.pk).state == "answered"
    assert version(task) == 1  # one counted answer to number


@pytest.mark.parametrize(
    "change", [{"value": "correct"}, {"justification": "other"}, {"seconds_spent": 9.0}]
)
def test_the_same_client_id_with_another_body_is_refused(change):
    task, _ = requested_queue(2)
    user = annotator(task)
    lease = lease_for(task, user)
    cid = uuid.uuid4()
    answer(user, lease, "incorrect", cid, justification="typo", seconds_spent=4.5)
    body = {"value": "incorrect", "justification": "typo", "seconds_spent": 4.5, **change}
    with pytest.raises(JudgmentError) as exc:
        answer(user, lease, body.pop("value"), cid, **body)
    assert exc.value.code == "client_id_reused"


def test_a_client_id_reused_on_another_lease_or_by_another_annotator_is_refused():
    task, _ = requested_queue(3)
    a, b = annotator(task, "a"), annotator(task, "b")
    la, lb = lease_for(task, a), lease_for(task, b)
    cid = uuid.uuid4()
    answer(a, la, "correct", cid)
    la2 = lease_for(task, a)
    for user, lease in ((a, la2), (b, lb)):
        with pytest.raises(JudgmentError) as exc:
            answer(user, lease, "correct", cid)
        assert exc.value.code == "client_id_reused"


def test_a_second_answer_on_the_same_lease_is_already_answered():
    task, _ = requested_queue(2)
    user = annotator(task)
    lease = lease_for(task, user)
    answer(user, lease)
    with pytest.raises(JudgmentError) as exc:
        answer(user, lease, "incorrect")
    assert exc.value.code == "already_answered"


def test_unknown_tokens_and_other_peoples_leases_are_unknown():
    task, _ = requested_queue(2)
    a, b = annotator(task, "a"), annotator(task, "b")
    lease = lease_for(task, a)
    for user, token in ((a, uuid.uuid4()), (b, lease.token)):
        with pytest.raises(JudgmentError) as exc:
            answer_assignment(annotator=user, token=token, client_id=uuid.uuid4(), answer="correct")
        assert exc.value.code == "unknown_assignment"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"answer": "maybe"}, "unknown answer"),
        ({"client_id": "nope"}, "UUID"),
        ({"justification": "x" * 501}, "longer than 500"),
        ({"seconds_spent": -1}, "at least 0"),
        ({"seconds_spent": "soon"}, "number"),
    ],
)
def test_bad_fields_are_refused_with_a_reason(fields, message):
    task, _ = requested_queue(2)
    user = annotator(task)
    lease = lease_for(task, user)
    body = {
        "annotator": user,
        "token": lease.token,
        "client_id": uuid.uuid4(),
        "answer": "correct",
        **fields,
    }
    with pytest.raises(JudgmentError, match=message) as exc:
        answer_assignment(**body)
    assert exc.value.code == "invalid"


def test_an_hour_or_more_spent_is_stored_as_unknown():
    task, _ = requested_queue(2)
    user = annotator(task)
    out = answer(user, lease_for(task, user), seconds_spent=3601)
    assert out.record.seconds_spent is None


def test_a_request_resolves_once_every_judgment_asked_is_in_whatever_they_say():
    # No majority, no tie-break: the engine weighs the answers with each annotator's error rates.
    task, items = requested_queue(1, judgments=2)
    a, b, c = (annotator(task, n) for n in "abc")
    la, lb = lease_for(task, a), lease_for(task, b)
    assert claim_assignments(task=task, annotator=c).status == "empty"
    first = answer(a, la, "correct")
    assert not first.resolved
    second = answer(b, lb, "incorrect")
    assert second.resolved
    req = VerificationRequest.objects.get()
    assert req.judgments_required == 2 and req.state == "resolved"
    assert (first.record.seq, second.record.seq) == (None, None)  # numbered by the next reader
    assert version(task) == 1
    assert list(Judgment.objects.values_list("seq", flat=True)) == [1, 1]
    items[0].refresh_from_db()
    assert items[0].verified_at is not None


def test_a_look_reopens_a_resolved_request_for_another_annotator():
    from annotation.services import ask_again

    task, items = requested_queue(1, judgments=1)
    a, b = annotator(task, "a"), annotator(task, "b")
    assert answer(a, lease_for(task, a), "incorrect").resolved
    assert ask_again(task=task, item_ids=[items[0].pk], seen_version=version(task)) == [items[0].pk]
    req = VerificationRequest.objects.get()
    assert req.judgments_required == 2 and req.state == "pending"
    assert claim_assignments(task=task, annotator=a).status == "empty"  # a answered it
    assert answer(b, lease_for(task, b), "correct").resolved


def test_a_look_chosen_from_answers_since_outdated_is_not_asked():
    """The planner reads the answers at one version; an answer given while it plans makes the
    count its look rests on out of date. Asked anyway, a look once re-opened a request that all
    three annotators had answered: nobody could be given it, and it stayed pending for ever."""
    from annotation.services import ask_again

    task, items = requested_queue(2, judgments=1)
    a, b = annotator(task, "a"), annotator(task, "b")
    seen = version(task)
    first = lease_for(task, a)
    assert answer(a, first, "correct").resolved  # while the planner decides
    other = next(i for i in items if i.pk != first.request.item_id)
    assert answer(b, lease_for(task, b), "correct").resolved
    ids = [first.request.item_id, other.pk]
    assert ask_again(task=task, item_ids=ids, seen_version=seen) == []
    assert not VerificationRequest.objects.filter(state="pending").exists()
    # Chosen from the version that holds those answers, the look is asked.
    assert ask_again(task=task, item_ids=[other.pk], seen_version=version(task)) == [other.pk]
    assert VerificationRequest.objects.get(item=other).judgments_required == 2


def test_a_skip_is_no_judgment_and_another_annotator_answers():
    task, _ = requested_queue(1, judgments=1)
    a, b = annotator(task, "a"), annotator(task, "b")
    skipped = answer(a, lease_for(task, a), "cannot_tell")
    assert not skipped.counted and skipped.record.seq is None
    req = VerificationRequest.objects.get()
    assert req.judgments_required == 1 and req.state == "pending"
    assert answer(b, lease_for(task, b), "correct").resolved


def test_every_annotator_skipping_leaves_the_request_pending_and_stuck():
    from annotation.selectors import queue_health

    task, _ = requested_queue(1, judgments=1)
    users = [annotator(task, f"u{i}") for i in range(2)]
    for user in users:
        answer(user, lease_for(task, user), "cannot_tell")
    health = queue_health(task=task)
    assert health.pending_requests == 1 and health.stuck == 1
    annotator(task, "fresh")  # a new annotator can take it: no longer stuck
    assert queue_health(task=task).stuck == 0


def test_a_client_id_is_looked_up_in_both_tables_in_one_statement():
    """Every answer checks its client id against the judgments and the gold answers: a new one
    (the usual case) costs one statement; a stored one is found whichever its kind."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotation.services.judgments import client_id_in_use

    task, _ = requested_queue(1)
    user = annotator(task)
    stored = answer(user, lease_for(task, user)).record
    with CaptureQueriesContext(connection) as captured:
        assert client_id_in_use(uuid.uuid4()) is None
    assert len(captured.captured_queries) == 1
    for lease_is_gold in (False, True):
        assert client_id_in_use(stored.client_id, lease_is_gold=lease_is_gold) == stored
