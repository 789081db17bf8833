"""Gold items: mixed in at the task's rate, never votes, and the pauses they lead to."""

import uuid
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import AnnotatorPause, GoldAnswer, GoldItem, Judgment, VerificationRequest
from annotation.selectors import annotator_progress, working_annotators
from annotation.services import (
    GoldFileError,
    JudgmentError,
    answer_assignment,
    claim_assignments,
    load_gold,
    pause_annotator,
    request_verification,
    undo_answer,
    unpause_annotator,
)
from leaderboard.models import Item

from pipeline_support import add_items, annotator, make_task

pytestmark = pytest.mark.django_db


def answer(user, lease, value):
    return answer_assignment(
        annotator=user, token=lease.token, client_id=uuid.uuid4(), answer=value
    )


def gold_task(n_items=20, n_gold=10, **fields):
    fields.setdefault("gold_rate", 0.0)
    task = make_task(judgments_per_item=1, seed=12345, **fields)
    items = add_items(task, n_items + n_gold)
    request_verification(task=task, item_ids=[it.pk for it in items[:n_items]])
    golds = [
        GoldItem.objects.create(task=task, item=it, answer=i % 2 == 0)
        for i, it in enumerate(items[n_items:])
    ]
    return task, items, golds


@pytest.mark.slow
def test_gold_is_mixed_in_at_the_task_rate_over_many_claims():
    task, _, _ = gold_task(n_items=400, n_gold=150, gold_rate=0.1)
    user = annotator(task)
    served = gold = 0
    for _ in range(400):
        got = claim_assignments(task=task, annotator=user)
        if not got.assignments:
            break
        lease = got.assignments[0]
        served += 1
        gold += lease.gold_id is not None
        answer(user, lease, "cannot_tell")  # skips: nothing resolves, nothing pauses
    assert served == 400
    assert 0.06 <= gold / served <= 0.14, gold
    # Reproducible: the stream depends on the task's seed, the annotator and the claim count.
    assert GoldAnswer.objects.count() == gold


def test_gold_answers_are_no_judgments_of_a_request_and_look_like_answers():
    task, _items, _golds = gold_task(n_items=1, n_gold=1, gold_rate=1.0)
    user = annotator(task)
    got = claim_assignments(task=task, annotator=user, count=2).assignments
    assert sorted(a.gold_id is not None for a in got) == [False, True]
    gold_lease = next(a for a in got if a.gold_id)
    out = answer(user, gold_lease, "incorrect")
    assert out.counted and not out.resolved  # shaped like a counted answer for the page
    assert out.record.correct is False  # the gold answer is "correct"
    assert Judgment.objects.count() == 0
    assert VerificationRequest.objects.get().judgments_counted == 0
    # It measures the annotator: it takes its place in the task's judgment set.
    task.refresh_from_db()
    assert out.record.seq == task.labels_version == 1


def test_a_drawn_gold_item_counts_its_gold_answers_and_never_waits_for_those_annotators():
    # The planner may draw a gold item. Whoever answered it as gold is never served its request,
    # and the engine counts every answer on an item: so its gold answers count for the request.
    task, items, golds = gold_task(n_items=0, n_gold=2, gold_rate=1.0)
    a, b = annotator(task, "a"), annotator(task, "b")
    request_verification(task=task, item_ids=[items[1].pk])  # no gold answer on it yet
    drawn = VerificationRequest.objects.get(item=items[1])
    leases = claim_assignments(task=task, annotator=a, count=2).assignments
    assert sorted(lease.gold_id for lease in leases) == sorted(g.pk for g in golds)
    for lease in leases:
        answer(a, lease, "correct" if lease.gold.answer else "incorrect")
    drawn.refresh_from_db()
    assert (drawn.state, drawn.judgments_counted) == ("resolved", 1)
    assert Item.objects.get(pk=items[1].pk).verified_at is not None
    # Nothing left for b: the drawn item needs no judgment now (and no gold without real work).
    assert claim_assignments(task=task, annotator=b, count=3).status == "empty"
    assert not Judgment.objects.exists()
    # Drawn after it was answered as gold: complete at once.
    request_verification(task=task, item_ids=[items[0].pk])
    assert VerificationRequest.objects.get(item=items[0]).state == "resolved"
    # Taking the gold answer back re-opens the request, for someone who has not judged it.
    last = GoldAnswer.objects.filter(annotator=a).order_by("-created_at", "-pk").first()
    undo_answer(annotator=a, client_id=last.client_id)
    request = VerificationRequest.objects.get(item=last.gold.item)
    assert (request.state, request.judgments_counted) == ("pending", 0)
    assert Item.objects.get(pk=request.item_id).verified_at is None
    served = claim_assignments(task=task, annotator=b, count=3).assignments
    assert request.pk in {lease.request_id for lease in served}


def test_an_empty_queue_serves_no_gold():
    task, _, _ = gold_task(n_items=0, n_gold=5, gold_rate=0.5)
    assert claim_assignments(task=task, annotator=annotator(task), count=5).status == "empty"


def test_low_gold_accuracy_pauses_and_an_organizer_unpauses():
    task, _, _golds = gold_task(
        n_items=30, n_gold=10, gold_rate=1.0, gold_min_answers=3, gold_min_accuracy=0.7
    )
    user = annotator(task)
    wrong = skipped = 0
    while wrong < 3:
        lease = claim_assignments(task=task, annotator=user).assignments[0]
        if lease.gold_id is None:
            answer(user, lease, "cannot_tell")
            skipped += 1
            continue
        truth = GoldItem.objects.get(pk=lease.gold_id).answer
        answer(user, lease, "incorrect" if truth else "correct")
        wrong += 1
    pause = AnnotatorPause.objects.get()
    assert "0.00 over 3 gold answers" in pause.reason
    got = claim_assignments(task=task, annotator=user)
    assert got.status == "paused" and got.assignments == []
    with CaptureQueriesContext(connection) as captured:
        progress = annotator_progress(task=task, annotator=user)
    assert progress["paused"] and progress["paused_reason"] == pause.reason
    answered = 3 + skipped
    assert (progress["answered_total"], progress["answered_today"]) == (answered, answered)
    # The 30 pending requests less those skipped, and the 10 - 3 gold items not answered.
    assert progress["remaining"] == 30 - skipped + 7
    # Every claim and answer response carries it: one statement, compiled once per process.
    assert len(captured.captured_queries) == 1

    stranger = get_user_model().objects.create(username="stranger")
    with pytest.raises(JudgmentError):
        unpause_annotator(task=task, annotator=user, by=stranger)
    organizer = get_user_model().objects.create(username="org")
    task.organizers.add(organizer)
    staff = get_user_model().objects.create(username="staff", is_staff=True)
    with pytest.raises(JudgmentError):  # staff status grants no organizer rights
        unpause_annotator(task=task, annotator=user, by=staff)
    root = get_user_model().objects.create(username="root", is_staff=True, is_superuser=True)
    assert unpause_annotator(task=task, annotator=user, by=root)
    AnnotatorPause.objects.create(task=task, annotator=user, reason="again")
    assert unpause_annotator(task=task, annotator=user, by=organizer)
    assert not unpause_annotator(task=task, annotator=user, by=organizer)
    assert claim_assignments(task=task, annotator=user).status == "ok"
    assert not annotator_progress(task=task, annotator=user)["paused"]
    # Judged afresh: earlier gold answers no longer count against them.
    lease = claim_assignments(task=task, annotator=user, count=2)
    for a in lease.assignments:
        if a.gold_id:
            truth = GoldItem.objects.get(pk=a.gold_id).answer
            answer(user, a, "incorrect" if truth else "correct")
            break
    assert not AnnotatorPause.objects.filter(lifted_at=None).exists()


def test_accurate_annotators_are_not_paused():
    task, _, _ = gold_task(n_items=30, n_gold=10, gold_rate=1.0, gold_min_answers=3)
    user = annotator(task)
    for _ in range(12):
        got = claim_assignments(task=task, annotator=user)
        if not got.assignments:
            break
        lease = got.assignments[0]
        if lease.gold_id:
            truth = GoldItem.objects.get(pk=lease.gold_id).answer
            answer(user, lease, "correct" if truth else "incorrect")
        else:
            answer(user, lease, "correct")
    assert GoldAnswer.objects.filter(correct=True).count() >= 3
    assert not AnnotatorPause.objects.exists()


def test_load_gold_reports_every_problem_with_its_line_and_stores_nothing():
    task = make_task(slug="g")
    add_items(task, 3)  # k0 k1 k2
    lines = [
        "k0\tcorrect\n",
        "\n",
        "# comment\n",
        "k1\tmaybe\n",
        "nope\tincorrect\n",
        "k0\tincorrect\n",
        "k2\n",
    ]
    with pytest.raises(GoldFileError) as exc:
        load_gold(task=task, lines=lines)
    assert exc.value.errors == [
        "line 4: answer must be 'correct' or 'incorrect', got 'maybe'",
        "line 5: no item with key 'nope' in task g",
        "line 6: key 'k0' already given on line 1",
        "line 7: expected key<TAB>correct|incorrect, got 1 field(s)",
    ]
    assert not GoldItem.objects.exists()


def test_load_gold_command_is_idempotent_and_updates_changed_answers(tmp_path):
    task = make_task(slug="g")
    add_items(task, 3)
    path = tmp_path / "gold.tsv"
    path.write_text("k0\tcorrect\nk1\tINCORRECT\r\n")
    out = StringIO()
    call_command("load_gold", "g", str(path), stdout=out)
    assert "2 new, 0 changed, 0 unchanged" in out.getvalue()
    path.write_text("k0\tincorrect\nk1\tincorrect\nk2\tcorrect\n")
    out = StringIO()
    call_command("load_gold", "g", str(path), stdout=out)
    assert "1 new, 1 changed, 1 unchanged" in out.getvalue()
    assert dict(GoldItem.objects.values_list("item__key", "answer")) == {
        "k0": False,
        "k1": False,
        "k2": True,
    }
    path.write_text("k9\tcorrect\n")
    with pytest.raises(CommandError, match="line 1: no item with key 'k9'"):
        call_command("load_gold", "g", str(path), stdout=StringIO())
    with pytest.raises(CommandError, match="no task"):
        call_command("load_gold", "zz", str(path), stdout=StringIO())


def test_annotators_at_work_have_answered_on_the_task_and_are_not_paused():
    # The planner asks at most one judgment per annotator at work: someone who never answered
    # or is paused cannot be counted on for a further look.
    task, _items, _golds = gold_task(n_items=2, n_gold=1, gold_rate=0.0)
    a, b, _idle = annotator(task, "a"), annotator(task, "b"), annotator(task, "idle")
    assert working_annotators(task=task) == 0
    answer(a, claim_assignments(task=task, annotator=a).assignments[0], "correct")
    gold = GoldItem.objects.get(task=task)
    GoldAnswer.objects.create(
        gold=gold, annotator=b, client_id=uuid.uuid4(), answer="correct", correct=gold.answer
    )
    assert working_annotators(task=task) == 2
    pause_annotator(task=task, annotator=b, reason="review")
    assert working_annotators(task=task) == 1
    task.annotators.remove(a)
    assert working_annotators(task=task) == 0


def test_upload_gold_reads_bytes_and_names_bad_lines_by_number():
    from io import BytesIO

    from annotation.services import upload_gold
    from leaderboard.services.runs import SubmissionError

    task = make_task(slug="g", max_upload_bytes=64)
    add_items(task, 3)
    with pytest.raises(GoldFileError) as exc:
        upload_gold(task=task, upload=BytesIO(b"k0\tcorrect\nk1\x00\tcorrect\n"))
    assert [(p.line, p.message) for p in exc.value.problems] == [(2, "contains a NUL byte")]
    assert exc.value.as_dict()["problems"] == [{"line": 2, "message": "contains a NUL byte"}]
    big = BytesIO(b"k0\tcorrect\n" * 10)
    big.size = 110  # type: ignore[attr-defined]  # as an uploaded file has
    with pytest.raises(SubmissionError, match="over the limit of 64 bytes"):
        upload_gold(task=task, upload=big)
    assert not GoldItem.objects.exists()
    loaded = upload_gold(task=task, upload=BytesIO(b"\xef\xbb\xbfk0\tcorrect\r\nk2\tincorrect"))
    assert (loaded.created, loaded.updated, loaded.unchanged) == (2, 0, 0)
    assert dict(GoldItem.objects.values_list("item__key", "answer")) == {"k0": True, "k2": False}
