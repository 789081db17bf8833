"""A task's people: invitations to annotate or co-organize it (single-use, expiring, revocable,
stored hashed, through the same machinery as a team's), removing annotators and organizers,
and the rule that a person may not both annotate a task and be a member of a team with runs on
it (accepting an annotator invitation, joining a team, submitting a run), unless the task
allows it. Every refusal names the problem and changes nothing."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from leaderboard.models import Run, TaskInvitation, TeamInvitation, key_digest
from leaderboard.selectors import annotator_conflicts, open_task_invitations
from leaderboard.services.invitations import InvitationError
from leaderboard.services.runs import SubmissionError, submit_run
from leaderboard.services.task_roles import (
    TaskRoleError,
    accept_task_invitation,
    check_task_invitation,
    invite_to_task,
    remove_annotator,
    remove_from_task,
    remove_organizer,
    revoke_task_invitation,
)
from leaderboard.services.teams import TeamError, create_team, invite_to_team, join_team

from pipeline_support import make_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    make = get_user_model().objects.create_user
    return {name: make(name, password="pw") for name in ("org", "ann", "bob", "cat")}


@pytest.fixture
def task(people):
    task = make_task(slug="t1")
    task.organizers.add(people["org"])
    return task


def refused(code, status, call, error=TaskRoleError, **kwargs):
    with pytest.raises(error) as caught:
        call(**kwargs)
    assert (caught.value.code, caught.value.http_status) == (code, status), caught.value.message
    return caught.value


def invite(task, people, role="annotator", **kwargs):
    return invite_to_task(task=task, role=role, by=people["org"], **kwargs).key


def upload():
    stream = io.BytesIO(b"k1\t0.9\n")
    stream.name = "run.tsv"
    return stream


def give_runs(task, team, user):
    return Run.objects.create(task=task, team=team, name=f"{team.name}-run", submitted_by=user)


# -- issuing, checking, accepting -----------------------------------------------------------------
def test_an_invitation_is_stored_as_its_digest_only(people, task):
    key = invite(task, people)
    stored = TaskInvitation.objects.get()
    assert stored.digest == key_digest(key) != key and len(key) >= 40
    assert key not in {str(v) for v in TaskInvitation.objects.values().get().values()}
    assert (stored.task, stored.role, stored.created_by) == (task, "annotator", people["org"])


@pytest.mark.parametrize(
    ("role", "holders"), [("annotator", "annotators"), ("organizer", "organizers")]
)
def test_accepting_grants_the_role_and_uses_the_invitation_up(people, task, role, holders):
    key = invite(task, people, role)
    invitation = accept_task_invitation(key=key, user=people["ann"])
    assert (invitation.task, invitation.role) == (task, role)
    assert getattr(task, holders).filter(pk=people["ann"].pk).exists()
    other = "organizers" if holders == "annotators" else "annotators"
    assert not getattr(task, other).filter(pk=people["ann"].pk).exists()
    stored = TaskInvitation.objects.get()
    assert stored.used_by == people["ann"] and stored.used_at is not None
    refused("invitation_used", 410, accept_task_invitation, key=key, user=people["bob"])
    assert not getattr(task, holders).filter(pk=people["bob"].pk).exists()


def test_an_expired_invitation_is_refused(people, task):
    key = invite(task, people, now=timezone.now() - timedelta(days=30))
    error = refused("invitation_expired", 410, accept_task_invitation, key=key, user=people["ann"])
    assert "expired" in error.message and "organizers" in error.message
    assert not task.annotators.exists() and TaskInvitation.objects.get().used_at is None


def test_a_revoked_invitation_is_refused_and_leaves_the_open_list(people, task):
    key = invite(task, people)
    kept = invite(task, people, "organizer")
    invitation = TaskInvitation.objects.get(digest=key_digest(key))
    assert set(open_task_invitations(task)) == set(TaskInvitation.objects.all())
    revoke_task_invitation(invitation=invitation)
    revoke_task_invitation(invitation=invitation)  # idempotent
    refused("invitation_revoked", 410, accept_task_invitation, key=key, user=people["ann"])
    assert not task.annotators.exists()
    assert [i.digest for i in open_task_invitations(task)] == [key_digest(kept)]


def test_a_used_invitation_cannot_be_revoked(people, task):
    key = invite(task, people)
    accept_task_invitation(key=key, user=people["ann"])
    invitation = TaskInvitation.objects.get()
    revoke_task_invitation(invitation=invitation)
    invitation.refresh_from_db()
    assert invitation.revoked_at is None and invitation.used_at is not None


def test_a_forged_key_or_a_team_key_is_refused(people, task):
    invite(task, people)
    refused("invitation_unknown", 404, accept_task_invitation, key="forged", user=people["ann"])
    # A key made for a team is not a task invitation (nor the other way round).
    team = create_team(name="Alpha", members=[people["bob"]])
    team_key = invite_to_team(team=team, by=people["bob"]).key
    refused("invitation_unknown", 404, accept_task_invitation, key=team_key, user=people["ann"])
    task_key = invite(task, people)
    refused("invitation_unknown", 404, join_team, error=TeamError, key=task_key, user=people["ann"])
    assert not task.annotators.exists() and team.members.count() == 1


def test_an_invitation_grants_its_own_task_only(people, task):
    other = make_task(slug="t2")
    accept_task_invitation(key=invite(task, people), user=people["ann"])
    assert list(people["ann"].annotated_tasks.all()) == [task]
    assert not other.annotators.exists()


def test_a_role_already_held_is_refused_and_the_link_kept(people, task):
    task.annotators.add(people["ann"])
    key = invite(task, people)
    refused("already_annotator", 409, accept_task_invitation, key=key, user=people["ann"])
    refused(
        "already_organizer",
        409,
        accept_task_invitation,
        key=invite(task, people, "organizer"),
        user=people["org"],
    )
    assert TaskInvitation.objects.filter(used_at__isnull=True).count() == 2


def test_an_unknown_role_is_refused(people, task):
    refused("invalid", 400, invite_to_task, task=task, role="admin", by=people["org"])
    assert not TaskInvitation.objects.exists()


def test_team_and_task_refusals_are_one_family():
    assert issubclass(TaskRoleError, InvitationError) and issubclass(TeamError, InvitationError)
    assert TeamInvitation.revoked_at.field.null and TaskInvitation.revoked_at.field.null


def test_a_revoked_team_invitation_is_refused(people):
    from leaderboard.services.invitations import revoke_invitation

    team = create_team(name="Alpha", members=[people["bob"]])
    key = invite_to_team(team=team, by=people["bob"]).key
    revoke_invitation(TeamInvitation.objects.get())
    refused("invitation_revoked", 410, join_team, error=TeamError, key=key, user=people["ann"])
    assert team.members.count() == 1


# -- removing people ----------------------------------------------------------------------------
def test_removing_an_annotator(people, task):
    task.annotators.add(people["ann"], people["bob"])
    remove_annotator(task=task, user=people["ann"])
    assert list(task.annotators.all()) == [people["bob"]]


def test_the_last_organizer_cannot_be_removed(people, task):
    error = refused("last_organizer", 409, remove_organizer, task=task, user=people["org"])
    assert "last organizer" in error.message
    assert list(task.organizers.all()) == [people["org"]]
    task.organizers.add(people["cat"])
    remove_organizer(task=task, user=people["org"])
    assert list(task.organizers.all()) == [people["cat"]]


def test_removing_by_role(people, task):
    task.annotators.add(people["ann"])
    task.organizers.add(people["cat"])
    remove_from_task(task=task, user=people["ann"], role="annotator")
    assert not task.annotators.exists() and task.organizers.count() == 2
    remove_from_task(task=task, user=people["cat"], role="organizer")
    assert list(task.organizers.all()) == [people["org"]]
    refused(
        "last_organizer", 409, remove_from_task, task=task, user=people["org"], role="organizer"
    )
    refused("invalid", 400, remove_from_task, task=task, user=people["org"], role="admin")
    assert list(task.organizers.all()) == [people["org"]]


# -- the annotator-vs-team-member rule, in its three places ------------------------------------
@pytest.fixture
def competing(people, task):
    """Team Alpha (bob) has a run on the task."""
    team = create_team(name="Alpha", members=[people["bob"]])
    give_runs(task, team, people["bob"])
    return team


def test_a_member_of_a_team_with_runs_may_not_accept_an_annotator_invitation(
    people, task, competing
):
    key = invite(task, people)
    error = refused("annotator_competes", 409, accept_task_invitation, key=key, user=people["bob"])
    assert "'Alpha'" in error.message
    refused("annotator_competes", 409, check_task_invitation, key=key, user=people["bob"])
    assert not task.annotators.exists() and TaskInvitation.objects.get().used_at is None
    # An organizer invitation is not annotating: no conflict.
    accept_task_invitation(key=invite(task, people, "organizer"), user=people["bob"])
    # A team with runs on another task only: no conflict either.
    other = make_task(slug="t2")
    give_runs(other, create_team(name="Beta", members=[people["cat"]]), people["cat"])
    accept_task_invitation(key=invite(task, people), user=people["cat"])


def test_an_annotator_may_not_join_a_team_with_runs_on_the_task(people, task, competing):
    task.annotators.add(people["ann"])
    key = invite_to_team(team=competing, by=people["bob"]).key
    error = refused(
        "annotator_competes", 409, join_team, error=TeamError, key=key, user=people["ann"]
    )
    assert "'t1'" in error.message
    assert competing.members.count() == 1 and TeamInvitation.objects.get().used_at is None
    # Someone who annotates nothing joins.
    join_team(key=key, user=people["cat"])


def test_a_team_with_an_annotator_may_not_submit(people, task):
    team = create_team(name="Alpha", members=[people["bob"], people["ann"]])
    task.annotators.add(people["ann"])
    with pytest.raises(SubmissionError) as caught:
        submit_run(task=task, team=team, user=people["bob"], upload=upload(), enqueue=False)
    assert (caught.value.code, caught.value.http_status) == ("annotator_in_team", 409)
    assert "'Alpha'" in caught.value.message and "ann" in caught.value.message
    assert not Run.objects.exists()
    # Once the annotator is removed from the task, the team submits.
    remove_annotator(task=task, user=people["ann"])
    assert submit_run(task=task, team=team, user=people["bob"], upload=upload(), enqueue=False)


def test_the_organizer_may_allow_annotators_to_compete(people, task, competing):
    from leaderboard.services.tasks import update_task

    update_task(task=task, annotators_may_compete=True)
    task.refresh_from_db()
    accept_task_invitation(key=invite(task, people), user=people["bob"])  # place 1
    task.annotators.add(people["ann"])
    join_team(key=invite_to_team(team=competing, by=people["bob"]).key, user=people["ann"])  # 2
    run = submit_run(task=task, team=competing, user=people["bob"], upload=upload(), enqueue=False)
    assert run.state == Run.State.RECEIVED  # place 3
    assert annotator_conflicts(task=task, team=competing) == []


def test_the_conflicts_name_task_team_and_person(people, task, competing):
    task.annotators.add(people["ann"])
    competing.members.add(people["ann"])
    (conflict,) = annotator_conflicts(task=task, team=competing)
    assert (conflict.task, conflict.team, conflict.user) == (task, competing, people["ann"])
    assert annotator_conflicts(task=task, user=people["cat"]) == []
    assert [c.team for c in annotator_conflicts(task=task, user=people["bob"])] == [competing]
    assert [c.task for c in annotator_conflicts(team=competing, user=people["ann"])] == [task]
