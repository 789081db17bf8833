"""Closed-pool runs: every pool item scored and labelled, refusals by line, packed storage."""

from __future__ import annotations

import numpy as np
import pytest

from leaderboard.models import PoolRunOutputs, Run, RunPredictions, Task
from leaderboard.services.ingest import submit_and_ingest
from leaderboard.services.pool import upload_pool
from leaderboard.services.runs import SubmissionError
from leaderboard.services.tasks import create_task

from pipeline_support import open_unchecked

pytestmark = pytest.mark.django_db

POOL = ["p0", "p1", "p2", "p3", "p4"]


@pytest.fixture
def pool_task(organizer, make_upload):
    task = create_task(
        slug="pool",
        title="Pool",
        organizers=[organizer],
        kind=Task.Kind.CLOSED_POOL,
        max_runs_per_team=3,
    )
    upload_pool(task=task, user=organizer, upload=make_upload("\n".join(POOL) + "\n"))
    return open_unchecked(task)


def submit(task, team, user, make_upload, text: str, name: str = "run.tsv") -> Run:
    return submit_and_ingest(
        task=task, team=team, user=user, upload=make_upload(text, name), file_name=name
    )


def test_a_run_is_stored_in_pool_order_with_its_positives(
    pool_task, team, participant, make_upload, sent_jobs, django_capture_on_commit_callbacks
):
    lines = "p3\t0.9\t1\np1\t0.2\t0\np0\t0.7\t1\np4\t0\t0\np2\t1\t0\n"
    with django_capture_on_commit_callbacks(execute=True):
        run = submit(pool_task, team, participant, make_upload, lines)
    assert run.state == Run.State.QUEUED
    assert (run.n_predictions, run.reason) == (5, "5 pool items scored, 2 predicted positive")
    scores, labels = PoolRunOutputs.objects.get(run=run).arrays()
    np.testing.assert_array_equal(scores, [0.7, 0.2, 1.0, 0.9, 0.0])
    np.testing.assert_array_equal(labels, [1, 0, 0, 1, 0])
    items, positive_scores = RunPredictions.objects.get(run=run).arrays()
    assert items.tolist() == [0, 3] and positive_scores.tolist() == [0.7, 0.9]
    assert ("evaluation.plan_run", [run.pk]) in sent_jobs
    assert Task.objects.get(pk=pool_task.pk).n_items == 5  # a run never adds items


@pytest.mark.parametrize(
    ("text", "problems"),
    [
        (
            "p0\t0.1\t1\np1\t0.1\t0\np2\t0.1\t0\np3\t0.1\t0\n",
            [
                (
                    None,
                    "1 of the pool's 5 items are missing (every run scores every pool item), "
                    "e.g. 'p4'",
                )
            ],
        ),
        (
            "p0\t0.1\t1\np1\t0.1\t0\nzz\t0.1\t0\np2\t0.1\t0\np3\t0.1\t0\np4\t0.1\t0\n",
            [(3, "key 'zz' is not in the pool")],
        ),
        (
            "p0\t0.1\t1\np1\t0.1\t0\np2\t0.1\t0\np3\t0.1\t0\np4\t0.1\t0\np0\t0.2\t1\n",
            [(6, "duplicate key 'p0' (first on line 1)")],
        ),
        (
            "p0\t0.1\t1\np1\t0.1\np2\t0.1\t0\np3\t-1\t0\np4\t0.1\t7\n",
            [
                (2, "2 tab-separated columns; expected key<TAB>score<TAB>label"),
                (4, "score '-1' is outside [0, 1]"),
                (5, "label '7' is not 0 or 1"),
            ],
        ),
    ],
)
def test_a_bad_run_is_rejected_with_its_problems(
    pool_task, team, participant, make_upload, text, problems
):
    with pytest.raises(SubmissionError) as refused:
        submit(pool_task, team, participant, make_upload, text)
    assert refused.value.code == "rejected"
    assert [(p.line, p.message) for p in refused.value.problems] == problems
    run = Run.objects.get(pk=refused.value.run.pk)
    assert run.state == Run.State.REJECTED and run.error_count == len(problems)
    assert not PoolRunOutputs.objects.exists() and not RunPredictions.objects.exists()


def test_missing_and_foreign_keys_are_both_counted(pool_task, team, participant, make_upload):
    text = "p0\t0.1\t1\nx\t0.1\t0\ny\t0.1\t0\n"
    with pytest.raises(SubmissionError) as refused:
        submit(pool_task, team, participant, make_upload, text)
    assert refused.value.total == 3
    assert refused.value.problems[0].message.startswith("4 of the pool's 5 items are missing")
    assert [p.line for p in refused.value.problems] == [None, 2, 3]


def test_a_run_before_the_pool_is_refused_at_upload(organizer, team, participant, make_upload):
    task = open_unchecked(
        create_task(slug="empty", title="E", organizers=[organizer], kind="closed_pool")
    )
    with pytest.raises(SubmissionError) as refused:
        submit(task, team, participant, make_upload, "a\t0.5\t1\n")
    assert refused.value.code == "no_pool" and refused.value.run is None
    assert not Run.objects.filter(task=task).exists()


def test_closed_pool_runs_keep_the_quota_and_duplicate_rules(
    pool_task, team, participant, make_upload
):
    good = "".join(f"{k}\t0.5\t{i % 2}\n" for i, k in enumerate(POOL))
    with pytest.raises(SubmissionError):
        submit(pool_task, team, participant, make_upload, "p0\t0.5\t1\n")  # rejected: not counted
    submit(pool_task, team, participant, make_upload, good)
    with pytest.raises(SubmissionError) as again:
        submit(pool_task, team, participant, make_upload, good)
    assert again.value.code == "duplicate"
    for score in ("0.25", "0.75"):
        submit(pool_task, team, participant, make_upload, good.replace("0.5", score))
    with pytest.raises(SubmissionError) as over:
        submit(pool_task, team, participant, make_upload, good.replace("0.5", "0.1"))
    assert over.value.code == "over_quota"
