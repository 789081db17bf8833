"""The closed-pool pipeline services driven in-process: rounds over the pool for every run, the
sampling record stored and resumed exactly, estimates per measure, a snapshot with ranks."""

from __future__ import annotations

import random

import numpy as np
import pytest

from annotation.models import RequestConflict, VerificationRequest
from annotation.services import load_gold
from evaluation.core.closed_pool import AdaptivePoolDesign, PoolSampling, PoolState
from evaluation.core.state import TaskState
from evaluation.kinds.closed_pool.state import load_pool_state, permanent_numbers
from evaluation.kinds.engine_rows import load_answers
from evaluation.models import Draw, PlanRound, PoolSamplingRecord
from evaluation.services import plan_run
from leaderboard.board_text import SnapshotTerms
from leaderboard.models import Estimate, LeaderboardSnapshot, PoolRunOutputs, Run

from pipeline_support import PipelineDriver, answer_all, answer_what_is_served
from pool_pipeline import FINAL, pool_world, settle, submit_pool_run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def driver(monkeypatch):
    return PipelineDriver(monkeypatch)


def settle_served(driver: PipelineDriver, world, limit: int = 300) -> int:
    """As :func:`settle`, the annotator answering what the queue serves (gold items mixed in)."""
    keys = {f"k{i}" for i in np.flatnonzero(world.truth)}
    rng = random.Random(5)
    answered = 0
    for _ in range(limit):
        driver.drain()
        if {r.state for r in Run.objects.filter(task=world.task)} <= FINAL:
            return answered
        n = answer_what_is_served(world.task, [(world.annotator, 1.0)], keys, rng)
        assert n, "runs are not final and nothing is served"
        answered += n
    raise AssertionError("the pipeline did not settle")


@pytest.mark.slow
def test_three_runs_are_estimated_from_shared_rounds(driver):
    world = pool_world(
        target_half_width=0.2, measures=("precision", "recall", "f1", "mcc"), gold_rate=0.2
    )
    # The one annotator is measured on gold items (without them nothing says how far to trust
    # their answers, and the intervals keep that doubt: the pool was verified whole).
    truth = world.truth
    gold = [*np.flatnonzero(truth)[:4], *np.flatnonzero(~truth)[:36]]
    load_gold(
        task=world.task,
        lines=[f"k{i}\t{'correct' if truth[i] else 'incorrect'}" for i in gold],
    )
    settle_served(driver, world)
    # Items verified (drawn and answered: a drawn gold item's gold answers count).
    answered = VerificationRequest.objects.filter(task=world.task, judgments_counted__gt=0).count()
    runs = list(Run.objects.filter(task=world.task).order_by("id"))
    assert all(r.state == Run.State.SCORED for r in runs), [(r.name, r.reason) for r in runs]
    # Every label is shared: short of a census of the pool (250-300 of 400 over task seeds
    # 0-9; those 10 seeds' 120 intervals all covered the truth).
    assert 0 < answered <= 0.75 * world.truth.size
    snapshot = LeaderboardSnapshot.objects.filter(task=world.task).order_by("-version").first()
    assert snapshot.details["closed_pool"]["measures"] == ["precision", "recall", "f1", "mcc"]
    assert snapshot.n_labels == answered
    for row, run in zip(snapshot.rows, runs, strict=True):
        assert row["run"] == run.pk and not row["provisional"]
        for m in ("precision", "recall", "f1", "mcc"):
            cell = row[m]
            assert cell["high"] - cell["low"] <= 2 * 0.2 + 1e-9
            # Monte-Carlo: 12 intervals at 95% on one fixed seed; checked against the truth.
            assert cell["low"] <= world.true_value(run, m) <= cell["high"], (run.name, m, cell)
            assert row["rank"][m] is not None
    stored = Estimate.objects.filter(snapshot=snapshot)
    assert stored.count() == 3 * 4
    assert set(stored.values_list("metric", flat=True)) == {"precision", "recall", "f1", "mcc"}


@pytest.mark.slow
def test_the_stored_record_resumes_exactly_what_one_long_lived_design_would_draw(driver):
    world = pool_world(target_half_width=0.15)
    settle(driver, world)
    task = world.task
    rounds = list(PlanRound.objects.filter(task=task).order_by("id"))
    assert rounds and PoolSamplingRecord.objects.get(task=task).rounds == len(rounds)
    # One design kept in memory across every round (what a single process would have done),
    # fed the same runs and, before each round, the answers that round's planner saw.
    runs = list(Run.objects.filter(task=task).order_by("id"))
    state = PoolState(task.n_items)
    for run in runs:
        state.add_run(*PoolRunOutputs.objects.get(run=run).arrays())
    design = AdaptivePoolDesign(
        confidence=task.confidence, target_half_width=task.target_half_width, targets=task.measures
    )
    design.resume(
        state, PoolSampling(permanent_numbers(task, task.n_items), np.zeros(task.n_items))
    )
    index = {run.pk: i for i, run in enumerate(runs)}
    for plan_round in rounds:
        answers = TaskState(task.n_items)
        load_answers(answers, task, plan_round.labels_version)
        state.set_answers(answers)
        drawn = dict(
            Draw.objects.filter(plan_round=plan_round).values_list("item__index", "inclusion")
        )
        items = design.plan(
            state, index[plan_round.run_id], budget=task.n_items, rng=np.random.default_rng(0)
        )
        assert sorted(items.tolist()) == sorted(drawn), (
            plan_round.run.name,
            plan_round.round,
            state.n_labelled,
        )
        inclusion = design.sampling(state).inclusion
        np.testing.assert_allclose(
            [inclusion[i] for i in sorted(drawn)], [drawn[i] for i in sorted(drawn)]
        )
        state.set_labels(items, world.truth[items])
    stored = np.frombuffer(bytes(PoolSamplingRecord.objects.get(task=task).inclusion), "<f8")
    np.testing.assert_array_equal(stored, design.sampling(state).inclusion)
    # And the database's state is the same pool: labels of every drawn item, nothing else.
    loaded = load_pool_state(task)
    np.testing.assert_array_equal(loaded.state.labels, state.labels)


def test_annotators_get_the_pool_payload_and_teams_never_verify_their_positives(driver):
    world = pool_world(target_half_width=0.15)
    driver.drain()
    requests = VerificationRequest.objects.filter(task=world.task).select_related("item")
    assert requests.exists()
    # Conflicts are recorded for teams with a member who annotates the task: none yet, then
    # every predicting team's once its participant joins the task as an annotator.
    assert not RequestConflict.objects.exists()
    for run in world.runs:
        world.task.annotators.add(*run.team.members.all())
    for request in requests:
        assert request.item.payload == {"text": f"pair {request.item.index}"}
        conflicting = set(request.conflicts.values_list("team__name", flat=True))
        predicted = {
            f"team-{name}"
            for name, (_, predictions) in world.systems.items()
            if name in {r.name for r in world.runs} and predictions[request.item.index]
        }
        assert conflicting == predicted


def test_a_run_arriving_while_a_round_is_out_gets_its_conflicts(driver):
    world = pool_world(target_half_width=0.15, submit=False)
    first = submit_pool_run(world.task, "a-good", world.systems["a-good"])
    driver.drain()
    assert Run.objects.get(pk=first.pk).state == Run.State.AWAITING_LABELS
    late = submit_pool_run(world.task, "b-broad", world.systems["b-broad"])
    world.task.annotators.add(*late.team.members.all())  # a team that can conflict
    driver.drain()
    late.refresh_from_db()
    assert late.state == Run.State.AWAITING_LABELS and "waiting for answers" in late.reason
    _, predictions = world.systems["b-broad"]
    pending = VerificationRequest.objects.filter(task=world.task).select_related("item")
    flagged = {
        r.item.index for r in pending if r.conflicts.filter(team__name="team-b-broad").exists()
    }
    assert flagged == {r.item.index for r in pending if predictions[r.item.index]}
    assert flagged  # the broad run predicts some of the queued items


def test_a_budget_stops_every_run_partial(driver):
    world = pool_world(target_half_width=0.02, label_budget=60)
    answered = settle(driver, world)
    assert answered <= 60
    runs = Run.objects.filter(task=world.task)
    assert {r.state for r in runs} == {Run.State.PARTIAL}
    assert all("budget (60 judgments) is spent" in r.reason for r in runs)
    # The board says so in the reason's figures; a pool has no reference sample to speak of.
    snapshot = LeaderboardSnapshot.objects.filter(task=world.task).order_by("-version").first()
    words = SnapshotTerms.of(world.task, snapshot)
    assert words.reference is None and snapshot.n_reference_documents == 0
    assert snapshot.details["target_half_width"] == 0.02
    for run in runs:
        row = next(r for r in snapshot.rows if r["run"] == run.pk)
        text = words.state_text(row["state"], outcome=row["outcome"], row=row)
        widest = f"{words.half_width(row):.3f}"
        assert text == f"budget spent: widest interval ±{widest}, target ±0.02"
        assert f"the widest interval is ±{widest}, the target ±0.02" in run.reason


def test_planning_twice_asks_nothing_twice(driver):
    world = pool_world(target_half_width=0.15)
    driver.drain()
    first = world.runs[0]
    assert PlanRound.objects.filter(task=world.task).count() == 1
    # A redelivered message: answers are still out, so the run waits and nothing is stored.
    assert plan_run(first.pk) == "waiting"
    assert PlanRound.objects.filter(task=world.task).count() == 1
    assert Run.objects.get(pk=first.pk).state == Run.State.AWAITING_LABELS


def test_a_record_that_does_not_match_the_rounds_fails_the_run_not_the_sample(driver):
    world = pool_world(target_half_width=0.15)
    driver.drain()
    answer_all(world.task, world.answers, world.annotator)
    PoolSamplingRecord.objects.filter(task=world.task).update(rounds=7)
    run = world.runs[0]
    Run.objects.filter(pk=run.pk).update(state=Run.State.PLANNING)
    assert plan_run(run.pk) == "failed"
    run.refresh_from_db()
    assert run.state == Run.State.FAILED and "sampling record reflects 7 rounds" in run.reason
    assert PlanRound.objects.filter(task=world.task).count() == 1
