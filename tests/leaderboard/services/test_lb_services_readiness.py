"""Opening a task: a new task is a draft; opening it (or re-opening a closed one) is refused
with its checklist until nothing is missing; and the closed pool that one early run can no
longer kill (runs are refused before the pool, rejected runs never block it)."""

from __future__ import annotations

import pytest

from leaderboard.models import Run, Task
from leaderboard.selectors import quota_for
from leaderboard.services.ingest import submit_and_ingest
from leaderboard.services.pool import PoolError, upload_pool
from leaderboard.services.runs import SubmissionError, submit_run
from leaderboard.services.tasks import (
    TaskNotReady,
    TaskSettingsError,
    create_task,
    set_task_state,
    update_task,
)

from pipeline_support import open_unchecked, satisfy_checklist

pytestmark = pytest.mark.django_db


def test_a_task_is_created_as_a_draft_unless_told_otherwise(organizer):
    assert create_task(slug="plain", title="Plain").state == Task.State.DRAFT
    assert create_task(slug="shut", title="Shut", state="closed").state == Task.State.CLOSED


def test_a_task_created_open_is_refused_with_its_checklist_and_nothing_is_created(organizer):
    with pytest.raises(TaskNotReady) as refused:
        create_task(slug="eager", title="Eager", organizers=[organizer], state="open")
    error = refused.value
    assert (error.code, error.http_status) == ("task_not_ready", 409)
    assert error.message.startswith("task 'eager' is not ready to open (Annotators: 0 of the 2")
    assert error.message.endswith(
        "nothing was created: create it as a draft, and open it once its checklist is complete"
    )
    assert [p["message"].split(":")[0] for p in error.problems] == [
        "Annotators",
        "Reference sample",
        "Gold items",
    ]
    assert error.total == 3
    assert error.as_dict()["readiness"]["ready"] is False
    assert "state" in error.field_errors
    assert not Task.objects.filter(slug="eager").exists()


def test_opening_a_draft_waits_for_its_checklist(organizer):
    task = create_task(slug="t", title="T", organizers=[organizer])
    with pytest.raises(TaskNotReady) as refused:
        set_task_state(task=task, state=Task.State.OPEN)
    assert refused.value.message.endswith("nothing was changed")
    assert {c["key"] for c in refused.value.extra["readiness"]["checks"]} >= {"annotators", "gold"}
    assert task.state == Task.State.DRAFT  # the object as it was, and the row
    assert Task.objects.get(pk=task.pk).state == Task.State.DRAFT
    satisfy_checklist(task)
    set_task_state(task=task, state=Task.State.OPEN)
    assert Task.objects.get(pk=task.pk).state == Task.State.OPEN
    # Opening an open task changes nothing and is not refused (a retried request).
    set_task_state(task=task, state=Task.State.OPEN)


def test_settings_sent_with_the_opening_count(organizer):
    """A gold rate of 0 sent with ``state: open`` removes the gold need of the same request;
    a refusal saves none of them."""
    task = create_task(slug="t", title="T", organizers=[organizer], measures=["precision"])
    for i in range(2):
        task.annotators.create(username=f"ann{i}")
    with pytest.raises(TaskNotReady):
        update_task(task=task, state=Task.State.OPEN, title="Renamed")
    task.refresh_from_db()
    assert (task.state, task.title) == (Task.State.DRAFT, "T")
    update_task(task=task, state=Task.State.OPEN, gold_rate=0.0)
    task.refresh_from_db()
    assert (task.state, task.gold_rate) == (Task.State.OPEN, 0.0)


def test_re_opening_a_closed_task_checks_the_list_again_and_an_open_task_stays_open(organizer):
    task = satisfy_checklist(create_task(slug="t", title="T", organizers=[organizer]))
    set_task_state(task=task, state=Task.State.OPEN)
    task.annotators.clear()  # the list now falls short: an open task is not closed for it
    update_task(task=task, title="Still open")
    assert Task.objects.get(pk=task.pk).state == Task.State.OPEN
    set_task_state(task=task, state=Task.State.CLOSED)
    with pytest.raises(TaskNotReady, match="Annotators: 0 of the 2"):
        set_task_state(task=task, state=Task.State.OPEN)
    assert Task.objects.get(pk=task.pk).state == Task.State.CLOSED
    satisfy_checklist(task)
    set_task_state(task=task, state=Task.State.OPEN)
    assert Task.objects.get(pk=task.pk).state == Task.State.OPEN


def test_the_not_ready_refusal_is_a_settings_refusal(organizer):
    """Every caller that shows a settings refusal by field (pages, commands) shows this one."""
    task = create_task(slug="t", title="T", organizers=[organizer])
    with pytest.raises(TaskSettingsError) as refused:
        update_task(task=task, state="open")
    assert refused.value.field_errors["state"][0].startswith("not ready to open: Annotators:")


# -- a closed pool: runs wait for the pool, and no run blocks it ---------------------------------
POOL = "".join(f"k{i}\n" for i in range(4))
RUN = "".join(f"k{i}\t0.{i + 1}\t{i % 2}\n" for i in range(4))


@pytest.fixture
def early_pool(organizer, make_upload):
    """A closed pool open without its pool: created open when the form and the API allowed it,
    before the checklist (a task can no longer open so)."""
    return open_unchecked(
        create_task(slug="cp", title="CP", organizers=[organizer], kind=Task.Kind.CLOSED_POOL)
    )


def test_a_run_before_the_pool_is_refused_and_uses_no_quota(
    early_pool, team, participant, make_upload
):
    with pytest.raises(SubmissionError) as refused:
        submit_run(task=early_pool, team=team, user=participant, upload=make_upload(RUN))
    assert (refused.value.code, refused.value.http_status) == ("no_pool", 409)
    assert refused.value.message == (
        "task 'cp' has no pool yet: its organizers upload it before runs are accepted; nothing "
        "was stored or counted"
    )
    assert not Run.objects.filter(task=early_pool).exists()
    assert quota_for(task=early_pool, team=team).used_total == 0


def test_the_pool_uploads_after_an_early_run_and_runs_are_then_accepted(
    early_pool, team, participant, organizer, make_upload
):
    with pytest.raises(SubmissionError):
        submit_and_ingest(task=early_pool, team=team, user=participant, upload=make_upload(RUN))
    # Runs left by the old rule (rejected, failed) never block the pool either.
    Run.objects.create(task=early_pool, team=team, name="old", state=Run.State.REJECTED)
    Run.objects.create(task=early_pool, team=team, name="lost", state=Run.State.FAILED)
    assert upload_pool(task=early_pool, user=organizer, upload=make_upload(POOL)) == 4
    run = submit_and_ingest(
        task=early_pool, team=team, user=participant, upload=make_upload(RUN), name="after"
    )
    assert run.state == Run.State.QUEUED and run.n_predictions == 4


def test_the_two_pool_exists_refusals_say_what_blocks(early_pool, team, organizer, make_upload):
    waiting = Run.objects.create(task=early_pool, team=team, name="w", state=Run.State.RECEIVED)
    with pytest.raises(PoolError) as refused:
        upload_pool(task=early_pool, user=organizer, upload=make_upload(POOL))
    assert (refused.value.code, refused.value.http_status) == ("pool_exists", 409)
    assert refused.value.message == (
        f"task 'cp' has runs received before its pool that are not settled yet (run {waiting.pk} "
        "(received)): each is rejected once validated, as there is no pool to score it on; "
        "upload the pool again after that"
    )
    waiting.state = Run.State.REJECTED
    waiting.save()
    upload_pool(task=early_pool, user=organizer, upload=make_upload(POOL))
    with pytest.raises(PoolError) as again:
        upload_pool(task=early_pool, user=organizer, upload=make_upload(POOL))
    assert again.value.code == "pool_exists"
    assert again.value.message == (
        "task 'cp' already has its pool (4 items): a pool is uploaded once, and its runs are "
        "scored on it"
    )
