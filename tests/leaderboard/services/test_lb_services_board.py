"""Holding and publishing the public board; editing a run's public details."""

import numpy as np
import pytest

from leaderboard.models import LeaderboardSnapshot
from leaderboard.services.board import (
    RunDetailsError,
    hold_board,
    publish_board,
    update_run_details,
)

from pipeline_support import (
    PipelineDriver,
    add_items,
    add_run,
    annotator,
    answer_all,
    make_task,
    make_team,
)

# The pipeline enqueues on commit, so these tests commit.
pytestmark = pytest.mark.django_db(transaction=True)


def _scored_task(monkeypatch, held: bool):
    driver = PipelineDriver(monkeypatch)
    task = make_task(target_half_width=0.2, board_held=held)
    add_items(task, 40)
    run = add_run(task, make_team("A"), np.arange(30))
    driver.sent.append(("evaluation.plan_run", [run.pk]))
    user = annotator(task)
    for _ in range(20):
        driver.drain()
        if not answer_all(task, {i: i % 3 > 0 for i in range(40)}, user):
            break
    driver.drain()
    return task


def test_snapshots_are_published_as_written_when_the_board_is_not_held(monkeypatch):
    task = _scored_task(monkeypatch, held=False)
    snapshots = list(task.snapshots.all())
    assert snapshots and all(s.published and s.published_at for s in snapshots)


def test_held_board_stores_unpublished_snapshots_until_published(monkeypatch):
    task = _scored_task(monkeypatch, held=True)
    assert task.snapshots.exists()
    assert not task.snapshots.filter(published=True).exists()
    latest = publish_board(task=task)
    assert latest == task.snapshots.order_by("-version").first()
    assert not task.snapshots.filter(published=False).exists()
    task.refresh_from_db()
    assert task.board_held is False
    assert publish_board(task=task) == latest  # idempotent


def test_one_off_publication_keeps_the_hold(monkeypatch):
    task = _scored_task(monkeypatch, held=True)
    publish_board(task=task, release_hold=False)
    task.refresh_from_db()
    assert task.board_held is True
    hold_board(task=task)
    task.refresh_from_db()
    assert task.board_held is True
    assert LeaderboardSnapshot.objects.filter(task=task, published=False).count() == 0


def test_publishing_a_task_without_snapshots_returns_none():
    task = make_task()
    assert publish_board(task=task) is None


def test_run_details_are_validated_and_saved():
    task = make_task()
    run = add_run(task, make_team("A"), [0], name="old")
    update_run_details(run=run, name="  new  ", description="d", link="https://example.org/p")
    run.refresh_from_db()
    assert (run.name, run.description, run.link) == ("new", "d", "https://example.org/p")
    with pytest.raises(RunDetailsError) as err:
        update_run_details(run=run, name="", link="javascript:alert(1)")
    assert set(err.value.field_errors) == {"name", "link"}
    with pytest.raises(RunDetailsError):
        update_run_details(run=run, state="scored")
    run.refresh_from_db()
    assert run.name == "new"
