"""Submitting runs: received by the request, validated by a worker (stored whole or refused
whole), duplicates, quotas, task state, team membership."""

from __future__ import annotations

import gzip
import io
from datetime import timedelta

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.files.storage import default_storage
from django.utils import timezone

from leaderboard.kinds import open_world
from leaderboard.models import Item, Run, RunEvent, RunPredictions, Task
from leaderboard.selectors import quota_for
from leaderboard.services import ingest
from leaderboard.services import runs as runs_service
from leaderboard.services.ingest import ingest_run, submit_and_ingest
from leaderboard.services.items import ensure_items
from leaderboard.services.lifecycle import fail_run
from leaderboard.services.runs import SubmissionError, resolve_team, submit_run, submit_upload
from leaderboard.services.teams import create_team

pytestmark = pytest.mark.django_db

RUN = "b\t0.25\na\t0.5\nc\t1\n"


def upload_file(text: str | bytes, name: str = "run.tsv") -> io.BytesIO:
    stream = io.BytesIO(text.encode() if isinstance(text, str) else text)
    stream.name = name
    return stream


def submit(task, team, user, text=RUN, name="", file_name="run.tsv", **kw):
    """Submit and validate at once (what a worker does after the request)."""
    return submit_and_ingest(
        task=task,
        team=team,
        user=user,
        upload=upload_file(text, file_name),
        file_name=file_name,
        name=name,
        **kw,
    )


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path


def received_files() -> list[str]:
    """The received files still in storage."""
    if not default_storage.exists("received-runs"):
        return []
    dirs, _files = default_storage.listdir("received-runs")
    return [f"{d}/{f}" for d in dirs for f in default_storage.listdir(f"received-runs/{d}")[1]]


def test_a_received_run_the_watchdog_gives_up_on_leaves_no_file(
    task, team, participant, sent_jobs, settings, django_capture_on_commit_callbacks
):
    from evaluation.services.watchdog import watchdog

    settings.PIPELINE_MAX_ATTEMPTS = 0
    run = submit_run(task=task, team=team, user=participant, upload=upload_file(RUN, "run.tsv"))
    assert run.state == "received" and received_files() == [run.upload.split("/", 1)[1]]
    stuck = timezone.now() - timedelta(seconds=settings.PIPELINE_STUCK_SECONDS + 5)
    Run.objects.filter(pk=run.pk).update(state_changed_at=stuck)
    with django_capture_on_commit_callbacks(execute=True):
        assert watchdog()["failed"] == 1
    run.refresh_from_db()
    assert (run.state, run.upload, run.quota_refunded) == ("failed", "", True)
    assert received_files() == []


def refused(*args, **kwargs) -> SubmissionError:
    with pytest.raises(SubmissionError) as info:
        submit(*args, **kwargs)
    return info.value


def test_a_run_is_stored_and_queued(
    task, team, participant, sent_jobs, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        run = submit(task, team, participant, description="first try")
    run.refresh_from_db()
    assert run.state == Run.State.QUEUED
    assert (run.name, run.description, run.submitted_by) == ("run", "first try", participant)
    assert (run.n_predictions, run.n_new_items, run.error_count) == (3, 3, 0)
    assert (run.file_name, run.file_format, run.file_bytes) == ("run.tsv", "tsv", len(RUN))
    assert len(run.sha256) == 64 and run.reason == "3 predictions"
    assert list(RunEvent.objects.filter(run=run).values_list("state", flat=True)) == [
        "received",
        "validating",
        "queued",
    ]
    # Items in order of first appearance; predictions sorted by item index.
    assert dict(Item.objects.filter(task=task).values_list("key", "index")) == {
        "b": 0,
        "a": 1,
        "c": 2,
    }
    items, scores = RunPredictions.objects.get(run=run).arrays()
    assert items.tolist() == [0, 1, 2] and scores.tolist() == [0.25, 0.5, 1.0]
    task.refresh_from_db()
    assert task.n_items == 3
    assert sent_jobs == [("evaluation.plan_run", [run.pk])]


def test_the_plan_is_sent_only_after_commit(
    task, team, participant, sent_jobs, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        submit(task, team, participant)
    assert sent_jobs == [] and len(callbacks) == 2  # delete the received file, send the plan


def test_the_request_only_receives_the_file_and_a_worker_validates_it(
    task, team, participant, sent_jobs, monkeypatch, django_capture_on_commit_callbacks
):
    real = open_world.parse_run_file
    parsed_in = []
    monkeypatch.setattr(
        open_world, "parse_run_file", lambda *a, **kw: parsed_in.append("worker") or real(*a, **kw)
    )
    with django_capture_on_commit_callbacks(execute=True):
        run = submit_run(
            task=task, team=team, user=participant, upload=upload_file(RUN), file_name="run.tsv"
        )
    assert parsed_in == [] and run.state == Run.State.RECEIVED
    assert run.reason == "received run.tsv (17 bytes); waiting to be validated"
    assert len(run.sha256) == 64 and run.file_bytes == len(RUN)
    assert default_storage.open(run.upload).read() == RUN.encode()
    assert not Item.objects.exists() and not RunPredictions.objects.exists()
    assert sent_jobs == [("evaluation.ingest_run", [run.pk])]
    # The worker's job.
    stored = run.upload
    sent_jobs.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert ingest_run(run.pk) == Run.State.QUEUED
    run.refresh_from_db()
    assert parsed_in == ["worker"] and run.n_predictions == 3 and run.upload == ""
    assert list(RunEvent.objects.filter(run=run).values_list("state", flat=True)) == [
        "received",
        "validating",
        "queued",
    ]
    assert not default_storage.exists(stored)  # deleted once the run is queued
    assert sent_jobs == [("evaluation.plan_run", [run.pk])]


def test_ingesting_again_changes_nothing(
    task, team, participant, sent_jobs, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        run = submit_run(task=task, team=team, user=participant, upload=upload_file(RUN))
    with django_capture_on_commit_callbacks(execute=True):
        assert ingest_run(run.pk) == Run.State.QUEUED
        assert ingest_run(run.pk) == Run.State.QUEUED  # a duplicated or retried message
    assert Item.objects.count() == 3 and RunPredictions.objects.count() == 1
    assert RunEvent.objects.filter(run=run).count() == 3
    assert sent_jobs.names() == ["evaluation.ingest_run", "evaluation.plan_run"]
    assert ingest_run(10**6) == "missing"


def test_a_worker_killed_while_storing_leaves_the_run_to_retry(
    task, team, participant, sent_jobs, monkeypatch, django_capture_on_commit_callbacks
):
    run = submit_run(task=task, team=team, user=participant, upload=upload_file(RUN))
    real = RunPredictions.objects.create

    def boom(**kwargs):
        raise RuntimeError("worker lost")

    monkeypatch.setattr(RunPredictions.objects, "create", boom)
    with pytest.raises(RuntimeError):
        ingest_run(run.pk)
    run.refresh_from_db()
    assert run.state == Run.State.VALIDATING and default_storage.exists(run.upload)
    # The items went in before (in batches of their own), the predictions not.
    assert Item.objects.count() == 3 and run.n_new_items == 3
    assert not RunPredictions.objects.exists()
    monkeypatch.setattr(RunPredictions.objects, "create", real)
    with django_capture_on_commit_callbacks(execute=True):
        assert ingest_run(run.pk) == Run.State.QUEUED  # the redelivered message
    run.refresh_from_db()
    assert Item.objects.count() == 3 and run.n_new_items == 3
    assert list(RunEvent.objects.filter(run=run).values_list("state", flat=True)) == [
        "received",
        "validating",
        "queued",
    ]


def test_a_lost_file_fails_the_run_and_refunds_it(task, team, participant, sent_jobs):
    run = submit_run(task=task, team=team, user=participant, upload=upload_file(RUN))
    default_storage.delete(run.upload)
    assert ingest_run(run.pk) == Run.State.FAILED
    run.refresh_from_db()
    assert run.quota_refunded and "lost before it could be validated" in run.reason


def test_the_same_file_twice_is_refused_and_costs_no_quota(
    task, team, participant, sent_jobs, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        first = submit(task, team, participant, name="first")
    before = quota_for(task=task, team=team)
    exc = refused(task, team, participant, name="again")
    assert exc.code == "duplicate" and exc.run == first
    assert exc.message == (
        f"this file was already submitted as run {first.pk} ('first', "
        "queued): the same content is not evaluated twice, and nothing was "
        "stored or counted"
    )
    assert exc.as_dict()["run"] == first.pk
    assert Run.objects.count() == 1 and quota_for(task=task, team=team) == before
    assert received_files() == []
    # Another team may send the same file.
    other = create_team(name="Other", members=[participant])
    assert submit(task, other, participant).state == Run.State.QUEUED
    # A file whose run failed on the platform may be sent again.
    fail_run(first, "worker lost")
    assert submit(task, team, participant).state == Run.State.QUEUED


@pytest.mark.parametrize(
    "same",
    [
        gzip.compress(RUN.encode(), mtime=0),  # gzipped
        RUN.replace("\n", "\r\n").encode(),  # CRLF line ends
        RUN.removesuffix("\n").encode(),  # no line end after the last line
        gzip.compress(RUN.encode()[:9], mtime=0) + gzip.compress(RUN.encode()[9:], mtime=0),
    ],
    ids=["gzip", "crlf", "no-last-line-end", "gzip-members"],
)
def test_the_same_content_in_another_file_is_a_duplicate(task, team, participant, sent_jobs, same):
    first = submit(task, team, participant, name="first")
    stored = received_files()
    exc = refused(task, team, participant, same, name="again", file_name="run.tsv.gz")
    assert exc.code == "duplicate" and exc.run == first
    assert exc.message.startswith(f"this file was already submitted as run {first.pk} ")
    assert Run.objects.count() == 1 and received_files() == stored  # nothing kept
    # Other content is another run, gzipped or not.
    other = RUN.replace("0.25", "0.26")
    assert submit(task, team, participant, gzip.compress(other.encode()), name="b").n_predictions
    assert submit(task, team, participant, other.replace("a\t", "d\t"), name="c").n_predictions


def test_a_rejected_file_spends_no_quota(task, team, participant, sent_jobs):
    run = submit_run(task=task, team=team, user=participant, upload=upload_file("a\tx\n"))
    assert quota_for(task=task, team=team).used_total == 1  # held while it waits
    ingest_run(run.pk)
    run.refresh_from_db()
    assert run.state == Run.State.REJECTED and quota_for(task=task, team=team).used_total == 0
    # The same bad file again is rejected again, not refused as a duplicate.
    assert refused(task, team, participant, "a\tx\n").code == "rejected"


def test_indices_stay_dense_across_runs_and_known_items_are_reused(
    task, team, participant, sent_jobs
):
    first = submit(task, team, participant, "a\t0.1\nb\t0.2\n")
    second = submit(task, team, participant, "c\t0.3\nb\t0.9\nd\t0.4\n", name="mine")
    assert (first.name, second.name) == ("run", "mine")
    assert second.n_new_items == 2 and second.n_predictions == 3
    keys = dict(Item.objects.filter(task=task).values_list("key", "index"))
    assert keys == {"a": 0, "b": 1, "c": 2, "d": 3}
    items, scores = RunPredictions.objects.get(run=second).arrays()
    assert items.tolist() == [1, 2, 3] and scores.tolist() == [0.9, 0.3, 0.4]
    assert sorted(Item.objects.filter(task=task).values_list("index", flat=True)) == [0, 1, 2, 3]
    third = submit(task, team, participant, "a\n")
    assert third.name == "run-2"  # the file's stem, unique among the team's runs


def test_gzip_jsonl_with_payloads(task, team, participant, sent_jobs):
    ensure_items(task=task, keys=["old", "kept"], payloads={"kept": {"v": "original"}})
    body = (
        b'{"key": "new", "score": 0.5, "payload": {"v": 1}}\n'
        b'{"key": "old", "score": 0.5, "payload": {"v": 2}}\n'
        b'{"key": "kept", "score": 0.5, "payload": {"v": 3}}\n'
    )
    run = submit(task, team, participant, gzip.compress(body), file_name="run.jsonl.gz")
    assert run.file_format == "jsonl" and run.n_new_items == 1
    payloads = dict(Item.objects.filter(task=task).values_list("key", "payload"))
    # A run's payload is taken for the items it brings; existing items keep theirs (or none).
    assert payloads == {"old": None, "kept": {"v": "original"}, "new": {"v": 1}}


def test_a_rejected_file_leaves_a_rejected_run_and_nothing_else(
    task, team, participant, sent_jobs, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        exc = refused(task, team, participant, "a\t0.5\nb\tabc\nb\t2\n\nc\t0.1\n")
    assert exc.code == "rejected"
    assert exc.message == "rejected: 3 problems (first: line 2: score 'abc' is not a number)"
    assert [p.as_dict() for p in exc.problems] == [
        {"line": 2, "message": "score 'abc' is not a number"},
        {"line": 3, "message": "score '2' is outside [0, 1]"},
        {"line": 4, "message": "blank line (only the end of the file may have blank lines)"},
    ]
    run = exc.run
    run.refresh_from_db()
    assert run.state == Run.State.REJECTED and run.finished_at is not None
    assert run.reason == exc.message and run.error_count == 3
    assert run.errors[0] == {"line": 2, "message": "score 'abc' is not a number"}
    assert list(RunEvent.objects.filter(run=run).values_list("state", flat=True)) == [
        "received",
        "validating",
        "rejected",
    ]
    assert not Item.objects.exists() and not RunPredictions.objects.exists()
    task.refresh_from_db()
    assert task.n_items == 0 and sent_jobs == []
    assert exc.as_dict()["run"] == run.pk and exc.as_dict()["total"] == 3


def test_a_failure_while_storing_the_predictions_leaves_the_run_validating(
    task, team, participant, sent_jobs, monkeypatch, django_capture_on_commit_callbacks
):
    def boom(**kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(RunPredictions.objects, "create", boom)
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(RuntimeError):
        submit(task, team, participant)
    # Its items are stored (committed in batches before), nothing that makes it a run.
    assert Item.objects.count() == 3 and not RunPredictions.objects.exists()
    run = Run.objects.get()
    assert run.state == Run.State.VALIDATING and run.n_predictions == 0 and sent_jobs == []
    task.refresh_from_db()
    assert task.n_items == 3


def test_over_the_size_limit_before_and_after_decompression(task, team, participant, settings):
    task.max_upload_bytes = 64
    upload = upload_file("a\t0.5\n" * 20)
    upload.size = 120
    with pytest.raises(SubmissionError) as info:
        submit_run(task=task, team=team, user=participant, upload=upload)
    assert info.value.code == "too_large" and info.value.run is None
    assert (
        info.value.message == "the file is 120 bytes, over the limit of 64 bytes for task 'linkage'"
    )
    assert not Run.objects.exists()
    # Compressed it is small; decompressed it is not: refused while reading, recorded.
    exc = refused(task, team, participant, gzip.compress(b"a\t0.5\n" * 20))
    assert exc.code == "too_large" and exc.run.state == Run.State.REJECTED
    assert exc.problems[0].message == (
        "the file is larger than the limit of 64 bytes once decompressed; reading stopped"
    )
    assert received_files() == []  # nothing kept
    # The site-wide ceiling applies too.
    task.max_upload_bytes = 10**9
    settings.UPLOAD_MAX_BYTES = 32
    assert refused(task, team, participant, "a\t0.5\n" * 20).code == "too_large"


def test_too_many_predictions(task, team, participant):
    Task.objects.filter(pk=task.pk).update(max_predictions_per_run=2)  # the worker re-reads it
    exc = refused(task, team, participant)
    assert exc.code == "rejected"
    assert exc.problems[0].message == (
        "the file has more than 2 predictions (the limit); reading stopped at line 3"
    )


@pytest.mark.parametrize(
    ("state", "message"),
    [
        (Task.State.CLOSED, "task 'linkage' is closed: it accepts runs only while it is open"),
        (
            Task.State.DRAFT,
            "task 'linkage' is still a draft: it accepts runs only while it is open",
        ),
    ],
)
def test_closed_and_draft_tasks_take_no_runs(task, team, participant, state, message):
    Task.objects.filter(pk=task.pk).update(state=state)
    task.refresh_from_db()
    exc = refused(task, team, participant)
    assert (exc.code, exc.message) == ("task_closed", message)
    assert not Run.objects.exists()


def test_a_task_closed_while_receiving_takes_no_run(task, team, participant, monkeypatch):
    from leaderboard.services import runs

    real = runs._store

    def close_then_store(*args, **kwargs):
        Task.objects.filter(pk=task.pk).update(state=Task.State.CLOSED)
        return real(*args, **kwargs)

    monkeypatch.setattr(runs, "_store", close_then_store)
    assert refused(task, team, participant).code == "task_closed"
    assert not Item.objects.exists() and not Run.objects.exists()
    assert received_files() == []


def test_only_team_members_submit(task, team, sent_jobs):
    outsider = get_user_model().objects.create_user("out")
    exc = refused(task, team, outsider)
    assert (exc.code, exc.message) == ("not_team_member", "you are not a member of team 'Alpha'")


def _runs(task, team, n, state=Run.State.QUEUED, age=timedelta(0), **fields):
    created = timezone.now() - age
    Run.objects.bulk_create(
        [
            Run(
                task=task,
                team=team,
                name=f"old-{state}-{i}",
                state=state,
                created_at=created,
                **fields,
            )
            for i in range(n)
        ]
    )


def test_total_quota_counts_neither_rejected_nor_failed_runs(task, team, participant):
    _runs(task, team, 4, age=timedelta(days=3))
    _runs(task, team, 6, state=Run.State.REJECTED)
    _runs(task, team, 1, state=Run.State.FAILED, quota_refunded=True)
    submit(task, team, participant)  # the 5th counted run
    exc = refused(task, team, participant)
    assert exc.code == "over_quota"
    assert exc.message == (
        "team 'Alpha' has used all 5 runs allowed per team on task 'linkage' "
        "(rejected and failed runs do not count)"
    )
    # A failed run gives its slot back.
    fail_run(Run.objects.filter(state=Run.State.QUEUED).first(), "worker lost")
    submit(task, team, participant, "z\t0.5\n")


def test_daily_quota_says_when_the_next_slot_frees_up(task, team, participant):
    _runs(task, team, 1, age=timedelta(hours=30))  # outside the window
    _runs(task, team, 1, age=timedelta(hours=23))
    _runs(task, team, 2, age=timedelta(hours=1))
    exc = refused(task, team, participant)
    assert exc.code == "over_quota"
    assert exc.message.startswith(
        "team 'Alpha' has submitted 3 runs to task 'linkage' in the "
        "last 24 hours, the limit is 3 per day; the next slot frees "
        "up at "
    )
    assert exc.message.endswith("UTC (in 1 h 00 min)")


def test_quota_selector(task, team):
    now = timezone.now()
    _runs(task, team, 2, age=timedelta(hours=5))
    quota = quota_for(task=task, team=team, now=now)
    assert (quota.used_total, quota.limit_total, quota.used_today, quota.limit_today) == (
        2,
        5,
        2,
        3,
    )
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
        "invalid",
        "you are in several teams ('Alpha', 'Beta'): say which one the run is for "
        "with the `team` field",
    )
    assert resolve_team(user=participant, team="Beta") == beta
    with pytest.raises(SubmissionError) as info:
        resolve_team(user=participant, team="Gamma")
    assert (info.value.code, info.value.message) == (
        "not_team_member",
        "you are not a member of team 'Gamma'",
    )
    with pytest.raises(SubmissionError) as info:
        resolve_team(user=participant, team="Nobody")
    assert (info.value.code, info.value.message) == ("invalid", "there is no team 'Nobody'")
    loner = get_user_model().objects.create_user("loner")
    with pytest.raises(SubmissionError) as info:
        resolve_team(user=loner)
    assert info.value.code == "not_team_member"
    assert info.value.message == (
        "you are in no team: make one (/teams/) or join one by an invitation link"
    )


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


def test_another_teams_upload_never_changes_what_annotators_see(task, team, participant, sent_jobs):
    bob = get_user_model().objects.create_user("bob")
    bobs = create_team(name="Bob", members=[bob])
    submit(task, bobs, bob, b'{"key": "shared", "score": 0.5}\n', file_name="b.jsonl")
    submit(
        task,
        bobs,
        bob,
        b'{"key": "b-own", "score": 0.5, "payload": "Bob text"}\n',
        file_name="b2.jsonl",
    )
    submit(
        task,
        team,
        participant,
        b'{"key": "shared", "score": 0.5, "payload": "Alice text"}\n'
        b'{"key": "b-own", "score": 0.5, "payload": "Alice again"}\n',
        file_name="a.jsonl",
    )
    payloads = dict(Item.objects.filter(task=task).values_list("key", "payload"))
    assert payloads == {"shared": None, "b-own": "Bob text"}


def test_validation_reports_its_progress_on_the_run(
    task, team, participant, sent_jobs, settings, monkeypatch
):
    from leaderboard.ingestion import SNIFF_BYTES, reading

    settings.INGEST_PROGRESS_SECONDS = 0
    monkeypatch.setattr(reading, "READ_SIZE", 64)
    text = "".join(f"key-{i}\t0.5\n" for i in range(3000))
    run = submit_run(task=task, team=team, user=participant, upload=upload_file(text))
    seen = []
    real = ingest._Progress.__call__

    def spy(self, n_bytes, n_lines):
        real(self, n_bytes, n_lines)
        seen.append(Run.objects.get(pk=run.pk).reason)

    monkeypatch.setattr(ingest._Progress, "__call__", spy)
    ingest_run(run.pk)
    # The parser reads the file's head (SNIFF_BYTES) first, to tell a file in the wrong format.
    share = 100 * SNIFF_BYTES // len(text)
    assert len(seen) > 10 and seen[0] == f"{share}% of the file read (16 KiB, 6 lines)"
    assert all("% of the file read" in r for r in seen)


def test_the_line_limit_follows_the_tasks_predictions_per_run(task, team, participant, media_root):
    # At most max_predictions_per_run lines plus TRAILING_BLANK_LINES: refused as received.
    Task.objects.filter(pk=task.pk).update(max_predictions_per_run=4)
    task.refresh_from_db()
    limit = 4 + runs_service.TRAILING_BLANK_LINES
    assert runs_service.line_limit(task)[0] == limit
    four = "".join(f"k{i}\t0.5\n" for i in range(4))
    at_the_limit = submit(task, team, participant, four + "\n" * (limit - 4))
    assert at_the_limit.state == Run.State.QUEUED and at_the_limit.n_predictions == 4
    with pytest.raises(SubmissionError) as over:
        submit(task, team, participant, four + "\n" * (limit - 3), file_name="other.tsv")
    assert over.value.code == "too_large"
    assert f"more than the limit of {limit:,} lines (task 'linkage' takes at most 4" in str(
        over.value.problems[0]
    )
    # A task that takes more than the organizers' default cap is not refused before it.
    Task.objects.filter(pk=task.pk).update(max_predictions_per_run=6_000_000)
    task.refresh_from_db()
    assert runs_service.line_limit(task)[0] == 6_000_000 + runs_service.TRAILING_BLANK_LINES
