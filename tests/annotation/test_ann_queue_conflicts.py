"""Conflicts of interest and skips: who may never be given an item again."""

import uuid
from contextlib import contextmanager
from datetime import timedelta
from unittest import mock

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from annotation.models import RequestConflict, VerificationRequest
from annotation.selectors import annotator_progress, annotators_left, stuck_items
from annotation.services import (
    answer_assignment,
    ask_again,
    claim_assignments,
    register_run_conflicts,
    request_verification,
    undo_answer,
)
from annotation.services.judgments import number_judgments
from evaluation.services import plan_run
from leaderboard.models import TeamDeparture
from leaderboard.services.teams import leave_team

from pipeline_support import PipelineDriver, add_items, add_run, annotator, make_task, make_team

pytestmark = pytest.mark.django_db


@contextmanager
def freeze_departures(when):
    with mock.patch("leaderboard.services.teams.timezone.now", return_value=when):
        yield


def claim_all(task, user):
    got = claim_assignments(task=task, annotator=user, count=5)
    return {a.request.item.index for a in got.assignments}


def test_members_never_get_items_any_run_of_their_team_predicted(sent_messages):
    task = make_task(judgments_per_item=1, gold_rate=0.0)
    items = add_items(task, 6)
    member, other = annotator(task, "member"), annotator(task, "other")
    team = make_team("A", member)
    add_run(task, team, [0, 1], name="drawn-from")
    add_run(task, team, [2], name="another-run-of-the-team")
    add_run(task, make_team("B"), [3, 4, 5], name="not-theirs")
    request_verification(task=task, item_ids=[it.pk for it in items])
    assert RequestConflict.objects.filter(team=team).count() == 3
    assert not RequestConflict.objects.exclude(team=team).exists()  # B: no member annotates
    assert claim_all(task, member) == {3, 4, 5}
    assert annotator_progress(task=task, annotator=member)["remaining"] == 3
    assert claim_all(task, other) == {0, 1, 2}  # 3, 4, 5 are leased to the member
    assert annotator_progress(task=task, annotator=other)["remaining"] == 6


def test_a_run_arriving_later_adds_its_team_to_pending_requests(sent_messages):
    task = make_task(judgments_per_item=1, gold_rate=0.0)
    items = add_items(task, 4)
    late = annotator(task, "late")
    request_verification(task=task, item_ids=[it.pk for it in items])
    team = make_team("Late", late)
    run = add_run(task, team, [1, 2], name="late-run")
    assert register_run_conflicts(run=run) == 2
    assert register_run_conflicts(run=run) == 2  # idempotent
    assert RequestConflict.objects.filter(team=team).count() == 2
    assert claim_all(task, late) == {0, 3}


def test_a_request_opened_again_covers_the_teams_of_runs_that_came_while_it_was_resolved(
    sent_messages,
):
    task = make_task(judgments_per_item=1, gold_rate=0.0)
    items = add_items(task, 2)
    first, late = annotator(task, "first"), annotator(task, "late")
    request_verification(task=task, item_ids=[it.pk for it in items])
    answers = {}
    for _ in items:
        lease = claim_assignments(task=task, annotator=first).assignments[0]
        answers[lease.request.item_id] = answer_assignment(
            annotator=first, token=lease.token, client_id=uuid.uuid4(), answer="correct"
        )
    # A run predicting both items enters planning while their requests are resolved: nothing
    # pending to register.
    run = add_run(task, make_team("Late", late), [0, 1], name="late-run")
    assert register_run_conflicts(run=run) == 0
    answered_first, answered_last = answers  # in the order they were served
    # A further look on the first item (the planner passes every run's items) ...
    ask_again(
        task=task,
        item_ids=[answered_first],
        seen_version=number_judgments(task.pk),
        run_items=[(run.team_id, run.predictions.arrays()[0])],
    )
    # ... and an undone answer on the last re-open them: still never for the late team.
    undo_answer(annotator=first, client_id=answers[answered_last].record.client_id)
    assert set(
        RequestConflict.objects.filter(team=run.team).values_list("request__item__index", flat=True)
    ) == {0, 1}
    assert claim_assignments(task=task, annotator=late).status == "empty"


def test_planning_registers_the_conflicts_of_a_new_run(monkeypatch):
    PipelineDriver(monkeypatch)  # record, do not send, the messages planning enqueues
    task = make_task(judgments_per_item=1, gold_rate=0.0, target_half_width=0.3)
    add_items(task, 40)
    first = add_run(task, make_team("First"), range(40), name="first")
    plan_run(first.pk)
    queued = set(
        VerificationRequest.objects.filter(task=task).values_list("item__index", flat=True)
    )
    assert queued
    member = annotator(task, "member")
    second = add_run(task, make_team("Second", member), sorted(queued)[:3], name="second")
    plan_run(second.pk)
    conflicted = set(
        RequestConflict.objects.filter(team=second.team).values_list(
            "request__item__index", flat=True
        )
    )
    assert set(sorted(queued)[:3]) <= conflicted
    got = claim_assignments(task=task, annotator=member, count=5)
    assert not {a.request.item.index for a in got.assignments} & conflicted


def test_a_skip_sends_the_item_to_others_never_back_to_the_skipper(sent_messages):
    task = make_task(judgments_per_item=1, gold_rate=0.0)
    items = add_items(task, 1)
    request_verification(task=task, item_ids=[items[0].pk])
    a, b = annotator(task, "a"), annotator(task, "b")
    lease = claim_assignments(task=task, annotator=a).assignments[0]
    out = answer_assignment(
        annotator=a, token=lease.token, client_id=uuid.uuid4(), answer="cannot_tell"
    )
    assert out.created and not out.counted
    assert claim_assignments(task=task, annotator=a).status == "empty"
    req = VerificationRequest.objects.get()
    assert req.state == "pending" and req.judgments_counted == 0
    assert req.judgments_required == 1  # a skip asks for nothing: its slot is free again
    lease = claim_assignments(task=task, annotator=b).assignments[0]
    assert lease.request_id == req.pk
    assert answer_assignment(
        annotator=b, token=lease.token, client_id=uuid.uuid4(), answer="incorrect"
    ).resolved


def test_planning_records_every_predicting_team_from_the_engine_state(sent_messages):
    """The planner passes its in-memory runs instead of re-reading them: same conflicts, for
    the teams that can conflict (with a member who annotates the task), and none for a team
    whose members do not annotate, until one of them joins the task."""
    task = make_task(
        judgments_per_item=1, gold_rate=0.0, target_half_width=0.3, annotators_may_compete=True
    )
    items = add_items(task, 40)
    a = make_team("A", annotator(task, "a"))
    b = make_team("B", annotator(task, "b"))
    c_member = get_user_model().objects.create_user("c")
    c = make_team("C", c_member)
    first = add_run(task, a, range(0, 30), name="a-run")
    add_run(task, b, range(10, 40), name="b-run")
    add_run(task, c, [39], name="c-run")
    assert plan_run(first.pk) == "sample"
    requested = dict(VerificationRequest.objects.filter(task=task).values_list("pk", "item__index"))
    assert requested

    def expected(teams):
        return {
            (pk, team.pk)
            for pk, index in requested.items()
            for team, predicted in teams
            if index in predicted
        }

    def got():
        return set(
            RequestConflict.objects.filter(request__task=task).values_list("request_id", "team_id")
        )

    assert got() == expected(((a, range(0, 30)), (b, range(10, 40))))
    task.annotators.add(c_member)
    assert got() == expected(((a, range(0, 30)), (b, range(10, 40)), (c, [39])))
    assert len(items) == 40


def test_leaving_a_team_does_not_open_its_items(sent_messages):
    """Conflicts follow membership history (N5): a member who left her team, or was removed
    from it, is still never given the items its runs predicted; none of the queue's counts
    (claims, remaining, stuck items, annotators left) treat her as free of the conflict."""
    task = make_task(judgments_per_item=1, gold_rate=0.0)
    items = add_items(task, 4)
    leaver, removed = annotator(task, "leaver"), annotator(task, "removed")
    team = make_team("A", leaver, removed)
    add_run(task, team, [0, 1], name="theirs")
    add_run(task, make_team("B"), [2, 3], name="others")
    request_verification(task=task, item_ids=[it.pk for it in items])
    leave_team(team=team, user=leaver)
    removed.teams.clear()  # the admin's member list, or any other way a membership ends
    assert not team.members.exists()
    assert annotator_progress(task=task, annotator=leaver)["remaining"] == 2
    assert annotators_left(task=task, item_ids=[items[0].pk, items[2].pk]) == {
        items[0].pk: 0,
        items[2].pk: 2,
    }
    assert stuck_items(task=task) == {0, 1}
    assert claim_all(task, leaver) == {2, 3}
    assert claim_all(task, removed) == set()


def test_a_membership_that_ended_before_the_task_existed_is_no_conflict(sent_messages):
    person = get_user_model().objects.create_user("person")
    team = make_team("A", person)
    with freeze_departures(timezone.now() - timedelta(days=30)):
        leave_team(team=team, user=person)
    task = make_task(judgments_per_item=1, gold_rate=0.0)
    items = add_items(task, 2)
    annotator(task, "person")
    add_run(task, team, [0, 1], name="theirs")
    request_verification(task=task, item_ids=[it.pk for it in items])
    assert TeamDeparture.objects.get().user == person
    assert claim_all(task, person) == {0, 1}


def test_joining_a_team_revokes_ones_leases_on_its_items(sent_messages):
    """Joining a team while holding leases on its items: those leases are revoked (an answer
    on one is kept, never counted); leases on other teams' items stay. (On a task where
    annotators may compete: elsewhere an annotator may not join a team with runs on it.)"""
    from leaderboard.services.teams import create_team, invite_to_team, join_team

    task = make_task(judgments_per_item=1, gold_rate=0.0, annotators_may_compete=True)
    items = add_items(task, 2)
    founder, joiner = annotator(task, "founder"), annotator(task, "joiner")
    team = create_team(name="Joined", members=[founder])
    task.annotators.remove(founder)
    add_run(task, team, [0], name="theirs")
    add_run(task, make_team("Other"), [1], name="others")
    request_verification(task=task, item_ids=[it.pk for it in items])
    leases = {
        a.request.item.index: a
        for a in claim_assignments(task=task, annotator=joiner, count=2).assignments
    }
    assert set(leases) == {0, 1}
    join_team(key=invite_to_team(team=team, by=founder).key, user=joiner)
    states = {i: type(a).objects.get(pk=a.pk).state for i, a in leases.items()}
    assert states == {0: "revoked", 1: "active"}
    out = answer_assignment(
        annotator=joiner, token=leases[0].token, client_id=uuid.uuid4(), answer="correct"
    )
    assert not out.counted
    assert VerificationRequest.objects.get(item=items[0]).judgments_counted == 0


def test_an_annotator_who_joins_a_team_after_its_requests_opened_never_gets_its_items(
    sent_messages,
):
    """A team with no annotator has no conflict rows; an annotator who joins it (any way: the
    admin's member list here) records them at once, on requests of every state."""
    task = make_task(judgments_per_item=1, gold_rate=0.0, annotators_may_compete=True)
    items = add_items(task, 4)
    team = make_team("Outsiders")
    add_run(task, team, [0, 1, 2], name="theirs")
    request_verification(task=task, item_ids=[it.pk for it in items])
    VerificationRequest.objects.filter(item=items[2]).update(state="resolved")
    assert not RequestConflict.objects.exists()
    joiner = annotator(task, "joiner")
    team.members.add(joiner)
    conflicted = RequestConflict.objects.filter(team=team)
    assert sorted(conflicted.values_list("request__item__index", flat=True)) == [0, 1, 2]
    assert claim_all(task, joiner) == {3}
    assert annotator_progress(task=task, annotator=joiner)["remaining"] == 1
    # A further look on the resolved item: still never theirs.
    ask_again(task=task, item_ids=[items[2].pk], seen_version=0)
    assert claim_all(task, joiner) == {3}


def test_a_member_who_joins_the_task_as_an_annotator_never_gets_the_teams_items(sent_messages):
    task = make_task(judgments_per_item=1, gold_rate=0.0, annotators_may_compete=True)
    items = add_items(task, 3)
    member = get_user_model().objects.create_user("member")
    team = make_team("A", member)
    add_run(task, team, [1], name="theirs")
    request_verification(task=task, item_ids=[it.pk for it in items])
    assert not RequestConflict.objects.exists()
    member.annotated_tasks.add(task)  # the reverse side of the membership works alike
    assert claim_all(task, member) == {0, 2}
