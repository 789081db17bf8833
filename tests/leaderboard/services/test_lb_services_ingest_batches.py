"""A run's ingestion writes in short transactions (issue 29, N9): its items in batches committed
one by one while the run stays ``validating``, then its predictions and ``queued`` at once; a
crash between batches and a retry give exactly the run; nobody sees a partial run."""

from __future__ import annotations

import io

import numpy as np
import pytest
from item_batches import seen_from_elsewhere

from leaderboard.models import Item, Run, RunPredictions
from leaderboard.services import items as item_services
from leaderboard.services.ingest import ingest_run, submit_and_ingest
from leaderboard.services.runs import submit_run
from leaderboard.services.withdrawal import withdraw_run

# Seven keys, the first already an item of the task (so a batch is never its first keys).
KEYS = ["k3", "k1", "k6", "k0", "k5", "k2", "k4"]
RUN = "".join(f"{key}\t0.{i + 1}\n" for i, key in enumerate(KEYS))


@pytest.fixture(autouse=True)
def small_batches(monkeypatch, media_root):
    """Two new items per batch: the run's six new keys take three."""
    monkeypatch.setattr(item_services, "BATCH_ITEMS", 2)


def upload_file(text: str) -> io.BytesIO:
    stream = io.BytesIO(text.encode())
    stream.name = "run.tsv"
    return stream


def received(task, team, participant) -> Run:
    item_services.ensure_items(task=task, keys=["k1"])
    return submit_run(task=task, team=team, user=participant, upload=upload_file(RUN))


def stored_run(run: Run) -> dict:
    """The run as the engine reads it: each predicted key with its score, and its counts."""
    predictions = RunPredictions.objects.get(run=run)
    indices = np.frombuffer(predictions.items, dtype=np.int64)
    scores = np.frombuffer(predictions.scores, dtype=np.float64)
    keys = dict(Item.objects.filter(task=run.task).values_list("index", "key"))
    run.refresh_from_db()
    return {
        "predictions": {keys[int(i)]: float(s) for i, s in zip(indices, scores, strict=True)},
        "sorted": bool(np.all(np.diff(indices) > 0)),
        "state": run.state,
        "n_predictions": run.n_predictions,
        "n_new_items": run.n_new_items,
    }


EXPECTED = {
    "predictions": {key: float(f"0.{i + 1}") for i, key in enumerate(KEYS)},
    "sorted": True,
    "state": Run.State.QUEUED,
    "n_predictions": 7,
    "n_new_items": 6,
}


@pytest.mark.django_db(transaction=True)
def test_a_crash_between_batches_then_a_retry_gives_exactly_the_run(
    task, team, participant, sent_jobs, before_each_insert
):
    run = received(task, team, participant)
    calls = []

    def crash_at_the_third(keys) -> None:
        calls.append(keys)
        if len(calls) == 3:
            raise RuntimeError("worker lost")

    before_each_insert(crash_at_the_third)
    with pytest.raises(RuntimeError):
        ingest_run(run.pk)
    run.refresh_from_db()
    # Two batches committed, the third rolled back; the run waits, with no predictions.
    assert calls == [["k3", "k6"], ["k0", "k5"], ["k2", "k4"]]
    assert set(Item.objects.values_list("key", flat=True)) == {"k1", "k3", "k6", "k0", "k5"}
    assert run.state == Run.State.VALIDATING and run.n_new_items == 4 and run.n_predictions == 0
    assert not RunPredictions.objects.exists()
    before_each_insert(calls.append)
    assert ingest_run(run.pk) == Run.State.QUEUED  # the redelivered message
    assert stored_run(run) == EXPECTED
    assert Item.objects.count() == 7 and sorted(Item.objects.values_list("index", flat=True)) == [
        *range(7)
    ]
    assert calls[3:] == [["k2", "k4"]]  # the retry inserted only what was left
    assert sent_jobs.names() == ["evaluation.ingest_run", "evaluation.plan_run"]


@pytest.mark.django_db(transaction=True)
def test_batches_are_committed_one_by_one_and_nobody_sees_a_partial_run(
    task, team, participant, sent_jobs, before_each_insert
):
    run = received(task, team, participant)
    seen = []

    def committed_state() -> tuple:
        stored = Run.objects.get(pk=run.pk)
        return (
            Item.objects.filter(task=task).count(),
            stored.state,
            stored.n_predictions,
            RunPredictions.objects.filter(run=run).exists(),
        )

    def look(keys) -> None:
        seen.append(seen_from_elsewhere(committed_state))

    before_each_insert(look)
    assert ingest_run(run.pk) == Run.State.QUEUED
    # Each batch saw the ones before it committed, and the run never partly there.
    assert seen == [
        (1, Run.State.VALIDATING, 0, False),
        (3, Run.State.VALIDATING, 0, False),
        (5, Run.State.VALIDATING, 0, False),
    ]
    assert stored_run(run) == EXPECTED


@pytest.mark.django_db
def test_a_run_withdrawn_while_its_items_are_stored_stays_withdrawn(
    task, team, participant, sent_jobs, before_each_insert
):
    run = received(task, team, participant)

    def withdrawn_meanwhile(keys) -> None:
        if Item.objects.count() == 3:  # the second batch
            withdraw_run(run=Run.objects.get(pk=run.pk), by=participant)

    before_each_insert(withdrawn_meanwhile)
    assert ingest_run(run.pk) == Run.State.WITHDRAWN
    run.refresh_from_db()
    # The batch that found it withdrawn was rolled back, and nothing came after it.
    assert Item.objects.count() == 3 and run.n_new_items == 2
    assert not RunPredictions.objects.exists() and sent_jobs.names() == []


@pytest.mark.django_db
def test_two_runs_over_the_same_keys_count_their_new_items_once(
    task, team, participant, sent_jobs, committed
):
    with committed():
        first = submit_and_ingest(task=task, team=team, user=participant, upload=upload_file(RUN))
    other = RUN.replace("k4\t", "k9\t")
    with committed():
        second = submit_and_ingest(
            task=task, team=team, user=participant, upload=upload_file(other), name="second"
        )
    assert (first.n_new_items, second.n_new_items) == (7, 1)
    assert first.state == second.state == Run.State.QUEUED
