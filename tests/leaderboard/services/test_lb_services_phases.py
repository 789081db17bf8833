"""Phases with dates: the submission window, runs after the deadline, the dated hold and reveal
applied once by the phase job (``apply_due_phases``), and the dates' validation."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import pytest
from django.core.files.storage import default_storage

from leaderboard.models import LeaderboardSnapshot, Run, Task
from leaderboard.services.board import (
    apply_due_phases,
    apply_phases,
    hold_board,
    publish_board,
    snapshot_publication,
)
from leaderboard.services.ingest import submit_and_ingest
from leaderboard.services.runs import SubmissionError, submit_run
from leaderboard.services.tasks import TaskSettingsError, create_task, update_task

from pipeline_support import PipelineDriver, add_items, add_run, annotator, answer_all, make_team
from worlds import stored_snapshot

pytestmark = pytest.mark.django_db

HOUR = timedelta(hours=1)
RUN = "a\t0.9\nb\t0.1\n"


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path


@pytest.fixture
def submit(make_upload):
    """``submit(task, team, user, text)``: received and validated at once."""

    def submit(task, team, user, text=RUN):
        return submit_and_ingest(task=task, team=team, user=user, upload=make_upload(text))

    return submit


def snapshot(task, version: int, *, published: bool) -> LeaderboardSnapshot:
    return stored_snapshot(
        task,
        version=version,
        published=published,
        engine_version="e",
        labels_version=version,
    )


def state(task: Task) -> tuple[bool, datetime | None, datetime | None]:
    task.refresh_from_db()
    return task.board_held, task.hold_applied_for, task.reveal_applied_for


# -- the submission window ---------------------------------------------------------------------
def test_a_run_before_the_window_opens_is_refused_and_nothing_is_stored(
    clock, task, team, participant, make_upload, submit
):
    update_task(task=task, submissions_open_at=clock.now + 2 * HOUR + timedelta(minutes=5))
    with pytest.raises(SubmissionError) as refused:
        submit_run(task=task, team=team, user=participant, upload=make_upload(RUN))
    error = refused.value
    assert (error.code, error.http_status) == ("not_open_yet", 409)
    opens = task.submissions_open_at
    assert f"{opens:%Y-%m-%d %H:%M} UTC" in error.message and "(in 2 h 05 min)" in error.message
    assert not Run.objects.exists() and not default_storage.exists("received-runs")
    clock.move(hours=3)
    assert submit(task, team, participant).state == Run.State.QUEUED


def test_runs_after_the_deadline_are_accepted_and_marked(clock, task, team, participant, submit):
    update_task(task=task, submissions_close_at=clock.now + HOUR)
    on_time = submit(task, team, participant)
    clock.move(hours=1)  # the deadline itself is past the window
    late = submit(task, team, participant, text="a\t0.5\n")
    assert (on_time.after_deadline, late.after_deadline) == (False, True)
    assert Run.objects.get(pk=late.pk).after_deadline is True
    assert late.state == Run.State.QUEUED


def test_a_task_that_refuses_late_runs_says_when_its_window_closed(
    clock, task, team, participant, make_upload
):
    update_task(task=task, submissions_close_at=clock.now - HOUR, accept_late_runs=False)
    with pytest.raises(SubmissionError) as refused:
        submit_run(task=task, team=team, user=participant, upload=make_upload(RUN))
    assert (refused.value.code, refused.value.http_status) == ("deadline_passed", 409)
    assert f"closed at {task.submissions_close_at:%Y-%m-%d %H:%M} UTC" in refused.value.message
    assert not Run.objects.exists()


def test_the_window_is_checked_again_under_the_task_lock(
    clock, task, team, participant, make_upload
):
    """An upload that started in the window but is recorded after it closed is late."""
    update_task(task=task, submissions_close_at=clock.now + timedelta(seconds=5))

    class SlowUpload:
        name = "run.tsv"

        def __init__(self):
            self.stream = make_upload(RUN)

        def read(self, size=-1):
            clock.move(seconds=10)  # the copy to storage takes past the deadline
            return self.stream.read(size)

    run = submit_run(task=task, team=team, user=participant, upload=SlowUpload(), enqueue=False)
    assert run.after_deadline is True


def test_moving_the_deadline_re_marks_the_runs(clock, task, team, participant, submit):
    update_task(task=task, submissions_close_at=clock.now + HOUR)
    first = submit(task, team, participant)
    clock.move(hours=2)
    second = submit(task, team, participant, text="a\t0.5\n")
    update_task(task=task, submissions_close_at=clock.now + HOUR)  # extended
    assert Run.objects.get(pk=second.pk).after_deadline is False
    update_task(task=task, submissions_close_at=first.created_at)  # brought forward
    assert list(Run.objects.order_by("pk").values_list("after_deadline", flat=True)) == [
        True,
        True,
    ]
    update_task(task=task, submissions_close_at=None)
    assert not Run.objects.filter(after_deadline=True).exists()


# -- validation ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        (
            {"submissions_open_at": 2, "submissions_close_at": 1},
            "submissions_close_at",
            "must be after submissions_open_at",
        ),
        (
            {"submissions_open_at": 1, "submissions_close_at": 1},
            "submissions_close_at",
            "must be after submissions_open_at",
        ),
        (
            {"submissions_close_at": 2, "reveal_at": 1},
            "reveal_at",
            "may not be before submissions_close_at",
        ),
    ],
)
def test_dates_out_of_order_are_refused_and_change_nothing(clock, task, fields, field, message):
    dated = {name: clock.now + hours * HOUR for name, hours in fields.items()}
    with pytest.raises(TaskSettingsError) as refused:
        update_task(task=task, **dated)
    assert refused.value.field_errors == {field: [message]}
    assert refused.value.http_status == 400
    task.refresh_from_db()
    assert (task.submissions_open_at, task.submissions_close_at, task.reveal_at) == (None,) * 3
    with pytest.raises(TaskSettingsError):
        create_task(slug="other", title="Other", **dated)
    assert not Task.objects.filter(slug="other").exists()


def test_a_reveal_at_the_deadline_and_a_date_without_its_partner_are_fine(clock, task):
    update_task(task=task, submissions_close_at=clock.now, reveal_at=clock.now)
    update_task(task=task, submissions_close_at=None, submissions_open_at=clock.now)
    task.refresh_from_db()
    assert task.reveal_at == clock.now and task.submissions_close_at is None


def test_a_date_without_a_time_zone_or_not_a_date_is_refused(task):
    with pytest.raises(TaskSettingsError) as naive:
        update_task(task=task, reveal_at=datetime(2026, 12, 1, 12, 0))
    assert "time zone" in naive.value.field_errors["reveal_at"][0]
    with pytest.raises(TaskSettingsError) as garbage:
        update_task(task=task, submissions_open_at="next tuesday")
    assert list(garbage.value.field_errors) == ["submissions_open_at"]


# -- the dated hold and reveal ---------------------------------------------------------------------
def test_the_deadline_holds_new_snapshots_before_the_job_has_run(clock, task):
    update_task(task=task, submissions_close_at=clock.now + HOUR)
    assert snapshot_publication(task)["published"] is True
    clock.move(hours=1)
    assert snapshot_publication(task) == {"published": False, "published_at": None}
    assert state(task) == (False, None, None)  # nothing recorded yet


def test_the_job_holds_once_at_the_deadline_and_is_idempotent(clock, task):
    close = clock.now + HOUR
    update_task(task=task, submissions_close_at=close)
    assert apply_due_phases() == {"held": 0, "published": 0}
    assert state(task) == (False, None, None)
    clock.move(hours=1)
    assert apply_due_phases() == {"held": 1, "published": 0}
    assert state(task) == (True, close, None)
    assert apply_due_phases() == {"held": 0, "published": 0}
    clock.move(hours=5)
    assert apply_due_phases() == {"held": 0, "published": 0}


def test_a_hand_publication_after_the_deadline_is_not_undone_by_the_job(clock, task):
    close = clock.now + HOUR
    update_task(task=task, submissions_close_at=close)
    snapshot(task, 1, published=True)
    clock.move(hours=1, minutes=1)
    snapshot(task, 2, published=snapshot_publication(task)["published"])
    # The organizer publishes early, before the job noticed the deadline.
    assert publish_board(task=task).version == 2
    assert state(task) == (False, close, None)
    assert apply_due_phases() == {"held": 0, "published": 0}
    assert state(task) == (False, close, None)
    assert snapshot_publication(task)["published"] is True


def test_a_hand_publication_after_the_job_held_stands_at_later_ticks(clock, task):
    close = clock.now + HOUR
    update_task(task=task, submissions_close_at=close)
    clock.move(hours=2)
    apply_due_phases()
    publish_board(task=task)
    clock.move(minutes=1)
    assert apply_due_phases() == {"held": 0, "published": 0}
    assert state(task) == (False, close, None)


def test_the_reveal_publishes_held_snapshots_once(clock, task):
    close, reveal = clock.now + HOUR, clock.now + 3 * HOUR
    update_task(task=task, submissions_close_at=close, reveal_at=reveal)
    snapshot(task, 1, published=True)
    clock.move(hours=2)
    apply_due_phases()
    snapshot(task, 2, published=snapshot_publication(task)["published"])
    assert not LeaderboardSnapshot.objects.get(task=task, version=2).published
    clock.move(hours=1)
    assert apply_due_phases() == {"held": 0, "published": 1}
    assert state(task) == (False, close, reveal)
    published = LeaderboardSnapshot.objects.get(task=task, version=2)
    assert published.published and published.published_at == clock.now
    # A hold by hand after the reveal is the organizer's: the job leaves it.
    hold_board(task=task)
    clock.move(minutes=1)
    assert apply_due_phases() == {"held": 0, "published": 0}
    assert state(task) == (True, close, reveal)


def test_the_job_catches_up_after_missing_both_dates(clock, task):
    """The worker was down from before the deadline until after the reveal."""
    close, reveal = clock.now + HOUR, clock.now + 2 * HOUR
    update_task(task=task, submissions_close_at=close, reveal_at=reveal)
    clock.move(hours=1, minutes=30)
    snapshot(task, 1, published=snapshot_publication(task)["published"])
    clock.move(hours=10)
    assert apply_due_phases() == {"held": 1, "published": 1}
    assert state(task) == (False, close, reveal)
    assert LeaderboardSnapshot.objects.get(task=task, version=1).published


def test_a_hold_by_hand_after_a_due_reveal_applies_the_reveal_first(clock, task):
    update_task(task=task, submissions_close_at=clock.now + HOUR, reveal_at=clock.now + 2 * HOUR)
    clock.move(hours=3)
    hold_board(task=task)  # the job has not run since before the deadline
    assert state(task) == (True, task.submissions_close_at, task.reveal_at)
    assert apply_due_phases() == {"held": 0, "published": 0}
    assert state(task)[0] is True


def test_a_one_off_publication_after_the_deadline_keeps_the_board_held(clock, task):
    update_task(task=task, submissions_close_at=clock.now + HOUR)
    clock.move(hours=2)
    snapshot(task, 1, published=False)
    publish_board(task=task, release_hold=False)
    assert state(task)[:2] == (True, task.submissions_close_at)
    assert LeaderboardSnapshot.objects.get(task=task).published


def test_apply_phases_updates_the_task_it_is_given(clock, task):
    update_task(task=task, submissions_close_at=clock.now)
    applied = apply_phases(task=task)
    assert (applied.held, applied.revealed) == (True, False)
    assert task.board_held is True and task.hold_applied_for == task.submissions_close_at


# -- the pipeline writes held snapshots after the deadline ---------------------------------------
@pytest.mark.django_db(transaction=True)
def test_estimates_after_the_deadline_wait_for_the_reveal(monkeypatch, clock, task):
    driver = PipelineDriver(monkeypatch)
    update_task(
        task=task,
        target_half_width=0.2,
        submissions_close_at=clock.now - timedelta(minutes=1),  # passed; the job never ran
    )
    add_items(task, 40)
    run = add_run(task, make_team("A"), np.arange(30))
    driver.sent.append(("evaluation.plan_run", [run.pk]))
    user = annotator(task)
    for _ in range(20):
        driver.drain()
        if not answer_all(task, {i: i % 3 > 0 for i in range(40)}, user):
            break
    driver.drain()
    assert task.snapshots.exists()
    assert not task.snapshots.filter(published=True).exists()
    assert state(task) == (False, None, None)
