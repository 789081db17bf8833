"""Submitting runs: stored whole or refused whole, quotas, task state, team membership."""

from __future__ import annotations

import gzip
import io
from datetime import timedelta

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from leaderboard.models import Item, Run, RunEvent, RunPredictions, Task
from leaderboard.selectors import quota_for
from leaderboard.services.items import ensure_items
from leaderboard.services.lifecycle import fail_run
from leaderboard.services.runs import SubmissionError, resolve_team, submit_run, submit_upload
from leaderboard.services.tasks import create_team

pytestmark = pytest.mark.django_db

RUN = "b\t0.25\na\t0.5\nc\t1\n"


def upload_file(text: str | bytes, name: str = "run.tsv") -> io.BytesIO:
    stream = io.BytesIO(text.encode() if isinstance(text, str) else text)
    stream.name = name
    return stream


def submit(task, team, user, text=RUN, name="", file_name="run.tsv", **kw):
    return submit_run(task=task, team=team, user=user, upload=upload_file(text, file_name),
                      file_name=file_name, name=name, **kw)


def refused(*args, **kwargs) -> SubmissionError:
    with pytest.raises(SubmissionError) as info:
        submit(*args, **kwargs)
    return info.value


def test_a_run_is_stored_and_queued(task, team, participant, sent_jobs,
                                    django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        run = submit(task, team, participant, description="first try")
    run.refresh_from_db()
    assert run.state == Run.State.QUEUED
    assert (run.name, run.description, run.submitted_by) == ("run-1", "first try", participant)
    assert (run.n_predictions, run.n_new_items, run.error_count) == (3, 3, 0)
    assert (run.file_name, run.file_format, run.file_bytes) == ("run.tsv", "tsv", len(RUN))
    assert len(run.sha256) == 64 and run.reason == "3 predictions"
    assert list(RunEvent.objects.filter(run=run).values_list("state", flat=True)) == [
        "received", "validating", "queued"]
    # Items in order of first appearance; predictions sorted by item index.
    assert dict(Item.objects.filter(task=task).values_list("key", "index")) == {
        "b": 0, "a": 1, "c": 2}
    items, scores = RunPredictions.objects.get(run=run).arrays()
    assert items.tolist() == [0, 1, 2] and scores.tolist() == [0.25, 0.5, 1.0]
    task.refresh_from_db()
    assert task.n_items == 3
    assert sent_jobs == [("evaluation.plan_run", [run.pk])]


def test_the_plan_is_sent_only_after_commit(task, team, participant, sent_jobs,
                                            django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        submit(task, team, participant)
    assert sent_jobs == [] and len(callbacks) == 1


def test_indices_stay_dense_across_runs_and_known_items_are_reused(task, team, participant,
                                                                   sent_jobs):
    first = submit(task, team, participant, "a\t0.1\nb\t0.2\n")
    second = submit(task, team, participant, "c\t0.3\nb\t0.9\nd\t0.4\n", name="mine")
    assert (first.name, second.name) == ("run-1", "mine")
    assert second.n_new_items == 2 and second.n_predictions == 3
    keys = dict(Item.objects.filter(task=task).values_list("key", "index"))
    assert keys == {"a": 0, "b": 1, "c": 2, "d": 3}
    items, scores = RunPredictions.objects.get(run=second).arrays()
    assert items.tolist() == [1, 2, 3] and scores.tolist() == [0.9, 0.3, 0.4]
    assert sorted(Item.objects.filter(task=task).values_list("index", flat=True)) == [0, 1, 2, 3]
    third = submit(task, team, participant, "a\n")
    assert third.name == "run-3"


def test_gzip_jsonl_with_payloads(task, team, participant, sent_jobs):
    ensure_items(task=task, keys=["old", "kept"], payloads={"kept": {"v": "original"}})
    body = (b'{"key": "new", "score": 0.5, "payload": {"v": 1}}\n'
            b'{"key": "old", "score": 0.5, "payload": {"v": 2}}\n'
            b'{"key": "kept", "score": 0.5, "payload": {"v": 3}}\n')
    run = submit(task, team, participant, gzip.compress(body), file_name="run.jsonl.gz")
    assert run.file_format == "jsonl" and run.n_new_items == 1
    payloads = dict(Item.objects.filter(task=task).values_list("key", "payload"))
    assert payloads == {"old": {"v": 2}, "kept": {"v": "original"}, "new": {"v": 1}}


def test_a_rejected_file_leaves_a_rejected_run_and_nothing_else(task, team, participant,
                                                                sent_jobs,
                                                                django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        exc = refused(task, team, participant, "a\t0.5\nb\tabc\nb\t2\n\nc\t0.1\n")
    assert exc.code == "rejected"
    assert exc.message == "rejected: 3 problems (first: line 2: score 'abc' is not a number)"
    assert [p.as_dict() for p in exc.problems] == [
        {"line": 2, "message": "score 'abc' is not a number"},
        {"line": 3, "message": "score '2' is outside [0, 1]"},
        {"line": 4, "message": "blank line (only the end of the file may have blank lines)"}]
    run = exc.run
    run.refresh_from_db()
    assert run.state == Run.State.REJECTED and run.finished_at is not None
    assert run.reason == exc.message and run.error_count == 3
    assert run.errors[0] == {"line": 2, "message": "score 'abc' is not a number"}
    assert list(RunEvent.objects.filter(run=run).values_list("state", flat=True)) == [
        "received", "validating", "rejected"]
    assert not Item.objects.exists() and not RunPredictions.objects.exists()
    task.refresh_from_db()
    assert task.n_items == 0 and sent_jobs == []
    assert exc.as_dict()["run"] == run.pk and exc.as_dict()["total"] == 3


def test_a_failure_while_storing_rolls_everything_back(task, team, participant, sent_jobs,
                                                       monkeypatch,
                                                       django_capture_on_commit_callbacks):
    def boom(**kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(RunPredictions.objects, "create", boom)
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(RuntimeError):
        submit(task, team, participant)
    assert not Item.objects.exists() and not Run.objects.exists()
    assert not RunEvent.objects.exists() and sent_jobs == []
    task.refresh_from_db()
    assert task.n_items == 0


def test_over_the_size_limit_before_and_after_decompression(task, team, participant, settings):
    task.max_upload_bytes = 64
    upload = upload_file("a\t0.5\n" * 20)
    upload.size = 120
    with pytest.raises(SubmissionError) as info:
        submit_run(task=task, team=team, user=participant, upload=upload)
    assert info.value.code == "too_large" and info.value.run is None
    assert info.value.message == "the file is 120 bytes, over the limit of 64 bytes for task " \
                                 "'linkage'"
    assert not Run.objects.exists()
    # Compressed it is small; decompressed it is not: refused while reading, recorded.
    exc = refused(task, team, participant, gzip.compress(b"a\t0.5\n" * 20))
    assert exc.code == "too_large" and exc.run.state == Run.State.REJECTED
    assert exc.problems[0].message == ("the file is larger than the limit of 64 bytes once "
                                       "decompressed; reading stopped")
    # The site-wide ceiling applies too.
    task.max_upload_bytes = 10**9
    settings.UPLOAD_MAX_BYTES = 32
    assert refused(task, team, participant, "a\t0.5\n" * 20).code == "too_large"


def test_too_many_predictions(task, team, participant):
    task.max_predictions_per_run = 2
    exc = refused(task, team, participant)
    assert exc.code == "rejected"
    assert exc.problems[0].message == ("the file has more than 2 predictions (the limit); "
                                       "reading stopped at line 3")


@pytest.mark.parametrize(("state", "message"), [
    (Task.State.CLOSED, "task 'linkage' is closed: it accepts runs only while it is open"),
    (Task.State.DRAFT, "task 'linkage' is still a draft: it accepts runs only while it is open"),
])
def test_closed_and_draft_tasks_take_no_runs(task, team, participant, state, message):
    Task.objects.filter(pk=task.pk).update(state=state)
    task.refresh_from_db()
    exc = refused(task, team, participant)
    assert (exc.code, exc.message) == ("task_closed", message)
    assert not Run.objects.exists()


def test_a_task_closed_while_parsing_takes_no_run(task, team, participant, monkeypatch):
    from leaderboard.services import runs

    real = runs.parse_run_file

    def close_then_parse(*args, **kwargs):
        Task.objects.filter(pk=task.pk).update(state=Task.State.CLOSED)
        return real(*args, **kwargs)

    monkeypatch.setattr(runs, "parse_run_file", close_then_parse)
    assert refused(task, team, participant).code == "task_closed"
    assert not Item.objects.exists()


def test_only_team_members_submit(task, team, sent_jobs):
    outsider = get_user_model().objects.create_user("out")
    exc = refused(task, team, outsider)
    assert (exc.code, exc.message) == ("not_team_member", "you are not a member of team 'Alpha'")


def _runs(task, team, n, state=Run.State.QUEUED, age=timedelta(0), **fields):
    created = timezone.now() - age
    Run.objects.bulk_create([Run(task=task, team=team, name=f"old-{state}-{i}", state=state,
                                 created_at=created, **fields) for i in range(n)])


def test_total_quota_counts_neither_rejected_nor_failed_runs(task, team, participant):
    _runs(task, team, 4, age=timedelta(days=3))
    _runs(task, team, 6, state=Run.State.REJECTED)
    _runs(task, team, 1, state=Run.State.FAILED, quota_refunded=True)
    submit(task, team, participant)  # the 5th counted run
    exc = refused(task, team, participant)
    assert exc.code == "over_quota"
    assert exc.message == ("team 'Alpha' has used all 5 runs allowed per team on task 'linkage' "
                           "(rejected and failed runs do not count)")
    # A failed run gives its slot back.
    fail_run(Run.objects.filter(state=Run.State.QUEUED).first(), "worker lost")
    submit(task, team, participant)


def test_daily_quota_says_when_the_next_slot_frees_up(task, team, participant):
    _runs(task, team, 1, age=timedelta(hours=30))  # outside the window
    _runs(task, team, 1, age=timedelta(hours=23))
    _runs(task, team, 2, age=timedelta(hours=1))
    exc = refused(task, team, participant)
    assert exc.code == "over_quota"
    assert exc.message.startswith("team 'Alpha' has submitted 3 runs to task 'linkage' in the "
                                  "last 24 hours, the limit is 3 per day; the next slot frees "
                                  "up at ")
    assert exc.message.endswith("UTC (in 1 h 00 min)")


def test_quota_selector(task, team):
    now = timezone.now()
    _runs(task, team, 2, age=timedelta(hours=5))
    quota = quota_for(task=task, team=team, now=now)
    assert (quota.used_total, quota.limit_total, quota.used_today, quota.limit_today) == (
        2, 5, 2, 3)
    assert quota.next_slot_at is None and quota.remaining == 1 and not quota.exhausted
    _runs(task, team, 1, age=timedelta(hours=2))
    quota = quota_for(task=task, team=team, now=now)
    assert quota.daily_exhausted and quota.remaining == 0
    oldest = Run.objects.order_by("created_at").first().created_at
    assert quota.next_slot_at == oldest + timedelta(hours=24)


def test_resolve_team(participant, team):
    assert resolve_team(user=participant) == team
    assert resolve_team(user=participant, team="Alpha") == team
    assert resolve_team(user=participant, team=str(team.pk)) == team
    beta = create_team(name="Beta", members=[participant])
    create_team(name="Gamma")
    with pytest.raises(SubmissionError) as info:
        resolve_team(user=participant)
    assert (info.value.code, info.value.message) == (
        "invalid", "you are in several teams ('Alpha', 'Beta'): say which one the run is for "
                   "with the `team` field")
    assert resolve_team(user=participant, team="Beta") == beta
    with pytest.raises(SubmissionError) as info:
        resolve_team(user=participant, team="Gamma")
    assert (info.value.code, info.value.message) == (
        "not_team_member", "you are not a member of team 'Gamma'")
    with pytest.raises(SubmissionError) as info:
        resolve_team(user=participant, team="Nobody")
    assert (info.value.code, info.value.message) == ("invalid", "there is no team 'Nobody'")
    loner = get_user_model().objects.create_user("loner")
    with pytest.raises(SubmissionError) as info:
        resolve_team(user=loner)
    assert info.value.code == "not_team_member"
    assert info.value.message == ("you are not a member of any team: ask an organizer to add "
                                  "you to one")


def test_submit_upload_checks_the_task_before_the_team(task, participant, sent_jobs):
    loner = get_user_model().objects.create_user("loner")
    Task.objects.filter(pk=task.pk).update(state=Task.State.CLOSED)
    task.refresh_from_db()
    with pytest.raises(SubmissionError) as info:
        submit_upload(task=task, user=loner, upload=upload_file(RUN))
    assert info.value.code == "task_closed"


def test_a_long_name_is_refused(task, team, participant):
    exc = refused(task, team, participant, name="x" * 121)
    assert (exc.code, exc.message) == ("invalid", "the run name is longer than 120 characters")


def test_scores_default_to_one_without_a_score_column(task, team, participant):
    run = submit(task, team, participant, "x\ny\n")
    _items, scores = RunPredictions.objects.get(run=run).arrays()
    assert np.array_equal(scores, [1.0, 1.0])
