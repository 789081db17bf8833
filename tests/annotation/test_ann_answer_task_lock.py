"""How long an answer holds its task's row: every other counted answer of the task waits for it.

The task row is the judgment set's version (``Task.labels_version``), taken by every counted
answer in commit order, so counted answers of one task commit one at a time. What is left to
make short is the stretch from the task row to the commit: an answer does its reads before it
and then only writes (issue 32: with 9 statements in that stretch, 14-16 answers queued behind
it at saturation).
"""

from __future__ import annotations

import re
import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Judgment, VerificationRequest
from annotation.services import answer_assignment, claim_assignments
from leaderboard.models import Task

from pipeline_support import annotator, requested_queue

pytestmark = pytest.mark.django_db

# A statement that locks or writes the task row: the version's UPDATE, or the lock's SELECT of
# the row's id alone (``FOR NO KEY UPDATE`` on PostgreSQL, a plain read on SQLite).
TASK_ROW = re.compile(
    r'^(UPDATE "?leaderboard_task"? |SELECT "leaderboard_task"\."id" FROM "leaderboard_task" WHERE)'
)
TRANSACTION = re.compile(r"^(SAVEPOINT|RELEASE|ROLLBACK|BEGIN|COMMIT)\b")


def _held(user, task) -> list[str]:
    """The statements of one answer from the first that takes the task row to the last."""
    (lease,) = claim_assignments(task=task, annotator=user, count=1).assignments
    with CaptureQueriesContext(connection) as captured:
        answer_assignment(
            annotator=user, token=lease.token, client_id=uuid.uuid4(), answer="correct"
        )
    statements = [q["sql"] for q in captured.captured_queries if not TRANSACTION.match(q["sql"])]
    first = next(i for i, sql in enumerate(statements) if TASK_ROW.match(sql))
    return statements[first:]


def test_an_answer_holds_the_task_row_for_five_statements_resolving_or_not(sent_messages):
    task, (item,) = requested_queue(n=1, judgments=2)
    first, second = annotator(task, "a"), annotator(task, "b")
    held = _held(first, task)
    assert len(held) <= 5, held
    request = VerificationRequest.objects.get(item=item)
    assert (request.state, request.judgments_counted) == ("pending", 1)
    resolving = _held(second, task)
    assert len(resolving) <= 5, resolving
    request.refresh_from_db()
    assert (request.state, request.judgments_counted) == ("resolved", 2)
    assert request.resolved_at is not None
    assert sorted(Judgment.objects.values_list("seq", flat=True)) == [1, 2]
    assert Task.objects.get(pk=task.pk).labels_version == 2


def test_a_resolution_asks_for_an_estimation_unless_one_is_pending(sent_messages):
    """The version's statement reads the debounce flag too: with an estimation already asked
    for (which will see the answer), a resolution writes nothing more to the task row."""
    task, _items = requested_queue(n=2, judgments=2)
    first, second = annotator(task, "a"), annotator(task, "b")
    _held(first, task)
    _held(second, task)  # resolves the first item, asks for an estimation
    assert VerificationRequest.objects.filter(state="resolved").count() == 1
    assert Task.objects.get(pk=task.pk).estimate_pending
    _held(first, task)
    resolving = _held(second, task)
    assert VerificationRequest.objects.filter(state="resolved").count() == 2
    assert len(resolving) == 4, resolving  # version, request, judgment, lease
