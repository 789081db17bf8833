"""A round whose items were all answered already moves its run on without waiting for anyone.

The planner draws from the items no round has drawn yet, and a reference sample's candidates are
not drawn by any round: they are verified through requests of their own. A round that draws only
such candidates (answered already) opens no request (``request_verification`` skips an item that
has one), so no answer will ever come to wake its run: the planner must ask for the estimation
itself, which moves the run on as it does after the last answer of a round. Seen about once in
six walks of the browser walkthrough (its late run drew only reference candidates), masked there
by the watchdog's re-plan.
"""

from __future__ import annotations

import io

import pytest

from annotation.models import VerificationRequest
from annotation.services import draw_reference_sample, submit_judgment
from evaluation.models import PlanRound
from evaluation.services import plan_run
from leaderboard.jobs import ESTIMATE_TASK
from leaderboard.models import ReferenceSample, Run, Task
from leaderboard.services.reference_candidates import upload_candidates

from pipeline_support import PipelineDriver, add_run, annotator, make_task, make_team

pytestmark = pytest.mark.django_db(transaction=True)

N = 8  # items k0..k7, two per document, every one a reference candidate
TRUE = {0, 1, 2, 4, 6}


@pytest.fixture
def driver(monkeypatch):
    return PipelineDriver(monkeypatch)


@pytest.fixture
def task(driver):
    """Every item of the task verified through the reference sample, before any run."""
    task = make_task(target_half_width=0.3, gold_rate=0.0)
    Task.objects.filter(pk=task.pk).update(seed=5)
    task.refresh_from_db()
    upload = io.BytesIO("".join(f"k{i}\tdoc{i // 2}\n" for i in range(N)).encode())
    upload.name = "candidates.tsv"
    upload_candidates(task=task, user="test", upload=upload)
    draw_reference_sample(task=task, user=None, size=N // 2, seed=1)
    # Two annotators: the candidates still in doubt after one answer get a look by the other.
    people = [annotator(task, "one"), annotator(task, "two")]
    for _ in range(5):
        for user in people:
            answer_pending(task, user)
        driver.drain()
    assert ReferenceSample.objects.get(task=task).state == ReferenceSample.State.COMPLETE
    return task


def answer_pending(task: Task, user) -> int:
    n = 0
    pending = VerificationRequest.objects.filter(task=task, state="pending")
    for request in pending.exclude(judgments__annotator=user).select_related("item"):
        index = request.item.index
        submit_judgment(
            request_id=request.pk,
            annotator=user,
            answer="correct" if index in TRUE else "incorrect",
        )
        n += 1
    return n


def test_a_round_of_answered_items_asks_for_the_estimation(task, driver):
    run = add_run(task, make_team("A"), range(N))
    assert plan_run(run.pk) == "sample"

    # The round drew items, all of them answered already: no request opened, none pending.
    assert PlanRound.objects.get(run=run).n_items > 0
    assert VerificationRequest.objects.filter(task=task).count() == N
    assert not VerificationRequest.objects.filter(task=task, state="pending").exists()
    run.refresh_from_db()
    assert run.state == Run.State.AWAITING_LABELS
    # Nobody will answer: the planner itself asks for the estimation that moves the run on.
    assert (ESTIMATE_TASK, [task.pk]) in driver.sent


def test_a_run_drawing_only_answered_items_ends_without_the_watchdog(task, driver):
    run = add_run(task, make_team("A"), range(N))
    driver.sent.append(("evaluation.plan_run", [run.pk]))
    people = list(task.annotators.all())
    for _ in range(10):
        driver.drain()
        if not sum(answer_pending(task, user) for user in people):
            break
    run.refresh_from_db()
    assert run.state in (Run.State.SCORED, Run.State.PARTIAL), (run.state, run.reason)
