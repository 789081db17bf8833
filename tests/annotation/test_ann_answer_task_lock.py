"""A counted answer never takes its task's row; the engine numbers the answers when it reads.

The task row is the judgment set's version (``Task.labels_version``). Taken by every counted
answer, it made a task's answers commit one at a time: at saturation 2.7 of 3.5 busy PostgreSQL
sessions waited on it (issue 32). Now a counted answer locks only its request's row and is stored
unnumbered; every engine job numbers the committed ones before it reads
(:func:`annotation.services.judgments.number_judgments`), so a version still names exactly one
set of answers, fixed once read.
"""

from __future__ import annotations

import re
import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Judgment, VerificationRequest
from annotation.selectors import items_answered_since
from annotation.services import answer_assignment, claim_assignments, undo_answer
from annotation.services.judgments import number_judgments
from evaluation.core.state import TaskState
from evaluation.kinds.engine_rows import load_answers
from leaderboard.models import Task

from pipeline_support import annotator, requested_queue

pytestmark = pytest.mark.django_db

# A statement that locks or writes the task row: an UPDATE of it, or the lock's SELECT of the
# row's id alone (``FOR NO KEY UPDATE`` on PostgreSQL, a plain read on SQLite).
TASK_ROW = re.compile(
    r'^(UPDATE "?leaderboard_task"? |SELECT "leaderboard_task"\."(id|labels_version)" FROM '
    r'"leaderboard_task" WHERE)'
)


def _answer(user, task, answer: str = "correct") -> tuple[list[str], str]:
    """One answer on what the queue serves ``user``: the statements it ran, and its client id."""
    (lease,) = claim_assignments(task=task, annotator=user, count=1).assignments
    client_id = str(uuid.uuid4())
    with CaptureQueriesContext(connection) as captured:
        answer_assignment(annotator=user, token=lease.token, client_id=client_id, answer=answer)
    return [q["sql"] for q in captured.captured_queries], client_id


def test_a_counted_answer_never_takes_the_task_row_resolving_or_not(
    sent_messages, django_capture_on_commit_callbacks
):
    task, (item,) = requested_queue(n=1, judgments=2)
    first, second = annotator(task, "a"), annotator(task, "b")
    statements, _ = _answer(first, task)
    assert not [sql for sql in statements if TASK_ROW.match(sql)], statements
    request = VerificationRequest.objects.get(item=item)
    assert (request.state, request.judgments_counted) == ("pending", 1)
    with django_capture_on_commit_callbacks() as after_commit:
        statements, _ = _answer(second, task)
    assert not [sql for sql in statements if TASK_ROW.match(sql)], statements
    request.refresh_from_db()
    assert (request.state, request.judgments_counted) == ("resolved", 2)
    # Stored unnumbered, the version untouched; the estimation is asked for after the commit.
    assert list(Judgment.objects.values_list("seq", flat=True)) == [None, None]
    task.refresh_from_db()
    assert (task.labels_version, task.estimate_pending) == (0, False)
    assert len(after_commit) == 1
    with django_capture_on_commit_callbacks(execute=True):
        after_commit[0]()
    assert Task.objects.get(pk=task.pk).estimate_pending
    assert sent_messages == [("evaluation.estimate_task", [task.pk])]


def test_a_reader_numbers_the_counted_answers_as_one_new_version(sent_messages):
    task, items = requested_queue(n=3, judgments=2)
    first, second = annotator(task, "a"), annotator(task, "b")
    _answer(first, task)
    _answer(second, task, answer="cannot_tell")  # kept, not counted: never numbered
    assert number_judgments(task.pk) == 1
    assert number_judgments(task.pk) == 1  # nothing new: the same version
    assert sorted(Judgment.objects.values_list("counted", "seq")) == [(False, None), (True, 1)]
    _answer(first, task)
    _answer(second, task)
    assert number_judgments(task.pk) == 2
    assert Task.objects.get(pk=task.pk).labels_version == 2
    seqs = sorted(s for s in Judgment.objects.values_list("seq", flat=True) if s is not None)
    assert seqs == [1, 2, 2]
    # Version 1 still names exactly the answer it named when it was read.
    state = TaskState(n_items=len(items))
    load_answers(state, task, 1)
    assert state.n_judgments == 1


def test_an_unnumbered_answer_counts_as_given_since_any_version(sent_messages):
    """The planner's looks rest on the answers of the version it read: an item answered since,
    numbered or not, is not asked again."""
    task, (item,) = requested_queue(n=1, judgments=2)
    _answer(annotator(task, "a"), task)
    assert items_answered_since(task=task, item_ids=[item.pk], version=0) == {item.pk}
    version = number_judgments(task.pk)
    assert items_answered_since(task=task, item_ids=[item.pk], version=version) == set()
    _answer(annotator(task, "b"), task)
    assert items_answered_since(task=task, item_ids=[item.pk], version=version) == {item.pk}


def test_an_answer_taken_back_before_any_reader_is_never_numbered(sent_messages):
    task, (item,) = requested_queue(n=1, judgments=2)
    user = annotator(task, "a")
    _, client_id = _answer(user, task)
    undo = undo_answer(annotator=user, client_id=client_id)
    assert undo.record.withdrawn_seq == 1  # the withdrawal took a version, as before
    assert number_judgments(task.pk) == 1  # nothing counted is left to number
    (judgment,) = Judgment.objects.all()
    assert (judgment.counted, judgment.seq) == (False, None)
    assert VerificationRequest.objects.get(item=item).judgments_counted == 0
