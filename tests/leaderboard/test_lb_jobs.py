"""Pipeline messages: sent by name, only after commit, estimations debounced per task."""

import pytest
from django.db import transaction

from leaderboard import jobs
from leaderboard.models import Task

from pipeline_support import PipelineDriver, make_task

pytestmark = pytest.mark.django_db(transaction=True)


def test_messages_wait_for_the_commit_and_vanish_on_rollback(monkeypatch):
    driver = PipelineDriver(monkeypatch)
    task = make_task()
    with transaction.atomic():
        jobs.enqueue_plan(41)
        assert driver.sent == []
    assert driver.sent == [("evaluation.plan_run", [41])]
    with pytest.raises(RuntimeError), transaction.atomic():
        jobs.enqueue_plan(42)
        jobs.enqueue_estimate(task.pk)
        raise RuntimeError("upload failed")
    assert driver.sent == [("evaluation.plan_run", [41])]
    task.refresh_from_db()
    assert not task.estimate_pending


def test_a_burst_of_answers_asks_for_one_estimation(monkeypatch):
    driver = PipelineDriver(monkeypatch)
    task = make_task()
    sent = [jobs.enqueue_estimate(task.pk) for _ in range(5)]
    assert sent == [True, False, False, False, False]
    assert driver.sent == [("evaluation.estimate_task", [task.pk])]
    # The worker clears the flag when it starts: the next answer schedules one more.
    Task.objects.filter(pk=task.pk).update(estimate_pending=False)
    assert jobs.enqueue_estimate(task.pk)
    assert jobs.enqueue_estimate(task.pk, force=True)
    assert len(driver.sent) == 3


def test_the_debounce_delay_is_the_countdown(monkeypatch, settings):
    settings.ESTIMATE_DEBOUNCE_SECONDS = 3
    calls = []
    monkeypatch.setattr(
        jobs.current_app,
        "send_task",
        lambda name, args, countdown=None: calls.append((name, args, countdown)),
    )
    task = make_task()
    jobs.enqueue_estimate(task.pk)
    assert calls == [("evaluation.estimate_task", [task.pk], 3)]
