"""Settling a draw's stuck candidates, done by the estimation: the draw completes with each
stuck candidate decided as its answers stand (true when its posterior is above one half, unless
that overrules every answer), recorded with its posterior on the draw and flagged on the
reference items it adds, which the sample's size names; a request stands while an annotator who
joined gives looks; a lone annotator's "correct" stays true."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from reference_samples import annotate, draft_with_candidates, expected, reference

from annotation.services import draw_reference_sample, settle_reference_sample
from leaderboard.models import ReferenceItem, ReferenceSample
from leaderboard.selectors import reference_size
from leaderboard.services.task_roles import accept_task_invitation, invite_to_task

from pipeline_support import annotator

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def task():
    return draft_with_candidates()


def stuck_after(task, driver, people, *, seed) -> ReferenceSample:
    """A draw of ten documents answered by ``people`` until nothing moves: still verifying,
    every candidate in doubt stuck."""
    sample = draw_reference_sample(task=task, user=None, size=10, seed=2026)
    annotate(task, driver, people, seed=seed)
    sample.refresh_from_db()
    assert sample.state == "verifying" and sample.stuck and sample.n_awaiting == 0
    return sample


def settled_flags(task) -> dict[str, bool]:
    return dict(ReferenceItem.objects.filter(task=task).values_list("item__key", "settled"))


# How many campaigns the first test plays, at most, for one whose settling decides some stuck
# candidates true and not all. Measured with the queue's shuffled serving order
# (`STUDY_SEEDS=15 python -m pytest -p tests.conftest bench/serving_order_study.py -k settle`,
# docs/BENCHMARKS.md): 9 of 15 campaigns give one (9 of 15 in the items' order too), 0.256 at
# the lower 99% bound; all of 24 fail with probability at most 0.744**24 = 0.0008 (0.4**24 =
# 3e-10 at the measured share). One campaign in 1.7 on average.
ATTEMPTS = 24


def settled_with_a_mixture(driver):
    """A draw of ten documents answered by two fallible annotators (right 95% and 90% of the
    time) until nothing moves, then settled, on fresh tasks until one settles some stuck
    candidates true and not all (which answers a campaign gets depends on the task's seed,
    random, through the queue's serving order). Returns the task, its settled draw, the stuck
    keys and how many candidates the answers had resolved true."""
    for attempt in range(ATTEMPTS):
        task = draft_with_candidates(slug=f"settle-{attempt}")
        people = [(annotator(task, "one"), 0.95), (annotator(task, "two"), 0.9)]
        sample = stuck_after(task, driver, people, seed=attempt)
        stuck, resolved_true = list(sample.stuck), sample.n_true
        settle_reference_sample(task=task, by=None)
        driver.drain()
        sample.refresh_from_db()
        decided_true = [entry for entry in sample.settled if entry["true"]]
        if decided_true and len(decided_true) < len(stuck):
            return task, sample, stuck, resolved_true
    raise AssertionError(f"no campaign of {ATTEMPTS} settled a mixture")


@pytest.mark.slow
def test_a_settled_draw_completes_with_its_stuck_candidates_as_their_answers_stand(driver):
    # Two fallible annotators disagree on some candidates and agree on others without
    # convincing the model at 0.95: those are stuck, and settled as their answers stand.
    task, sample, stuck, resolved_true = settled_with_a_mixture(driver)
    assert sample.state == "complete" and sample.stuck == []
    assert [entry["key"] for entry in sample.settled] == stuck
    for entry in sample.settled:
        assert 0.0 < entry["posterior"] < 1.0
    decided_true = {entry["key"] for entry in sample.settled if entry["true"]}
    assert decided_true and len(decided_true) < len(stuck)
    # The sample: the resolved true candidates and the settled ones decided true, these flagged.
    flags = settled_flags(task)
    assert {key for key, flag in flags.items() if flag} == decided_true
    assert len(flags) == resolved_true + len(decided_true) == sample.n_true
    assert set(reference(task).values()) <= set(sample.documents)
    size = reference_size(task)
    assert (size.items, size.settled) == (len(flags), len(decided_true))
    assert size.summary.endswith(
        f", {len(decided_true)} of them decided below the task's confidence"
    )
    assert (sample.reference_items, sample.reference_version) == (len(flags), 1)
    # A further draw keeps those flags in the union it writes.
    second = draw_reference_sample(task=task, user=None, size=4, seed=3)
    annotate(task, driver, [(annotator(task, "three"), 1.0), (annotator(task, "four"), 1.0)])
    second.refresh_from_db()
    assert second.state == "complete" and second.settled == []
    flags = settled_flags(task)
    assert {key for key, flag in flags.items() if flag} == decided_true
    assert len(flags) == sample.n_true + second.n_true


def test_a_lone_annotators_correct_answers_stay_true_when_settled(task, driver):
    # One annotator, always right: nobody can look again, and a lone "correct" is at p < 1/2.
    # Decided as the answers stand, the sample is exactly the true candidates.
    sample = stuck_after(task, driver, [(annotator(task, "one"), 1.0)], seed=1)
    truth = expected(sample)
    assert set(truth) <= set(sample.stuck)
    settle_reference_sample(task=task, by=None)
    driver.drain()
    sample.refresh_from_db()
    assert sample.state == "complete" and reference(task) == truth
    lone = [entry for entry in sample.settled if entry["key"] in truth]
    assert lone and all(entry["true"] and entry["posterior"] < 0.5 for entry in lone)


@pytest.mark.slow
def test_the_request_stands_while_an_annotator_who_joins_gives_looks(task, driver):
    organizer = get_user_model().objects.create_user("org")
    task.organizers.add(organizer)
    sample = stuck_after(task, driver, [(annotator(task, "one"), 1.0)], seed=1)
    settle_reference_sample(task=task, by=organizer)
    # Before the estimation decides them, a second annotator joins: the candidates in doubt can
    # be looked at again, so the looks come first and the draw waits.
    second = get_user_model().objects.create_user("two")
    accept_task_invitation(
        key=invite_to_task(task=task, role="annotator", by=organizer).key, user=second
    )
    driver.drain()
    sample.refresh_from_db()
    assert sample.state == "verifying" and sample.stuck == [] and sample.n_awaiting > 0
    assert sample.settle_requested_by == organizer
    # Once the looks are in, every candidate is resolved: nothing is left to settle.
    annotate(task, driver, [(second, 1.0)])
    sample.refresh_from_db()
    assert sample.state == "complete" and sample.settled == []
    assert reference(task) == expected(sample) and reference_size(task).settled == 0
