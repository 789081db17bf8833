"""A task's calendar (``leaderboard.phases``): the window, the deadline's hold, the reveal."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from leaderboard import phases
from leaderboard.models import Task

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


def dated(**fields) -> Task:
    return Task(slug="t", title="T", **fields)


@pytest.mark.parametrize(
    ("now", "phase"),
    [(T0 - HOUR, "not_open"), (T0, "open"), (T0 + HOUR, "open"), (T0 + 2 * HOUR, "after_deadline")],
)
def test_submission_phase_follows_the_window(now, phase):
    task = dated(submissions_open_at=T0, submissions_close_at=T0 + 2 * HOUR)
    assert phases.submission_phase(task, now) == phase


def test_a_task_without_dates_is_always_open_and_never_late():
    task = dated()
    assert phases.submission_phase(task, T0) == "open"
    assert not phases.is_after_deadline(task, T0 + 1000 * HOUR)
    assert not phases.hold_due(task, T0) and not phases.reveal_due(task, T0)


def test_the_deadline_holds_the_board_before_anything_records_it():
    task = dated(submissions_close_at=T0)
    assert not phases.board_held(task, T0 - timedelta(seconds=1))
    assert phases.hold_due(task, T0) and phases.board_held(task, T0)


def test_a_recorded_hold_is_not_due_again_and_a_hand_release_stands():
    # The job held the board at T0, then an organizer published by hand (board_held off).
    task = dated(submissions_close_at=T0, hold_applied_for=T0, board_held=False)
    assert not phases.hold_due(task, T0 + HOUR)
    assert not phases.board_held(task, T0 + HOUR)


def test_a_moved_deadline_is_a_new_hold():
    task = dated(submissions_close_at=T0 + 5 * HOUR, hold_applied_for=T0)
    assert not phases.hold_due(task, T0 + HOUR)
    assert phases.hold_due(task, T0 + 5 * HOUR)


def test_after_the_reveal_is_applied_no_deadline_holds_again():
    task = dated(
        submissions_close_at=T0 - HOUR,
        reveal_at=T0,
        reveal_applied_for=T0,
        hold_applied_for=T0 - 2 * HOUR,  # the deadline was moved back after the reveal
    )
    assert not phases.hold_due(task, T0 + HOUR)


def test_reveal_is_due_once_per_reveal_time():
    task = dated(submissions_close_at=T0, reveal_at=T0 + HOUR)
    assert not phases.reveal_due(task, T0 + HOUR - timedelta(seconds=1))
    assert phases.reveal_due(task, T0 + HOUR)
    task.reveal_applied_for = T0 + HOUR
    assert not phases.reveal_due(task, T0 + 2 * HOUR)


def test_a_due_but_unapplied_reveal_keeps_the_board_held_until_the_job_publishes():
    task = dated(submissions_close_at=T0, reveal_at=T0 + HOUR)
    assert phases.board_held(task, T0 + 2 * HOUR)


def test_a_run_at_the_deadline_itself_is_late():
    task = dated(submissions_close_at=T0)
    assert not phases.is_after_deadline(task, T0 - timedelta(microseconds=1))
    assert phases.is_after_deadline(task, T0)
