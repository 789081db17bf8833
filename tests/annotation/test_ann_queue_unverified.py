"""An annotator whose address is not verified claims and answers nothing (issue 29, N1):
403 ``unverified_email``, no lease, no judgment."""

from __future__ import annotations

import uuid

import pytest
from account_support import newcomer as unverified_account
from allauth.account.models import EmailAddress

from annotation.models import Assignment, Judgment
from annotation.services import answer_assignment, claim_assignments
from leaderboard.selectors import UnverifiedEmail

from pipeline_support import requested_queue

pytestmark = pytest.mark.django_db


def test_an_unverified_annotator_claims_and_answers_nothing():
    task, _items = requested_queue(2)
    newcomer = unverified_account()
    task.annotators.add(newcomer)
    with pytest.raises(UnverifiedEmail):
        claim_assignments(task=task, annotator=newcomer)
    assert not Assignment.objects.exists()

    EmailAddress.objects.filter(user=newcomer).update(verified=True)
    lease = claim_assignments(task=task, annotator=newcomer).assignments[0]
    # An address changed back to an unverified one: the lease held is answered by no-one.
    EmailAddress.objects.filter(user=newcomer).update(verified=False)
    with pytest.raises(UnverifiedEmail) as caught:
        answer_assignment(
            annotator=newcomer, token=lease.token, client_id=uuid.uuid4(), answer="correct"
        )
    assert caught.value.http_status == 403
    assert not Judgment.objects.exists()
