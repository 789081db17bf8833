"""A resolution asks for its estimation after its commit; if the web worker dies in between, the
watchdog asks instead: a counted answer no engine job has read (numbered) is work owed."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from annotation.models import Judgment
from annotation.services import submit_judgment
from evaluation.services.watchdog import watchdog
from leaderboard.jobs import ESTIMATE_TASK
from leaderboard.models import Task

from pipeline_support import PipelineDriver, annotator, requested_queue

pytestmark = pytest.mark.django_db


def test_counted_answers_no_engine_job_read_get_an_estimation(
    monkeypatch, django_capture_on_commit_callbacks
):
    driver = PipelineDriver(monkeypatch)
    task, (item,) = requested_queue(n=1, judgments=1)
    # The answer commits; its worker dies before asking for the estimation (the callbacks
    # registered for after the commit never run).
    out = submit_judgment(
        request_id=item.verification_request.pk, annotator=annotator(task), answer="correct"
    )
    assert out.resolved and out.judgment.seq is None
    assert driver.sent == [] and not Task.objects.get(pk=task.pk).estimate_pending
    later = timezone.now() + timedelta(seconds=settings.PIPELINE_STUCK_SECONDS + 1)
    with django_capture_on_commit_callbacks(execute=True):
        assert watchdog(now=timezone.now())["estimates"] == 0  # not overdue yet
        assert watchdog(now=later)["estimates"] == 1
    assert driver.sent == [(ESTIMATE_TASK, [task.pk])]
    with django_capture_on_commit_callbacks(execute=True):
        driver.drain()
    assert Judgment.objects.get().seq == 1  # read by the estimation
    with django_capture_on_commit_callbacks(execute=True):
        assert watchdog(now=later)["estimates"] == 0
