"""Organizers' pool, reference sample and candidates files store their items in short
transactions, as a run's ingestion does (issue 29): batches committed one by one, and nothing
the product reads as the pool, the sample or the candidates until the file's last transaction; a
worker lost between two batches, then the retry, gives exactly the file."""

from __future__ import annotations

import io

import pytest
from item_batches import seen_from_elsewhere

from annotation.services import load_organizer_upload
from leaderboard.models import Item, OrganizerUpload, ReferenceCandidate, ReferenceItem, Task
from leaderboard.selectors.readiness import pool as pool_readiness
from leaderboard.services import items as item_services
from leaderboard.services.organizer_uploads import receive_upload
from leaderboard.services.runs import SubmissionError, check_open

from pipeline_support import make_task

pytestmark = pytest.mark.django_db(transaction=True)

POOL = ["p3", "p1", "p6", "p0", "p5", "p2", "p4"]


@pytest.fixture(autouse=True)
def small_batches(monkeypatch, media_root):
    """Two new items per batch: seven keys take four."""
    monkeypatch.setattr(item_services, "BATCH_ITEMS", 2)


@pytest.fixture
def pool_task(organizer):
    task = make_task(slug="cp", title="Pool", kind=Task.Kind.CLOSED_POOL, state=Task.State.OPEN)
    task.organizers.add(organizer)
    return task


@pytest.fixture
def open_task(organizer):
    task = make_task(slug="ow", title="Open world")
    task.organizers.add(organizer)
    item_services.ensure_items(task=task, keys=["k1"])  # an item a run brought: no payload
    return task


def receive(task, organizer, kind: str, body: str, name: str = "f.tsv") -> OrganizerUpload:
    upload = io.BytesIO(body.encode())
    return receive_upload(task=task, user=organizer, kind=kind, upload=upload, file_name=name)


def pool_items(task) -> list[str]:
    return list(Item.objects.filter(task=task).order_by("index").values_list("key", flat=True))


def takes_runs(task) -> bool:
    task = Task.objects.get(pk=task.pk)
    try:
        check_open(task)
    except SubmissionError as exc:
        assert exc.code == "no_pool"
        return False
    return True


def crash_at(n: int, calls: list):
    def hook(keys) -> None:
        calls.append(list(keys))
        if len(calls) == n:
            raise RuntimeError("worker lost")

    return hook


def test_a_pool_is_stored_batch_by_batch_and_runs_are_refused_until_it_is_all_there(
    pool_task, organizer, before_each_insert
):
    seen = []

    def committed() -> tuple:
        task = Task.objects.get(pk=pool_task.pk)
        return Item.objects.filter(task=task).count(), task.has_pool, takes_runs(task)

    before_each_insert(lambda keys: seen.append(seen_from_elsewhere(committed)))
    upload = receive(pool_task, organizer, "pool", "\n".join(POOL) + "\n")
    assert load_organizer_upload(upload.pk) == "loaded"
    # Each batch saw the ones before it committed; the pool was never taken as there.
    assert seen == [(0, False, False), (2, False, False), (4, False, False), (6, False, False)]
    pool_task.refresh_from_db()
    assert pool_task.has_pool and takes_runs(pool_task) and pool_task.n_items == 7
    assert pool_items(pool_task) == POOL  # indices in file order


def test_a_pool_half_stored_is_not_the_pool_and_the_retry_gives_exactly_the_file(
    pool_task, organizer, before_each_insert
):
    calls: list = []
    before_each_insert(crash_at(3, calls))
    upload = receive(pool_task, organizer, "pool", "\n".join(POOL) + "\n")
    with pytest.raises(RuntimeError):
        load_organizer_upload(upload.pk)
    pool_task.refresh_from_db()
    # Two batches committed: items, but no pool; runs refused, the readiness check says why.
    assert pool_items(pool_task) == POOL[:4] and not pool_task.has_pool
    assert not takes_runs(pool_task)
    check = pool_readiness(pool_task)
    assert not check.ok and check.state.startswith("being stored (4 items so far)")
    with pytest.raises(SubmissionError, match=r"has no pool yet \(an upload of it is being stored"):
        check_open(pool_task)
    before_each_insert(calls.append)
    assert load_organizer_upload(upload.pk) == "loaded"  # the redelivered message
    assert calls[3:] == [["p5", "p2"], ["p4"]]  # it went on from the items stored
    pool_task.refresh_from_db()
    assert pool_items(pool_task) == POOL and pool_task.has_pool and pool_task.n_items == 7


def test_another_pool_file_after_one_that_stopped_half_way_replaces_its_items(
    pool_task, organizer, before_each_insert
):
    before_each_insert(crash_at(2, []))
    first = receive(pool_task, organizer, "pool", "\n".join(POOL) + "\n")
    with pytest.raises(RuntimeError):
        load_organizer_upload(first.pk)
    # The worker never came back: the watchdog gave the upload up.
    OrganizerUpload.objects.filter(pk=first.pk).update(state="rejected")
    assert pool_items(pool_task) == POOL[:2]
    before_each_insert(lambda keys: None)
    second = receive(pool_task, organizer, "pool", "a\nb\nc\n")
    assert load_organizer_upload(second.pk) == "loaded"
    pool_task.refresh_from_db()
    assert pool_items(pool_task) == ["a", "b", "c"] and pool_task.has_pool


def test_a_reference_file_stored_half_way_leaves_no_sample_and_the_retry_gives_it(
    open_task, organizer, before_each_insert
):
    lines = (f'{{"key": "k{i}", "group": "d{i % 2}", "payload": "t{i}"}}\n' for i in range(6))
    body = "".join(lines)
    calls: list = []
    before_each_insert(crash_at(2, calls))
    upload = receive(open_task, organizer, "reference", body, "sample.jsonl")
    with pytest.raises(RuntimeError):
        load_organizer_upload(upload.pk)
    open_task.refresh_from_db()
    # Items no run predicts yet, but no sample: its version did not move.
    assert Item.objects.filter(task=open_task).count() == 3 and not ReferenceItem.objects.exists()
    assert open_task.reference_version == 0
    before_each_insert(calls.append)
    assert load_organizer_upload(upload.pk) == "loaded"
    assert len(calls) == 4  # five new keys, two per batch: the retry stored the last three
    open_task.refresh_from_db()
    assert open_task.reference_version == 1
    sample = ReferenceItem.objects.filter(task=open_task).select_related("item")
    assert sorted((r.item.key, r.group, r.item.payload) for r in sample) == [
        (f"k{i}", f"d{i % 2}", f"t{i}") for i in range(6)
    ]  # k1, which a run brought without a payload, got the file's


def test_candidates_are_stored_in_batches_and_none_are_read_before_the_last_one(
    open_task, organizer, before_each_insert
):
    seen = []

    def committed() -> tuple:
        return (
            Item.objects.filter(task=open_task).count(),
            ReferenceCandidate.objects.filter(task=open_task).count(),
        )

    before_each_insert(lambda keys: seen.append(seen_from_elsewhere(committed)))
    body = "".join(f"k{i}\tdoc{i // 3}\n" for i in range(6))
    upload = receive(open_task, organizer, "candidates", body)
    assert load_organizer_upload(upload.pk) == "loaded"
    assert seen == [(1, 0), (3, 0), (5, 0)]
    assert ReferenceCandidate.objects.filter(task=open_task).count() == 6
