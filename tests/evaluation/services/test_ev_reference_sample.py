"""A reference sample built in the product, completed by the estimation: at default settings
(one judgment per candidate, two annotators answering on the draft, no gold item) the sample is
exactly the true candidates; doubtful candidates get further looks, once each; a candidate that
can get no further judgment is listed and a gold answer settles it; draws add up and a
replacement stands alone; retry-safe."""

from __future__ import annotations

import random

import pytest
from django.contrib.auth import get_user_model
from reference_samples import (
    DOCUMENTS,
    TRUE_KEYS,
    TRUTH,
    annotate,
    candidates_file,
    draft_with_candidates,
    expected,
    reference,
)

from annotation.models import VerificationRequest
from annotation.services import (
    cancel_reference_sample,
    draw_reference_sample,
    load_gold,
    submit_judgment,
)
from evaluation.kinds.open_world.reference_sample import update_reference_sample
from evaluation.kinds.open_world.state import load_task_state
from evaluation.locks import engine_lock
from leaderboard.models import Item, Task
from leaderboard.services.reference_candidates import upload_candidates
from leaderboard.services.task_roles import accept_task_invitation, invite_to_task

from pipeline_support import (
    add_run,
    annotator,
    answer_what_is_served,
    make_task,
    make_team,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def task():
    return draft_with_candidates()


def judgments_per_candidate(task, sample) -> list[int]:
    keys = [k for d in sample.documents for k in DOCUMENTS[d]]
    return list(
        VerificationRequest.objects.filter(task=task, item__key__in=keys).values_list(
            "judgments_counted", flat=True
        )
    )


def test_at_default_settings_the_sample_is_exactly_the_true_candidates(task, driver):
    # The organizer's afternoon: a draw of ten documents on the draft, two annotators who are
    # always right, one judgment per candidate asked. (Before: the draft refused their answers;
    # on an open task the sample completed with 0 true items of 58.)
    assert task.judgments_per_item == 1 and not task.gold_items.exists()
    sample = draw_reference_sample(task=task, user=None, size=10, seed=2026)
    people = [(annotator(task, "one"), 1.0), (annotator(task, "two"), 1.0)]
    annotate(task, driver, people)
    sample.refresh_from_db()
    truth = expected(sample)
    assert 50 <= sample.n_candidates <= 70 and 3 <= len(truth) <= 10
    assert sample.state == "complete" and sample.stuck == []
    assert reference(task) == truth
    assert (sample.n_resolved, sample.n_true) == (sample.n_candidates, len(truth))
    # The doubtful ones (every "correct" at least) were looked at again, by the other annotator.
    counts = judgments_per_candidate(task, sample)
    assert sample.n_looks >= len(truth) and sample.n_looks == sum(counts) - len(counts)
    assert max(counts) == 2
    task.refresh_from_db()
    assert task.reference_version == 1 == sample.reference_version
    assert (sample.reference_items, sample.reference_documents) == (
        len(truth),
        len(set(truth.values())),
    )


@pytest.mark.slow
def test_a_further_draw_adds_documents_not_drawn_yet_to_the_sample(task, driver):
    people = [(annotator(task, "one"), 1.0), (annotator(task, "two"), 1.0)]
    first = draw_reference_sample(task=task, user=None, size=10, seed=1)
    annotate(task, driver, people)
    first.refresh_from_db()
    assert first.state == "complete"
    second = draw_reference_sample(task=task, user=None, size=6, seed=1)
    # Only documents the first draw did not take, chosen among the ten left.
    assert not set(second.documents) & set(first.documents)
    assert second.n_documents == 10 and (second.frame, second.replace) == (first.frame, False)
    annotate(task, driver, people, seed=6)
    second.refresh_from_db()
    assert second.state == "complete"
    assert reference(task) == expected(first, second)
    task.refresh_from_db()
    assert task.reference_version == 2 == second.reference_version
    assert second.reference_items == len(expected(first, second))
    # The first draw's labels were not decided again, its requests not asked again.
    assert first.n_looks + second.n_looks == sum(
        n - 1 for s in (first, second) for n in judgments_per_candidate(task, s)
    )


@pytest.mark.slow
def test_a_draw_that_replaces_the_sample_stands_alone(task, driver):
    people = [(annotator(task, "one"), 1.0), (annotator(task, "two"), 1.0)]
    first = draw_reference_sample(task=task, user=None, size=10, seed=1)
    annotate(task, driver, people)
    before = reference(task)
    assert before == expected(first.__class__.objects.get(pk=first.pk))
    again = draw_reference_sample(task=task, user=None, size=8, seed=3, replace=True, confirm=True)
    assert again.frame == first.frame + 1 and again.n_documents == 20
    # The sample stays in use until the replacement is complete.
    assert reference(task) == before
    annotate(task, driver, people, seed=8)
    again.refresh_from_db()
    assert again.state == "complete" and reference(task) == expected(again)
    task.refresh_from_db()
    assert task.reference_frame == again.frame
    # A further draw now adds to the replacement, from the documents it did not take.
    third = draw_reference_sample(task=task, user=None, size=12, seed=4)
    assert third.frame == again.frame and not set(third.documents) & set(again.documents)


def test_a_candidate_that_can_get_no_further_judgment_is_listed_and_a_gold_answer_settles_it(
    task, driver
):
    # One annotator: nobody can give a second look, and a single "correct" stays doubtful.
    sample = draw_reference_sample(task=task, user=None, size=10, seed=2026)
    alone = annotator(task, "one")
    annotate(task, driver, [(alone, 1.0)])
    sample.refresh_from_db()
    truth = expected(sample)
    assert sample.state == "verifying" and sample.n_looks == 0
    assert set(truth) <= set(sample.stuck)
    assert task.reference_version == Task.objects.get(pk=task.pk).reference_version == 0
    # The organizer gives their answers as gold: exact labels, and the sample completes.
    load_gold(
        task=task,
        lines=[f"{key}\t{'correct' if TRUTH[key] else 'incorrect'}" for key in sample.stuck],
    )
    driver.drain()
    sample.refresh_from_db()
    assert sample.state == "complete" and reference(task) == truth


@pytest.mark.slow
def test_an_annotator_who_joins_gives_the_looks_the_sample_waits_for(task, driver):
    organizer = get_user_model().objects.create_user("org")
    sample = draw_reference_sample(task=task, user=None, size=10, seed=2026)
    annotate(task, driver, [(annotator(task, "one"), 1.0)])
    sample.refresh_from_db()
    assert sample.stuck
    task.organizers.add(organizer)
    link = invite_to_task(task=task, role="annotator", by=organizer)
    second = get_user_model().objects.create_user("two")
    accept_task_invitation(key=link.key, user=second)
    annotate(task, driver, [(second, 1.0)])
    sample.refresh_from_db()
    assert sample.state == "complete" and sample.stuck == []
    assert reference(task) == expected(sample)


@pytest.mark.slow
def test_a_look_is_asked_once_however_often_the_estimation_runs(task, driver):
    sample = draw_reference_sample(task=task, user=None, size=10, seed=2026)
    one, _ = annotator(task, "one"), annotator(task, "two")
    answer_what_is_served(task, [(one, 1.0)], TRUE_KEYS, random.Random(1))
    driver.drain()
    sample.refresh_from_db()
    asked = sample.n_looks
    required = sum(
        VerificationRequest.objects.filter(task=task).values_list("judgments_required", flat=True)
    )
    assert asked > 0
    for _ in range(3):
        driver.sent.append(("evaluation.estimate_task", [task.pk]))
        driver.drain()
    sample.refresh_from_db()
    assert sample.n_looks == asked
    assert required == sum(
        VerificationRequest.objects.filter(task=task).values_list("judgments_required", flat=True)
    )


@pytest.mark.slow
def test_the_check_is_safe_to_run_twice_on_the_same_answers(task, driver):
    sample = draw_reference_sample(task=task, user=None, size=10, seed=2026)
    people = [(annotator(task, "one"), 1.0), (annotator(task, "two"), 1.0)]
    driver.drain()
    answer_what_is_served(task, people, TRUE_KEYS, random.Random(1))
    driver.drain()  # the estimation asks the looks
    sample.refresh_from_db()
    assert sample.n_looks > 0
    # The looks answered; the estimation they ask for runs twice at once (a retried job).
    answer_what_is_served(task, people, TRUE_KEYS, random.Random(2))
    driver.sent.clear()
    loaded = [load_task_state(task), load_task_state(task)]
    with engine_lock(task.pk) as token:
        done = update_reference_sample(loaded[0], token)
        assert done is not None and done.state == "complete"
        assert update_reference_sample(loaded[1], token) is None  # nothing verifying any more
    task.refresh_from_db()
    assert task.reference_version == 1 and reference(task) == expected(sample)


def test_a_check_whose_engine_lease_was_lost_writes_nothing(task, driver):
    from evaluation.locks import LockLost

    sample = draw_reference_sample(task=task, user=None, size=10, seed=2026)
    driver.drain()
    loaded = load_task_state(task)
    with pytest.raises(LockLost):
        update_reference_sample(loaded, "not-the-lease")
    sample.refresh_from_db()
    assert sample.n_resolved == 0 and sample.state == "verifying"


def test_runs_items_and_candidates_together_on_an_open_task(driver):
    # An open task with a run: the candidates it predicts are in the run's pool cells, the
    # sample still comes out exactly (the candidates are one domain whatever the runs say).
    task = make_task(slug="open")
    upload_candidates(task=task, user="test", upload=candidates_file())
    keys = dict(Item.objects.filter(task=task).values_list("key", "index"))
    add_run(task, make_team("A"), [keys[k] for k in sorted(TRUTH)[::3]])
    driver.drain()
    sample = draw_reference_sample(task=task, user=None, size=10, seed=7)
    annotate(task, driver, [(annotator(task, "one"), 1.0), (annotator(task, "two"), 1.0)])
    sample.refresh_from_db()
    assert sample.state == "complete" and reference(task) == expected(sample)
    task.refresh_from_db()
    assert task.snapshots.latest("version").reference_version == task.reference_version


def test_a_cancelled_sample_is_never_completed_and_its_documents_may_be_drawn_again(task, driver):
    sample = draw_reference_sample(task=task, user=None, size=20, seed=3)
    driver.drain()
    cancel_reference_sample(task=task, by=None)
    # Its candidates are all answered after the cancel: the estimation leaves it cancelled and
    # writes no reference sample.
    for name in ("one", "two"):
        user = annotator(task, name)
        for request in VerificationRequest.objects.filter(task=task, state="pending"):
            verdict = "correct" if TRUTH[request.item.key] else "incorrect"
            submit_judgment(request_id=request.pk, annotator=user, answer=verdict)
    driver.drain()
    sample.refresh_from_db()
    assert sample.state == "cancelled" and sample.reference_version is None
    assert Task.objects.get(pk=task.pk).reference_version == 0 and not reference(task)
    again = draw_reference_sample(task=task, user=None, size=20, seed=3)
    assert sorted(again.documents) == sorted(sample.documents)
