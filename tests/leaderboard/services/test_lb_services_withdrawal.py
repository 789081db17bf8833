"""Withdrawing a run (its team, the task's organizers) and marking a baseline (organizers): who
may, from which states, the quota rule, idempotency, the stored file; and a run's default name.
The engine's side (the record kept, requests cancelled) is in
tests/evaluation/services/test_ev_withdrawals.py."""

from __future__ import annotations

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.files.storage import default_storage

from leaderboard.models import Estimate, Run, RunEvent, RunPredictions
from leaderboard.selectors import counted_runs, quota_for, withdrawal_refunds
from leaderboard.services.ingest import ingest_run, submit_and_ingest
from leaderboard.services.lifecycle import fail_run, transition_run
from leaderboard.services.run_names import default_name
from leaderboard.services.runs import SubmissionError, submit_run
from leaderboard.services.teams import create_team
from leaderboard.services.withdrawal import RunActionError, set_baseline, withdraw_run

from worlds import stored_snapshot

pytestmark = pytest.mark.django_db

RUN = "a\t0.9\nb\t0.4\n"


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path


def submit(task, team, user, upload, text=RUN, name="", file_name="run.tsv"):
    return submit_and_ingest(
        task=task,
        team=team,
        user=user,
        upload=upload(text, file_name),
        file_name=file_name,
        name=name,
    )


@pytest.fixture
def stranger(db):
    user = get_user_model().objects.create_user("stranger")
    create_team(name="Other", members=[user])
    return user


def refused(**kwargs) -> RunActionError:
    with pytest.raises(RunActionError) as info:
        withdraw_run(**kwargs)
    return info.value


def test_a_queued_run_withdrawn_by_its_team_gives_its_slot_back(
    task, team, participant, make_upload, sent_jobs, django_capture_on_commit_callbacks
):
    run = submit(task, team, participant, make_upload)
    assert quota_for(task=task, team=team).used_total == 1
    sent_jobs.clear()
    with django_capture_on_commit_callbacks(execute=True):
        withdrawn = withdraw_run(run=run, by=participant)
    run.refresh_from_db()
    assert run.state == withdrawn.state == Run.State.WITHDRAWN
    assert run.quota_refunded and run.finished_at is not None
    assert run.reason.startswith("withdrawn by its team (pat)")
    assert "no longer counts against the team's quota" in run.reason
    assert quota_for(task=task, team=team).used_total == 0
    assert RunEvent.objects.filter(run=run).latest("id").state == Run.State.WITHDRAWN
    # The estimation drops it from the board and cancels what only it needed.
    assert sent_jobs.names() == ["evaluation.estimate_task"]
    # A refunded run's file may be submitted again.
    assert submit(task, team, participant, make_upload).state == Run.State.QUEUED


def test_a_run_annotators_were_asked_about_still_counts(
    task, team, participant, make_upload, sent_jobs
):
    run = submit(task, team, participant, make_upload)
    Run.objects.filter(pk=run.pk).update(state=Run.State.AWAITING_LABELS, rounds=1)
    run.refresh_from_db()
    assert not withdrawal_refunds(run)
    withdraw_run(run=run, by=participant)
    run.refresh_from_db()
    assert run.state == Run.State.WITHDRAWN and not run.quota_refunded
    assert "still counts against the team's quota" in run.reason
    assert list(counted_runs(task=task, team=team)) == [run]
    # The same file again is the same run: refused, so withdrawing cannot buy a fresh estimate.
    with pytest.raises(SubmissionError) as info:
        submit(task, team, participant, make_upload)
    assert info.value.code == "duplicate" and "withdrawn" in info.value.message


def test_a_run_a_snapshot_estimated_still_counts(task, team, participant, make_upload, sent_jobs):
    run = submit(task, team, participant, make_upload)
    snapshot = stored_snapshot(task, [], published=False)
    Estimate.objects.create(
        snapshot=snapshot,
        run=run,
        metric="precision",
        value=0.5,
        low=0.1,
        high=0.9,
        level=0.95,
        labels_used=0,
        method="wilson",
    )
    assert not withdrawal_refunds(run)
    withdraw_run(run=run, by=participant)
    run.refresh_from_db()
    assert not run.quota_refunded and quota_for(task=task, team=team).used_total == 1


def test_organizers_may_withdraw_any_run_and_others_may_not(
    task, team, participant, organizer, stranger, make_upload, sent_jobs
):
    run = submit(task, team, participant, make_upload)
    error = refused(run=run, by=stranger)
    assert (error.code, error.http_status) == ("not_allowed", 403)
    run.refresh_from_db()
    assert run.state == Run.State.QUEUED
    withdraw_run(run=run, by=organizer)
    run.refresh_from_db()
    assert run.reason.startswith("withdrawn by an organizer of the task (org)")


def test_withdrawing_is_idempotent(task, team, participant, make_upload, sent_jobs):
    run = submit(task, team, participant, make_upload)
    withdraw_run(run=run, by=participant)
    events = RunEvent.objects.filter(run=run).count()
    again = withdraw_run(run=run, by=participant)
    assert again.state == Run.State.WITHDRAWN
    assert RunEvent.objects.filter(run=run).count() == events


def test_rejected_and_failed_runs_have_nothing_to_withdraw(
    task, team, participant, make_upload, sent_jobs
):
    with pytest.raises(SubmissionError) as info:
        submit(task, team, participant, make_upload, text="a\tnot a score\n")
    rejected = info.value.run
    error = refused(run=rejected, by=participant)
    assert (error.code, error.http_status) == ("nothing_to_withdraw", 409)
    assert "rejected" in error.message and "nothing was changed" in error.message
    failed = submit(task, team, participant, make_upload, text="c\t0.1\n", file_name="other.tsv")
    fail_run(failed, "platform error")
    assert refused(run=failed, by=participant).code == "nothing_to_withdraw"


def test_a_run_withdrawn_before_validation_loses_its_file_and_is_never_validated(
    task, team, participant, make_upload, sent_jobs, django_capture_on_commit_callbacks
):
    run = submit_run(
        task=task,
        team=team,
        user=participant,
        upload=make_upload(RUN),
        file_name="r.tsv",
        enqueue=False,
    )
    stored = run.upload
    assert stored and default_storage.exists(stored)
    with django_capture_on_commit_callbacks(execute=True):
        withdraw_run(run=run, by=participant)
    run.refresh_from_db()
    assert (run.state, run.upload, run.quota_refunded) == (Run.State.WITHDRAWN, "", True)
    assert not default_storage.exists(stored)
    assert "evaluation.estimate_task" not in sent_jobs.names()  # it was never in the engine
    assert ingest_run(run.pk) == Run.State.WITHDRAWN  # a late message does nothing


def test_a_worker_cannot_move_a_withdrawn_run(task, team, participant, make_upload, sent_jobs):
    run = submit(task, team, participant, make_upload)
    stale = Run.objects.get(pk=run.pk)
    withdraw_run(run=run, by=participant)
    from leaderboard.services.lifecycle import RunWithdrawn

    with pytest.raises(RunWithdrawn):
        transition_run(stale, Run.State.PLANNING, "planning the first round")
    run.refresh_from_db()
    assert run.state == Run.State.WITHDRAWN


# -- baselines --------------------------------------------------------------------------------
def test_organizers_mark_a_baseline_and_the_task_is_estimated_again(
    task,
    team,
    participant,
    organizer,
    stranger,
    make_upload,
    sent_jobs,
    django_capture_on_commit_callbacks,
):
    run = submit(task, team, participant, make_upload)
    sent_jobs.clear()
    for user in (participant, stranger):
        with pytest.raises(RunActionError) as info:
            set_baseline(run=run, by=user, baseline=True)
        assert (info.value.code, info.value.http_status) == ("not_allowed", 403)
    with django_capture_on_commit_callbacks(execute=True):
        marked = set_baseline(run=run, by=organizer, baseline=True)
    run.refresh_from_db()
    assert marked.baseline and run.baseline
    assert sent_jobs.names() == ["evaluation.estimate_task"]
    set_baseline(run=run, by=organizer, baseline=True)  # idempotent
    set_baseline(run=run, by=organizer, baseline=False)
    run.refresh_from_db()
    assert not run.baseline


def test_a_run_on_no_board_cannot_be_a_baseline(
    task, team, participant, organizer, make_upload, sent_jobs
):
    run = submit(task, team, participant, make_upload)
    withdraw_run(run=run, by=participant)
    with pytest.raises(RunActionError) as info:
        set_baseline(run=run, by=organizer, baseline=True)
    assert (info.value.code, info.value.http_status) == ("not_on_board", 409)
    run.refresh_from_db()
    assert not run.baseline


# -- a run's default name ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("file_name", "expected"),
    [
        ("bm25 v2.tsv.gz", "bm25 v2"),
        ("dir/sub/Rerank.JSONL", "Rerank"),
        ("weird\tname\x00 .txt", "weird name"),
        ("no-extension", "no-extension"),
        ("archive.tar.gz", "archive.tar"),
        ("", "run-1"),
        (".tsv", "run-1"),
    ],
)
def test_a_run_is_named_after_its_file(task, team, file_name, expected):
    assert default_name(task=task, team=team, file_name=file_name) == expected


def test_a_default_name_is_unique_among_the_teams_runs(
    task, team, participant, stranger, make_upload, sent_jobs
):
    task.max_runs_per_team = task.max_runs_per_team_per_day = 10
    task.save()
    first = submit(task, team, participant, make_upload, file_name="bm25.tsv")
    second = submit(task, team, participant, make_upload, text="c\t1\n", file_name="bm25.tsv")
    named = submit(task, team, participant, make_upload, text="d\t1\n", name="bm25-3")
    third = submit(task, team, participant, make_upload, text="e\t1\n", file_name="bm25.txt")
    assert [first.name, second.name, named.name] == ["bm25", "bm25-2", "bm25-3"]
    assert third.name == "bm25-4"
    other = create_team(name="Third", members=[participant])
    assert default_name(task=task, team=other, file_name="bm25.tsv") == "bm25"
    long = "x" * 200 + ".tsv"
    name = default_name(task=task, team=team, file_name=long)
    assert name == "x" * 120
    Run.objects.create(task=task, team=team, name=name)
    assert default_name(task=task, team=team, file_name=long) == "x" * 118 + "-2"


def test_a_run_withdrawn_before_the_engine_took_it_in_keeps_no_predictions(
    task, team, participant, sent_jobs
):
    """The engine takes in every run with stored predictions: a run withdrawn from a state before
    that (here one whose predictions a worker stored a moment before moving it on) keeps none."""
    run = Run.objects.create(task=task, team=team, name="early", state=Run.State.VALIDATING)
    RunPredictions.objects.create(
        run=run, items=np.array([0], dtype=np.int64).tobytes(), scores=np.ones(1).tobytes()
    )
    withdraw_run(run=run, by=participant)
    assert not RunPredictions.objects.filter(run=run).exists()
