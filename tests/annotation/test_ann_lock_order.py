"""One lock order for a task's requests and its judgment set: the task row first.

The planner's write transaction locks the task row (checking its lease) and then asks requests
again (locking their rows). An answer once locked its request and then took the next
judgment-set version (an update of the task row): taken in opposite orders, the two deadlocked on
PostgreSQL, which an integration run on CI hit. A counted answer now never takes the task row
(the engine numbers answers when it reads), so it does not wait for the planner at all; the
planner looks at the answers only once it holds the request's row, so a look is asked on an
item either before the answer (which then counts towards it) or not at all (the answer came
after the version the look was chosen from).
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from django.db import connections, transaction

from annotation.models import Judgment, VerificationRequest
from annotation.services import answer_assignment, claim_assignments, submit_judgment
from annotation.services.judgments import ask_again
from evaluation.locks import assert_lock_held, engine_lock

from pipeline_support import annotator, requested_queue

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _planning_round_asking_again(task, item, holding, errors):
    """The engine's write transaction: the lease checked with the task row locked, held while
    the answer starts, then the item asked again."""
    try:
        with engine_lock(task.pk) as token, transaction.atomic():
            assert_lock_held(task.pk, token)
            holding.set()
            time.sleep(0.5)  # the answer is under way meanwhile
            ask_again(task=task, item_ids=[item.pk], seen_version=0)
    except Exception as exc:  # reported by the test thread
        errors.append(repr(exc))
    finally:
        connections.close_all()


def _race(task, item, answer):
    holding, errors = threading.Event(), []
    planner = threading.Thread(
        target=_planning_round_asking_again, args=(task, item, holding, errors)
    )
    planner.start()
    assert holding.wait(10)
    try:
        answer()
    except Exception as exc:
        errors.append(repr(exc))
    planner.join()
    assert errors == []
    request = VerificationRequest.objects.get(item=item)
    assert Judgment.objects.filter(request=request, counted=True).count() == 1
    assert (request.judgments_required, request.judgments_counted, request.state) in (
        (2, 1, VerificationRequest.State.PENDING),  # asked again first; the answer counts to it
        (1, 1, VerificationRequest.State.RESOLVED),  # answered first: the look was out of date
    )


def test_an_answer_waits_for_a_planning_round_that_asks_its_item_again(sent_messages):
    task, (item,) = requested_queue(n=1, judgments=1)
    user = annotator(task)
    request = VerificationRequest.objects.get(item=item)
    _race(
        task,
        item,
        lambda: submit_judgment(request_id=request.pk, annotator=user, answer="correct"),
    )


def test_an_answer_on_a_lease_waits_for_a_planning_round_that_asks_its_item_again(sent_messages):
    task, (item,) = requested_queue(n=1, judgments=1)
    user = annotator(task)
    (lease,) = claim_assignments(task=task, annotator=user, count=1).assignments
    _race(
        task,
        item,
        lambda: answer_assignment(
            annotator=user, token=lease.token, client_id=uuid.uuid4(), answer="correct"
        ),
    )
