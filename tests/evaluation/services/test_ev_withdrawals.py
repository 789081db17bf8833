"""A withdrawn run in the pipeline: it stays in the engine's record, leaves the board and the
planner; the requests only it needed are cancelled (answers given stay) and come back when a new
run predicts their items; the other runs' precision is unchanged bit for bit, and the stored
history replays exactly (``engine_audit``)."""

from __future__ import annotations

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.db import transaction

from annotation.models import Judgment, RequestConflict, VerificationRequest
from annotation.services import request_verification
from evaluation.models import Draw, PlanRound
from evaluation.services import estimate_task, plan_run
from leaderboard.models import (
    Estimate,
    Item,
    LeaderboardSnapshot,
    ReferenceCandidate,
    Run,
    RunEvent,
)
from leaderboard.services.lifecycle import RunWithdrawn, fail_run, transition_run
from leaderboard.services.withdrawal import set_baseline, withdraw_run

from engine_audit import audit_task
from pipeline_support import PipelineDriver, add_run, annotator, answer_all, make_team
from pool_pipeline import pool_world
from worlds import truth_world

pytestmark = pytest.mark.django_db(transaction=True)

N = 400
# The withdrawn run predicts 0-249, the one that stays 150-399: 150-249 are shared.
WITHDRAWN_ITEMS, KEPT_ITEMS = np.arange(0, 250), np.arange(150, 400)


@pytest.fixture
def world(monkeypatch):
    rng = np.random.default_rng(3)
    base = truth_world(
        rng, n_items=N, p_true=0.6, reference=60, groups=20, target_half_width=0.04, seed=5
    )
    task, truth = base.task, base.truth
    user = annotator(task)
    owner = get_user_model().objects.create_user("owner")
    team_w, team_k = make_team("W", owner), make_team("K")
    scores = rng.random(N)
    withdrawn = add_run(task, team_w, WITHDRAWN_ITEMS, scores[WITHDRAWN_ITEMS], name="junk")
    kept = add_run(task, team_k, KEPT_ITEMS, scores[KEPT_ITEMS], name="kept")
    driver = PipelineDriver(monkeypatch)
    # The junk run's first round is answered, its second is still out when it is withdrawn;
    # the other run's first round is planned meanwhile.
    assert plan_run(withdrawn.pk) == "sample"
    answer_all(task, truth, user)
    driver.sent.clear()
    estimate_task(task.pk)
    assert plan_run(withdrawn.pk) == "sample"
    assert plan_run(kept.pk) == "sample"
    driver.sent.clear()
    return {
        "task": task,
        "truth": truth,
        "user": user,
        "owner": owner,
        "withdrawn": withdrawn,
        "kept": kept,
        "driver": driver,
    }


def pending_items(task) -> set[int]:
    return set(
        VerificationRequest.objects.filter(task=task, state="pending").values_list(
            "item__index", flat=True
        )
    )


def drawn_by(run) -> set[int]:
    return set(Draw.objects.filter(plan_round__run=run).values_list("item__index", flat=True))


def test_withdrawal_cancels_exactly_the_requests_only_the_withdrawn_run_needed(world):
    task, junk, kept = world["task"], world["withdrawn"], world["kept"]
    before = pending_items(task)
    judgments = Judgment.objects.filter(request__task=task, counted=True).count()
    rounds = list(PlanRound.objects.filter(task=task).values_list("pk", flat=True))
    # A reference candidate among the junk run's own pending items: a reference sample needs it.
    own_pending = sorted(i for i in before & drawn_by(junk) if i < KEPT_ITEMS[0])
    assert len(own_pending) >= 2
    candidate = Item.objects.get(task=task, index=own_pending[0])
    ReferenceCandidate.objects.create(task=task, item=candidate, document="doc-1")

    withdraw_run(run=junk, by=world["owner"])
    world["driver"].drain()

    expected_cancelled = set(own_pending) - {own_pending[0]}
    assert (
        set(
            VerificationRequest.objects.filter(task=task, state="cancelled").values_list(
                "item__index", flat=True
            )
        )
        == expected_cancelled
    )
    assert pending_items(task) == before - expected_cancelled
    # Answers stay; the record stays (its rounds and draws); the run is planned no more.
    assert Judgment.objects.filter(request__task=task, counted=True).count() == judgments
    assert list(PlanRound.objects.filter(task=task).values_list("pk", flat=True)) == rounds
    assert plan_run(junk.pk) == "skipped"
    latest = LeaderboardSnapshot.objects.filter(task=task).order_by("-version").first()
    assert [row["run"] for row in latest.rows] == [kept.pk]
    audit_task(task)


def test_the_other_runs_precision_is_unchanged_by_the_withdrawal(world):
    task, junk, kept = world["task"], world["withdrawn"], world["kept"]
    before = estimate_task(task.pk) or LeaderboardSnapshot.objects.filter(task=task).latest(
        "version"
    )
    withdraw_run(run=junk, by=world["owner"])
    after = estimate_task(task.pk)
    assert after is not None and after.labels_version == before.labels_version
    fields = ("value", "low", "high", "labels_used", "method")
    precision = [
        Estimate.objects.filter(snapshot=s, run=kept, metric="precision").values_list(*fields).get()
        for s in (before, after)
    ]
    assert precision[0] == precision[1]
    assert not Estimate.objects.filter(snapshot=after, run=junk).exists()
    assert Estimate.objects.filter(snapshot=before, run=junk).exists()


def test_a_new_run_reopens_the_cancelled_requests_of_its_items(world):
    task, junk = world["task"], world["withdrawn"]
    withdraw_run(run=junk, by=world["owner"])
    world["driver"].drain()
    cancelled = dict(
        VerificationRequest.objects.filter(task=task, state="cancelled").values_list(
            "item__index", "pk"
        )
    )
    assert cancelled
    back = sorted(cancelled)[: max(1, len(cancelled) // 2)]
    # A team with a member who annotates the task: one whose conflicts are recorded.
    newcomer = add_run(task, make_team("N", annotator(task, "n")), [*back, 399], name="newcomer")
    world["driver"].drain()
    assert plan_run(newcomer.pk) in ("sample", "waiting", "estimating")
    states = dict(
        VerificationRequest.objects.filter(pk__in=cancelled.values()).values_list(
            "item__index", "state"
        )
    )
    assert {i: states[i] for i in back} == dict.fromkeys(back, "pending")
    assert all(states[i] == "cancelled" for i in cancelled if i not in back)
    # The newcomer's team never gets the items it predicts.
    conflicted = set(
        RequestConflict.objects.filter(team=newcomer.team).values_list(
            "request__item__index", flat=True
        )
    )
    assert set(back) <= conflicted
    # Asked again by a reference draw, a cancelled request is pending too.
    rest = [cancelled[i] for i in cancelled if i not in back]
    items = list(VerificationRequest.objects.filter(pk__in=rest).values_list("item_id", flat=True))
    with transaction.atomic():  # as a reference draw asks for them
        request_verification(task=task, item_ids=items)
    assert set(VerificationRequest.objects.filter(pk__in=rest).values_list("state", flat=True)) <= {
        "pending"
    }


def test_a_withdrawal_during_planning_rolls_the_round_back(world, monkeypatch):
    task, kept = world["task"], world["kept"]
    answer_all(task, world["truth"], world["user"])
    estimate_task(task.pk)
    kept.refresh_from_db()
    assert kept.state == Run.State.PLANNING
    rounds = PlanRound.objects.filter(run=kept).count()
    from evaluation.kinds.open_world import planning

    loaded_state = planning.load_task_state

    def load_then_withdraw(t):
        loaded = loaded_state(t)
        withdraw_run(run=Run.objects.get(pk=kept.pk), by=kept.team.members.first() or _member(kept))
        return loaded

    monkeypatch.setattr(planning, "load_task_state", load_then_withdraw)
    assert plan_run(kept.pk) == "skipped"
    kept.refresh_from_db()
    assert kept.state == Run.State.WITHDRAWN
    assert PlanRound.objects.filter(run=kept).count() == rounds
    # A stale copy of the run cannot move it on either.
    stale = Run.objects.get(pk=kept.pk)
    stale.state = Run.State.PLANNING
    with pytest.raises(RunWithdrawn):
        transition_run(stale, Run.State.AWAITING_LABELS, "stale")
    assert RunEvent.objects.filter(run=kept).latest("id").state == Run.State.WITHDRAWN


def _member(run):
    user = get_user_model().objects.create_user(f"member-{run.pk}")
    run.team.members.add(user)
    return user


def test_runs_withdrawn_or_failed_before_they_were_accepted_never_enter_the_engine(world):
    task, team = world["task"], world["withdrawn"].team
    unvalidated = Run.objects.create(task=task, team=team, name="late", state=Run.State.RECEIVED)
    withdraw_run(run=unvalidated, by=world["owner"])
    lost = Run.objects.create(task=task, team=team, name="lost", state=Run.State.VALIDATING)
    fail_run(lost, "the received file was lost")
    snapshot = estimate_task(task.pk)  # loads the engine: neither has predictions
    assert snapshot is not None
    assert {row["run"] for row in snapshot.rows} == {world["withdrawn"].pk, world["kept"].pk}


def test_a_baseline_is_listed_without_a_rank_and_the_others_are_ranked_without_it(world):
    task, junk, kept = world["task"], world["withdrawn"], world["kept"]
    organizer = get_user_model().objects.create_user("org")
    task.organizers.add(organizer)
    set_baseline(run=junk, by=organizer, baseline=True)
    snapshot = estimate_task(task.pk)
    rows = {row["run"]: row for row in snapshot.rows}
    assert rows[junk.pk]["baseline"] is True
    assert set(rows[junk.pk]["rank"].values()) == {None}
    assert "baseline" not in rows[kept.pk]
    assert rows[kept.pk]["rank"]["precision"] == {"best": 1, "worst": 1}
    assert snapshot.details["ranking"]["runs_ranked"]["precision"] == 1
    set_baseline(run=junk, by=organizer, baseline=False)
    rows = {row["run"]: row for row in estimate_task(task.pk).rows}
    assert "baseline" not in rows[junk.pk] and rows[junk.pk]["rank"]["precision"] is not None


def test_a_closed_pool_withdrawal_cancels_nothing_and_the_run_leaves_the_board(monkeypatch):
    """Every drawn item of a closed pool is in every run's estimates: no request is cancelled;
    the run leaves the snapshot and is planned no more, the others are ranked without it."""
    driver = PipelineDriver(monkeypatch)
    world = pool_world(target_half_width=0.15)
    driver.drain()
    pending = pending_items(world.task)
    assert pending
    junk, *others = world.runs
    member = _member(junk)
    withdraw_run(run=junk, by=member)
    driver.drain()
    assert pending_items(world.task) == pending
    assert not VerificationRequest.objects.filter(task=world.task, state="cancelled").exists()
    assert plan_run(junk.pk) == "skipped"
    snapshot = LeaderboardSnapshot.objects.filter(task=world.task).order_by("-version").first()
    assert [row["run"] for row in snapshot.rows] == [run.pk for run in others]
    assert snapshot.details["ranking"]["runs_ranked"]["precision"] == len(others)
