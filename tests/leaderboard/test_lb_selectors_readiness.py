"""The readiness checklist (``leaderboard.kinds.TaskKind.readiness``): each check for each kind
of task, what it says in words, whether it blocks opening, and where it is done."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import GoldItem
from evaluation.core.closed_pool.label_noise import LOOK_ANNOTATORS
from leaderboard.kinds import kind_for
from leaderboard.models import ReferenceItem, ReferenceSample, Task
from leaderboard.selectors import REFERENCE_MIN_DOCUMENTS, REFERENCE_MIN_ITEMS

from pipeline_support import add_items, annotator, make_task, satisfy_checklist

pytestmark = pytest.mark.django_db


def checks(task: Task) -> dict:
    return {check.key: check for check in kind_for(task).readiness(task).checks}


def add_reference(task: Task, n: int, documents: int) -> None:
    items = add_items(task, n)
    ReferenceItem.objects.bulk_create(
        [
            ReferenceItem(task=task, item=it, group=f"doc{i % documents}")
            for i, it in enumerate(items)
        ]
    )


def test_a_new_open_world_task_lists_its_needs_in_order_and_is_not_ready():
    task = make_task(state=Task.State.DRAFT)
    readiness = kind_for(task).readiness(task)
    assert [c.key for c in readiness.checks] == ["annotators", "reference_sample", "gold", "phases"]
    assert not readiness.ready
    assert [c.key for c in readiness.missing] == ["annotators", "reference_sample", "gold"]
    found = checks(task)
    assert found["annotators"].state.startswith("0 of the 2 annotators needed: each new item")
    assert found["reference_sample"].state == (
        "0 items in 0 documents (version 0); recall needs at least 30 items in 10 documents: "
        "upload candidates and draw documents, or upload a reference sample"
    )
    assert found["gold"].state.startswith("0 of the 10 gold items needed")
    # Where each is done: the organize page's section, and the API's endpoint.
    assert found["annotators"].page == "/tasks/t/organize/people/#annotators"
    assert found["annotators"].api == "/api/tasks/t/invitations/"
    assert found["reference_sample"].page == "/tasks/t/organize/data/#reference-sample"
    assert found["reference_sample"].api == "/api/tasks/t/reference-sample/"
    assert (found["gold"].page, found["gold"].api) == (
        "/tasks/t/organize/data/#upload-gold",
        "/api/tasks/t/gold/",
    )


def test_a_closed_pool_needs_its_pool_and_the_annotators_of_its_looks():
    task = make_task(kind=Task.Kind.CLOSED_POOL, gold_rate=0.0)
    assert [c.key for c in kind_for(task).readiness(task).checks] == [
        "pool",
        "gold",
        "annotators",
        "phases",
    ]
    found = checks(task)
    assert found["pool"].state == "not uploaded: upload every item key; runs are refused until then"
    assert (found["pool"].page, found["pool"].api) == (
        "/tasks/t/organize/data/#upload-pool",
        "/api/tasks/t/pool/",
    )
    assert found["annotators"].state.startswith(
        f"0 of the {LOOK_ANNOTATORS} annotators needed: a closed pool's further looks"
    )
    add_items(task, 3)
    for i in range(LOOK_ANNOTATORS - 1):
        annotator(task, f"a{i}")
    found = checks(task)
    assert (found["pool"].ok, found["pool"].state) == (True, "3 items")
    assert not found["annotators"].ok
    annotator(task, "last")
    readiness = kind_for(task).readiness(task)
    assert readiness.ready and checks(task)["annotators"].state == f"{LOOK_ANNOTATORS} annotators"


def test_annotators_needed_follow_the_judgments_per_item():
    task = make_task(judgments_per_item=3)
    for name in ("a", "b"):
        annotator(task, name)
    assert not checks(task)["annotators"].ok
    assert checks(task)["annotators"].state.startswith("2 of the 3 annotators needed")
    annotator(task, "c")
    assert checks(task)["annotators"].ok
    pool = make_task(slug="p", kind=Task.Kind.CLOSED_POOL, judgments_per_item=LOOK_ANNOTATORS + 1)
    assert f"of the {LOOK_ANNOTATORS + 1} annotators" in checks(pool)["annotators"].state


def test_the_reference_sample_needs_its_minimum_items_and_documents():
    task = make_task()
    add_reference(task, REFERENCE_MIN_ITEMS, REFERENCE_MIN_DOCUMENTS - 1)
    check = checks(task)["reference_sample"]
    assert not check.ok and check.blocking
    assert check.state.startswith(f"{REFERENCE_MIN_ITEMS} items in 9 documents (version 0);")
    add_reference(task, 1, 1)  # one more item in a tenth document ("doc0" of its own group)
    ReferenceItem.objects.filter(task=task, item__key=f"k{REFERENCE_MIN_ITEMS}").update(group="x")
    check = checks(task)["reference_sample"]
    assert (
        check.ok and check.state == f"{REFERENCE_MIN_ITEMS + 1} items in 10 documents (version 0)"
    )


def test_a_draw_being_verified_is_in_progress_unless_the_sample_is_already_enough():
    task = make_task()
    ReferenceSample.objects.create(
        task=task, seed=1, size=3, n_documents=9, n_candidates=8, n_resolved=5
    )
    check = checks(task)["reference_sample"]
    assert not check.ok
    assert check.state.endswith("; a draw is in progress: 5 of 8 candidates verified")
    add_reference(task, REFERENCE_MIN_ITEMS, REFERENCE_MIN_DOCUMENTS)
    check = checks(task)["reference_sample"]
    assert check.ok and "a draw is in progress" in check.state


def test_a_board_without_recall_needs_no_reference_sample():
    task = make_task(measures=["precision"])
    check = checks(task)["reference_sample"]
    assert (check.ok, check.blocking) == (True, False)
    assert check.state == "not needed: the board shows no recall or F1"
    assert "reference_sample" not in {c.key for c in kind_for(task).readiness(task).missing}


def test_gold_items_are_needed_by_the_gold_rate_up_to_the_answers_an_annotator_is_judged_on():
    task = make_task(gold_rate=0.1, gold_min_answers=4)
    items = add_items(task, 4)
    GoldItem.objects.bulk_create([GoldItem(task=task, item=it, answer=True) for it in items[:3]])
    check = checks(task)["gold"]
    assert not check.ok and check.blocking
    assert check.state == (
        "3 of the 4 gold items needed: the queue mixes them in at the gold rate (10%) and judges "
        "an annotator after 4 gold answers; upload more, or set the gold rate to 0"
    )
    GoldItem.objects.create(task=task, item=items[3], answer=False)
    assert checks(task)["gold"].ok and checks(task)["gold"].state == "4 gold items"
    task.gold_rate = 0.0  # unsaved: the checklist reads the settings on the object
    check = checks(task)["gold"]
    assert (check.ok, check.blocking) == (True, False)
    assert check.state.startswith("gold rate 0")


def test_dates_are_information_and_a_passed_deadline_is_pointed_out():
    task = make_task()
    check = checks(task)["phases"]
    assert (check.ok, check.blocking, check.page) == (
        True,
        False,
        "/tasks/t/organize/phases/#phases-form",
    )
    assert check.state == "none set: runs are accepted from opening until the task is closed"
    now = timezone.now().replace(microsecond=0)
    task.submissions_open_at = now + timedelta(days=1)
    task.submissions_close_at = now + timedelta(days=2)
    check = checks(task)["phases"]
    assert check.ok and check.state.startswith("runs from 20") and " until 20" in check.state
    task.submissions_open_at, task.submissions_close_at = None, now - timedelta(hours=1)
    task.accept_late_runs = False
    check = checks(task)["phases"]
    assert not check.ok and not check.missing
    assert check.state.startswith("runs from opening until ")
    assert check.state.endswith("; the deadline has passed: runs would be refused")
    assert kind_for(task).readiness(task).missing == tuple(
        c
        for c in kind_for(task).readiness(task).checks
        if c.key in ("annotators", "reference_sample", "gold")
    )


@pytest.mark.parametrize("kind", [Task.Kind.OPEN, Task.Kind.CLOSED_POOL])
def test_a_task_given_what_its_list_asks_is_ready(kind):
    task = satisfy_checklist(make_task(kind=kind))
    readiness = kind_for(task).readiness(task)
    assert readiness.ready and readiness.missing == ()
    assert readiness.as_dict()["ready"] is True
    assert {c["key"] for c in readiness.as_dict()["checks"]} == {c.key for c in readiness.checks}
