"""A reference sample built in the product, completed by the estimation: progress as judgments
arrive, the true candidates (by the annotator model's posteriors) written as the reference sample
with their documents as groups once every candidate is resolved, one version bump, retry-safe."""

from __future__ import annotations

import io

import pytest

from annotation.models import VerificationRequest
from annotation.services import cancel_reference_sample, draw_reference_sample, submit_judgment
from evaluation.engine_state import load_task_state
from evaluation.services.reference_sample import update_reference_sample
from leaderboard.models import Item, ReferenceItem, ReferenceSample, Task
from leaderboard.services.reference_candidates import upload_candidates

from pipeline_support import PipelineDriver, add_run, annotator, make_task, make_team

pytestmark = pytest.mark.django_db(transaction=True)

# document -> {candidate key: truly correct}
DOCUMENTS = {
    "doc0": {"a0": True, "a1": False},
    "doc1": {"b0": True},
    "doc2": {"c0": False, "c1": True, "c2": True},
    "doc3": {"d0": True},
}
TRUTH = {key: true for cands in DOCUMENTS.values() for key, true in cands.items()}


@pytest.fixture
def driver(monkeypatch):
    return PipelineDriver(monkeypatch)


@pytest.fixture
def task():
    task = make_task(judgments_per_item=2, gold_rate=0.0)
    lines = "".join(f"{key}\t{doc}\n" for doc, cands in DOCUMENTS.items() for key in cands)
    upload = io.BytesIO(lines.encode())
    upload.name = "candidates.tsv"
    upload_candidates(task=task, user="test", upload=upload)
    return task


def answer(task, user, *, skip: set[str] = frozenset()) -> None:
    """``user`` answers every pending request of ``task`` they have not answered, truthfully."""
    for request in VerificationRequest.objects.filter(task=task, state="pending").select_related(
        "item"
    ):
        if request.item.key in skip or request.judgments.filter(annotator=user).exists():
            continue
        verdict = "correct" if TRUTH[request.item.key] else "incorrect"
        submit_judgment(request_id=request.pk, annotator=user, answer=verdict)


def reference(task) -> dict[str, str]:
    return dict(ReferenceItem.objects.filter(task=task).values_list("item__key", "group"))


def test_the_sample_completes_once_every_candidate_is_resolved(task, driver):
    team = make_team("A")
    keys = dict(Item.objects.filter(task=task).values_list("key", "index"))
    add_run(task, team, [keys["a0"], keys["c1"]])
    driver.drain()
    sample = draw_reference_sample(task=task, user=None, size=3, seed=11)
    drawn = set(sample.documents)
    candidates = {k for d in drawn for k in DOCUMENTS[d]}
    driver.drain()
    ann1, ann2 = annotator(task, "one"), annotator(task, "two")

    # One judgment of the two asked: nothing resolved, no reference sample.
    answer(task, ann1)
    driver.drain()
    sample.refresh_from_db()
    assert (sample.state, sample.n_resolved, sample.n_true) == ("verifying", 0, 0)
    assert Task.objects.get(pk=task.pk).reference_version == 0 and not reference(task)

    # Every candidate but one resolved: progress, still no reference sample.
    last = sorted(candidates)[0]
    answer(task, ann2, skip={last})
    driver.drain()
    sample.refresh_from_db()
    assert sample.state == "verifying"
    assert sample.n_resolved == len(candidates) - 1
    assert sample.n_true == sum(TRUTH[k] for k in candidates if k != last)
    assert Task.objects.get(pk=task.pk).reference_version == 0 and not reference(task)

    # The last one: the true candidates become the reference sample, grouped by document. The
    # check runs twice on the same judgments (a retried job): the version changes once.
    answer(task, ann2)
    loaded = [load_task_state(task), load_task_state(task)]
    first = update_reference_sample(loaded[0])
    assert first is not None and first.state == "complete"
    assert update_reference_sample(loaded[1]) is None  # nothing is being verified any more
    done = driver.drain()
    sample.refresh_from_db()
    expected = {k: d for d in drawn for k, true in DOCUMENTS[d].items() if true}
    assert sample.state == "complete" and sample.completed_at is not None
    assert (sample.n_resolved, sample.n_true) == (len(candidates), len(expected))
    assert reference(task) == expected
    task.refresh_from_db()
    assert task.reference_version == 1 == sample.reference_version
    # The new reference sample was estimated like an upload's (the task has a run).
    assert [name for name, *_ in done].count("evaluation.estimate_task") >= 1
    assert task.snapshots.latest("version").reference_version == 1

    # Later estimations change nothing.
    driver.sent.append(("evaluation.estimate_task", [task.pk]))
    driver.drain()
    assert Task.objects.get(pk=task.pk).reference_version == 1
    assert reference(task) == expected


def test_a_sample_of_resolved_candidates_completes_at_the_next_estimation(task, driver):
    # Every candidate was verified before the draw (another sample, or the planner, asked).
    other = draw_reference_sample(task=task, user=None, size=4, seed=3)
    ann1, ann2 = annotator(task, "one"), annotator(task, "two")
    answer(task, ann1)
    answer(task, ann2)
    driver.drain()
    other.refresh_from_db()
    assert other.state == "complete"
    assert reference(task) == {k: d for d, c in DOCUMENTS.items() for k, t in c.items() if t}
    sample = draw_reference_sample(task=task, user=None, size=1, seed=5)
    driver.drain()
    sample.refresh_from_db()
    assert sample.state == "complete" and sample.reference_version == 2
    assert set(reference(task).values()) == set(sample.documents)
    assert ReferenceSample.objects.filter(state="verifying").count() == 0


def test_a_cancelled_sample_is_never_completed(task, driver):
    sample = draw_reference_sample(task=task, user=None, size=4, seed=3)
    driver.drain()
    cancel_reference_sample(task=task, by=None)
    # Its candidates are all answered after the cancel: the estimation leaves it cancelled and
    # writes no reference sample.
    answer(task, annotator(task, "one"))
    answer(task, annotator(task, "two"))
    assert update_reference_sample(load_task_state(task)) is None
    driver.drain()
    sample.refresh_from_db()
    assert sample.state == "cancelled" and sample.reference_version is None
    assert Task.objects.get(pk=task.pk).reference_version == 0 and not reference(task)
