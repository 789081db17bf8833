"""`manage.py simulate_annotators`: answers what the queue serves, from a truth file."""

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotation.models import GoldAnswer, GoldItem, Judgment, VerificationRequest
from annotation.services import request_verification

from pipeline_support import add_items, make_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def task(tmp_path):
    task = make_task(slug="sim", judgments_per_item=1)
    items = add_items(task, 10)  # keys k0 .. k9
    request_verification(task=task, item_ids=[it.pk for it in items])
    (tmp_path / "truth.tsv").write_text("k0\nk1\tdoc-1\nk2\n\n")
    return task


def run(*args) -> str:
    out = StringIO()
    call_command("simulate_annotators", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def answers(task) -> dict[str, str]:
    return dict(
        Judgment.objects.filter(request__task=task, withdrawn_at=None).values_list(
            "request__item__key", "answer"
        )
    )


def test_perfect_annotator_answers_every_item_from_the_truth(task, tmp_path):
    out = run("sim", "--truth", str(tmp_path / "truth.tsv"), "--seed", "1")
    assert "answered 10 item(s)" in out and "3 correct, 7 incorrect" in out
    assert answers(task) == {f"k{i}": "correct" if i < 3 else "incorrect" for i in range(10)}
    user = get_user_model().objects.get(username="sim-annotator-1")
    assert task.annotators.filter(pk=user.pk).exists() and not user.has_usable_password()
    # Through the queue, as a person: every answer was given on a lease.
    assert not Judgment.objects.filter(assignment=None).exists()


def test_gold_items_are_served_and_answered_like_any_other(task, tmp_path):
    # Gold is served only alongside real work, each slot gold at the rate by an rng seeded with
    # the task's (random) seed: at 0.5 both gold items came before the ten real ones ran out in
    # all but 11/2048 = 0.54% of seeds (one run failed, answering 11). At 0.9 they fail to,
    # with at most one gold among the claims before the tenth real one: 10 * 0.1**10 + 0.1**10.
    task.gold_rate = 0.9
    task.save()
    # Two more items, both false, whose answers the organizer knows.
    gold = [
        GoldItem.objects.create(task=task, item=item, answer=False) for item in add_items(task, 2)
    ]
    out = run("sim", "--truth", str(tmp_path / "truth.tsv"), "--seed", "2")
    assert "answered 12 item(s)" in out and "3 correct, 9 incorrect" in out
    assert sorted(GoldAnswer.objects.values_list("gold_id", "correct")) == [
        (gold[0].pk, True),
        (gold[1].pk, True),
    ]
    assert len(answers(task)) == 10


def test_limit_and_several_annotators(task, tmp_path):
    task.judgments_per_item = 2
    task.save()
    VerificationRequest.objects.update(judgments_required=2)
    out = run(
        "sim",
        "--truth",
        str(tmp_path / "truth.tsv"),
        "--annotators",
        "2",
        "--limit",
        "6",
        "--seed",
        "3",
    )
    assert "answered 6 item(s)" in out and "2 simulated annotator(s)" in out
    assert Judgment.objects.count() == 6
    assert VerificationRequest.objects.filter(state="resolved").count() == 3
    # Run again: the same users continue where they stopped.
    run("sim", "--truth", str(tmp_path / "truth.tsv"), "--annotators", "2")
    assert VerificationRequest.objects.filter(state="pending").count() == 0


def test_accuracy_zero_gives_every_answer_wrong(task, tmp_path):
    run("sim", "--truth", str(tmp_path / "truth.tsv"), "--accuracy", "0")
    assert answers(task) == {f"k{i}": "incorrect" if i < 3 else "correct" for i in range(10)}


def test_until_idle_stops_after_the_idle_time(task, tmp_path):
    out = run(
        "sim", "--truth", str(tmp_path / "truth.tsv"), "--until-idle", "0.2", "--poll", "0.05"
    )
    assert "answered 10" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope", "--truth", "{truth}"], "no task with slug 'nope'"),
        (["sim", "--truth", "{missing}"], "truth file not found"),
        (["sim", "--truth", "{truth}", "--accuracy", "1.5"], "--accuracy"),
        (["sim", "--truth", "{truth}", "--annotators", "0"], "--annotators"),
    ],
)
def test_errors(task, tmp_path, args, message):
    args = [a.format(truth=tmp_path / "truth.tsv", missing=tmp_path / "missing.tsv") for a in args]
    with pytest.raises(CommandError, match=message):
        run(*args)
