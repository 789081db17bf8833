"""The Celery tasks' wiring: the beat schedule names registered tasks, and the phase job applies
the tasks' dated board changes through its service."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from config.celery import app
from evaluation import tasks
from leaderboard.models import Task


def test_every_beat_entry_names_a_registered_task_with_a_positive_interval():
    app.loader.import_default_modules()
    for name, entry in settings.CELERY_BEAT_SCHEDULE.items():
        assert entry["task"] in app.tasks, name
        assert float(entry["schedule"]) > 0, name


def test_the_phase_job_runs_every_minute_by_default():
    entry = settings.CELERY_BEAT_SCHEDULE["task-phases"]
    assert entry == {"task": "evaluation.apply_task_phases", "schedule": 60.0}


@pytest.mark.django_db
def test_the_phase_job_holds_a_board_whose_deadline_passed_once():
    close = timezone.now() - timedelta(minutes=5)
    task = Task.objects.create(slug="t", title="T", submissions_close_at=close)
    assert tasks.apply_task_phases.apply().get() == {"held": 1, "published": 0}
    assert tasks.apply_task_phases.apply().get() == {"held": 0, "published": 0}
    task.refresh_from_db()
    assert task.board_held and task.hold_applied_for == close
