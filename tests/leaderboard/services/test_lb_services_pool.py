"""Closed-pool tasks: kind and measures at creation, the pool upload and its refusals."""

from __future__ import annotations

import gzip

import pytest

from leaderboard.models import Item, Run, Task
from leaderboard.services.pool import PoolError, upload_pool
from leaderboard.services.runs import SubmissionError
from leaderboard.services.tasks import TaskSettingsError, create_task, update_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def pool_task(organizer):
    return create_task(
        slug="pool",
        title="A closed pool",
        organizers=[organizer],
        kind=Task.Kind.CLOSED_POOL,
        measures=["f1", "mcc"],
    )


def test_a_task_is_open_with_precision_recall_f1_unless_told(task):
    assert task.kind == Task.Kind.OPEN
    assert task.measures == ["precision", "recall", "f1"]


def test_a_closed_pool_task_takes_any_pool_measure(pool_task):
    pool_task.refresh_from_db()
    assert (pool_task.kind, pool_task.measures) == ("closed_pool", ["f1", "mcc"])


@pytest.mark.parametrize(
    ("fields", "field", "says"),
    [
        ({"kind": "closed_pool", "measures": ["f2"]}, "measures", "'f2'"),
        ({"measures": ["mcc"]}, "measures", "an open task shows only precision, recall, f1"),
        ({"kind": "closed_pool", "measures": []}, "measures", "at least one"),
        ({"kind": "closed_pool", "measures": ["f1", "f1"]}, "measures", "twice"),
        ({"kind": "closed_pool", "measures": "f1"}, "measures", "a list"),
        ({"kind": "half_open"}, "kind", "not a valid choice"),
        ({"kind": "closed_pool", "design": "coordinated"}, "design", "closed pools offer"),
        ({"kind": "closed_pool", "design_options": {"round_size": 0}}, "design_options", ">= 1"),
    ],
)
def test_invalid_kinds_and_measures_are_refused_by_field(organizer, fields, field, says):
    with pytest.raises(TaskSettingsError) as refused:
        create_task(slug="bad", title="Bad", organizers=[organizer], **fields)
    assert says in " ".join(refused.value.field_errors[field])
    assert not Task.objects.filter(slug="bad").exists()


def test_the_kind_cannot_change_once_the_task_has_items(pool_task, organizer, make_upload):
    upload_pool(task=pool_task, user=organizer, upload=make_upload("a\nb\n", "pool.tsv"))
    with pytest.raises(TaskSettingsError, match="kind cannot change"):
        update_task(task=pool_task, kind=Task.Kind.OPEN)
    update_task(task=pool_task, measures=["precision", "accuracy"])
    assert Task.objects.get(pk=pool_task.pk).measures == ["precision", "accuracy"]


def test_the_pool_becomes_the_items_in_file_order_with_payloads(pool_task, organizer, make_upload):
    n = upload_pool(
        task=pool_task,
        user=organizer,
        upload=make_upload(
            '{"key": "b", "payload": {"t": "B"}}\n{"key": "a"}\n{"key": "c"}\n', "p.jsonl"
        ),
        payloads=make_upload('{"key": "c", "payload": {"t": "C"}}\n', "payloads.jsonl"),
    )
    assert n == 3
    rows = Item.objects.filter(task=pool_task).order_by("index")
    assert [(i.key, i.index, i.payload) for i in rows] == [
        ("b", 0, {"t": "B"}),
        ("a", 1, None),
        ("c", 2, {"t": "C"}),
    ]
    assert Task.objects.get(pk=pool_task.pk).n_items == 3


def test_a_gzipped_key_file_is_read(pool_task, organizer, make_upload):
    data = gzip.compress("".join(f"k{i}\n" for i in range(500)).encode())
    assert upload_pool(task=pool_task, user=organizer, upload=make_upload(data, "p.tsv.gz")) == 500


@pytest.mark.parametrize(
    ("text", "problems"),
    [
        ("a\nb\na\n", [(3, "duplicate key 'a' (first on line 1)")]),
        ("", [(None, "the file is empty")]),
        (b"a\n\xffb\n", [(2, "not valid UTF-8")]),
        ("a\tx\n", [(1, "2 tab-separated columns; expected one key per line")]),
        ("a\n\nb\n", [(2, "blank line")]),
    ],
)
def test_a_bad_pool_file_is_refused_by_line_and_stores_nothing(
    pool_task, organizer, make_upload, text, problems
):
    with pytest.raises(SubmissionError) as refused:
        upload_pool(task=pool_task, user=organizer, upload=make_upload(text, "pool.tsv"))
    assert refused.value.code == "rejected" and refused.value.http_status == 400
    found = [(p.line, p.message) for p in refused.value.problems]
    assert len(found) == len(problems)
    for (line, message), (want_line, want) in zip(found, problems, strict=True):
        assert line == want_line and want in message
    assert not Item.objects.filter(task=pool_task).exists()


def test_payloads_for_keys_outside_the_pool_are_refused_by_line(pool_task, organizer, make_upload):
    payloads = '{"key": "a", "payload": 1}\n{"key": "z", "payload": 2}\n'
    with pytest.raises(SubmissionError) as refused:
        upload_pool(
            task=pool_task,
            user=organizer,
            upload=make_upload("a\nb\n"),
            payloads=make_upload(payloads, "payloads.jsonl"),
        )
    assert [(p.line, p.message) for p in refused.value.problems] == [
        (2, "key 'z' is not in the pool")
    ]
    assert not Item.objects.filter(task=pool_task).exists()


def test_the_pool_is_uploaded_once_and_only_to_a_closed_pool_task(
    pool_task, task, team, organizer, make_upload
):
    with pytest.raises(PoolError) as refused:
        upload_pool(task=task, user=organizer, upload=make_upload("a\n"))
    assert (refused.value.code, refused.value.http_status) == ("not_closed_pool", 409)
    upload_pool(task=pool_task, user=organizer, upload=make_upload("a\n"))
    with pytest.raises(PoolError) as again:
        upload_pool(task=pool_task, user=organizer, upload=make_upload("b\n"))
    assert again.value.code == "pool_exists"
    assert list(Item.objects.filter(task=pool_task).values_list("key", flat=True)) == ["a"]
    # A run still being validated blocks it (test_lb_services_readiness.py: a rejected one not).
    other = create_task(slug="other", title="Other", kind=Task.Kind.CLOSED_POOL)
    Run.objects.create(task=other, team=team, name="early", state=Run.State.VALIDATING)
    with pytest.raises(PoolError, match="runs received before its pool that are not settled"):
        upload_pool(task=other, user=organizer, upload=make_upload("a\n"))
