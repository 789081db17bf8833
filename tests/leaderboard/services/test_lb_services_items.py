"""Item indices: dense, allocated once per key, payloads filled in, both lookup strategies; a
run's items in short transactions of their own (issue 29, N9)."""

from __future__ import annotations

import functools
import threading

import pytest
from django.db import close_old_connections, connection

from leaderboard.models import Item, Task
from leaderboard.selectors import items as item_selectors
from leaderboard.services import items as item_services
from leaderboard.services.items import ensure_items, ensure_items_in_batches, item_ids


@pytest.mark.django_db
def test_new_keys_get_consecutive_indices_in_order_of_first_appearance(task):
    assert ensure_items(task=task, keys=["c", "a", "c", "b"]).tolist() == [0, 1, 0, 2]
    assert task.n_items == 3 and Task.objects.get(pk=task.pk).n_items == 3
    assert ensure_items(task=task, keys=["b", "d"]).tolist() == [2, 3]
    assert ensure_items(task=task, keys=[]).tolist() == []
    assert sorted(Item.objects.values_list("index", flat=True)) == [0, 1, 2, 3]


@pytest.mark.django_db
@pytest.mark.parametrize("ratio", [8, 10**9])  # whole-task map / chunked key lookups
def test_known_keys_and_payloads_either_lookup(task, monkeypatch, ratio):
    monkeypatch.setattr(item_services, "LOOKUP_RATIO", ratio)
    monkeypatch.setattr(item_selectors, "READ_RANGE", 3)  # the whole task read in several queries
    monkeypatch.setattr(item_services, "LOOKUP_CHUNK", 2)
    ensure_items(task=task, keys=[f"k{i}" for i in range(10)], payloads={"k1": {"p": 1}})
    indices = ensure_items(
        task=task,
        keys=["k9", "new", "k1", "k2"],
        payloads={"k1": {"p": "other"}, "k2": ["x"], "new": "n"},
    )
    assert indices.tolist() == [9, 10, 1, 2]
    payloads = dict(Item.objects.values_list("key", "payload"))
    # A run's payloads go only to the items it brings: what annotators see never changes.
    assert payloads["k1"] == {"p": 1} and payloads["k2"] is None and payloads["new"] == "n"
    # The organizer's reference sample fills an item without one (and overwrites none).
    ensure_items(
        task=task, keys=["k1", "k2"], payloads={"k1": {"p": "org"}, "k2": ["x"]}, fill_payloads=True
    )
    payloads = dict(Item.objects.values_list("key", "payload"))
    assert payloads["k1"] == {"p": 1} and payloads["k2"] == ["x"] and payloads["k3"] is None
    ids = item_ids(task=task, indices=[10, 0])
    assert ids == [Item.objects.get(key="new").pk, Item.objects.get(key="k0").pk]


@pytest.mark.django_db
def test_tasks_have_separate_indices(task):
    other = Task.objects.create(slug="other", title="Other")
    ensure_items(task=task, keys=["a", "b"])
    assert ensure_items(task=other, keys=["b", "z"]).tolist() == [0, 1]


@pytest.mark.django_db(transaction=True)
def test_a_runs_new_items_are_committed_batch_by_batch():
    task = Task.objects.create(slug="batches", title="Batches")
    ensure_items(task=task, keys=["k1"])
    counted = []

    def on_batch(n_new: int) -> bool:
        assert connection.in_atomic_block  # the batch's own transaction
        counted.append(n_new)
        if len(counted) == 3:
            raise RuntimeError("worker lost")
        return True

    keys = ["k0", "k1", "k2", "k3", "k4", "k5", "k6"]
    with pytest.raises(RuntimeError):
        ensure_items_in_batches(task=task, keys=keys, batch_size=2, on_batch=on_batch)
    # Two batches were committed before the third failed (and rolled back alone).
    assert counted == [2, 2, 2] and not connection.in_atomic_block
    assert dict(Item.objects.filter(task=task).values_list("key", "index")) == {
        "k1": 0,
        "k0": 1,
        "k2": 2,
        "k3": 3,
        "k4": 4,
    }
    assert Task.objects.get(pk=task.pk).n_items == 5
    counted.clear()
    again = ensure_items_in_batches(
        task=task, keys=keys, batch_size=2, on_batch=lambda n: counted.append(n) or True
    )
    assert again is not None
    assert again.tolist() == [1, 0, 2, 3, 4, 5, 6] and counted == [2]  # the retry goes on
    # A caller that no longer wants the items stops it: that batch is rolled back.
    stopped = ensure_items_in_batches(
        task=task, keys=["k7", "k8", "k9"], batch_size=2, on_batch=lambda n: n < 2
    )
    assert stopped is None and Task.objects.get(pk=task.pk).n_items == 7
    assert Task.objects.get(pk=task.pk).n_items == 7 == Item.objects.filter(task=task).count()


@pytest.mark.django_db
def test_items_another_upload_adds_between_two_batches_are_not_inserted_twice(task):
    def on_batch(n_new: int) -> bool:
        if counted == []:  # another upload, between this run's first and second batch
            ensure_items(task=task, keys=["e", "x"])
        counted.append(n_new)
        return True

    counted: list[int] = []
    indices = ensure_items_in_batches(
        task=task, keys=["a", "b", "c", "d", "e"], batch_size=2, on_batch=on_batch
    )
    assert indices is not None
    # a, b; then e and x by the other upload; c, d; e is known by the third batch.
    assert indices.tolist() == [0, 1, 4, 5, 2] and counted == [2, 2, 0]
    assert dict(Item.objects.filter(task=task).values_list("key", "index")) == {
        "a": 0,
        "b": 1,
        "e": 2,
        "x": 3,
        "c": 4,
        "d": 5,
    }
    assert task.n_items == 6 == Task.objects.get(pk=task.pk).n_items


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("batched", [False, True])
def test_concurrent_uploads_never_share_an_index(batched):
    if connection.vendor != "postgresql":
        pytest.skip("needs row locks (PostgreSQL)")
    task = Task.objects.create(slug="race", title="Race")
    barrier = threading.Barrier(4)
    errors = []

    def upload(worker: int) -> None:
        try:
            barrier.wait()
            ensure = (
                functools.partial(ensure_items_in_batches, batch_size=50)
                if batched
                else ensure_items
            )
            ensure(
                task=Task.objects.get(pk=task.pk),
                keys=[f"w{worker}-{i}" for i in range(500)] + ["shared"],
            )
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            close_old_connections()
            connection.close()

    threads = [threading.Thread(target=upload, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    indices = sorted(Item.objects.filter(task=task).values_list("index", flat=True))
    assert indices == list(range(4 * 500 + 1))
    assert Task.objects.get(pk=task.pk).n_items == 2001
