"""Teams: making one, single-use expiring invitations stored hashed, joining, the member cap,
leaving; every refusal names the problem and changes nothing; a team's runs keep their history
whoever joins or leaves."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from leaderboard.models import Run, Team, TeamInvitation, key_digest
from leaderboard.selectors import run_for, runs_visible_to, team_runs
from leaderboard.services.teams import (
    TeamError,
    check_invitation,
    create_team,
    invite_to_team,
    join_team,
    leave_team,
)

from pipeline_support import make_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    make = get_user_model().objects.create_user
    return {name: make(name, password="pw") for name in ("ann", "bob", "cat", "dan")}


@pytest.fixture
def team(people):
    return create_team(name="Alpha", members=[people["ann"]])


def refused(code, status, call, **kwargs):
    with pytest.raises(TeamError) as caught:
        call(**kwargs)
    assert (caught.value.code, caught.value.http_status) == (code, status), caught.value.message
    return caught.value


def test_a_taken_team_name_is_refused_with_409(people, team):
    error = refused("team_name_taken", 409, create_team, name=" Alpha ", members=[people["bob"]])
    assert "Alpha" in error.message
    assert Team.objects.count() == 1 and not people["bob"].teams.exists()


def test_an_invitation_is_stored_as_its_digest_only(people, team):
    issued = invite_to_team(team=team, by=people["ann"])
    stored = TeamInvitation.objects.get()
    assert stored.digest == key_digest(issued.key) != issued.key
    assert issued.key not in {str(v) for v in TeamInvitation.objects.values().get().values()}
    assert len(issued.key) >= 40


def test_only_a_member_may_invite(people, team):
    refused("not_a_member", 403, invite_to_team, team=team, by=people["bob"])
    assert not TeamInvitation.objects.exists()


def test_joining_uses_the_invitation_up(people, team):
    key = invite_to_team(team=team, by=people["ann"]).key
    assert join_team(key=key, user=people["bob"]) == team
    assert set(team.members.values_list("username", flat=True)) == {"ann", "bob"}
    invitation = TeamInvitation.objects.get()
    assert invitation.used_by == people["bob"] and invitation.used_at is not None
    refused("invitation_used", 410, join_team, key=key, user=people["cat"])
    assert not team.members.filter(pk=people["cat"].pk).exists()


def test_an_expired_invitation_is_refused(people, team):
    long_ago = timezone.now() - timedelta(days=30)
    key = invite_to_team(team=team, by=people["ann"], now=long_ago).key
    error = refused("invitation_expired", 410, join_team, key=key, user=people["bob"])
    assert "expired" in error.message
    assert TeamInvitation.objects.get().used_at is None
    assert team.members.count() == 1


def test_a_forged_invitation_is_refused(people, team):
    invite_to_team(team=team, by=people["ann"])
    refused("invitation_unknown", 404, join_team, key="forged-key", user=people["bob"])
    refused("invitation_unknown", 404, check_invitation, key="")
    assert team.members.count() == 1


def test_a_member_cannot_use_an_invitation_to_their_own_team(people, team):
    key = invite_to_team(team=team, by=people["ann"]).key
    refused("already_member", 409, join_team, key=key, user=people["ann"])
    assert TeamInvitation.objects.get().used_at is None  # still there for someone else


def test_a_full_team_takes_nobody_more(people, team, settings):
    settings.TEAM_MAX_MEMBERS = 2
    first, second = (invite_to_team(team=team, by=people["ann"]).key for _ in range(2))
    join_team(key=first, user=people["bob"])
    error = refused("team_full", 409, join_team, key=second, user=people["cat"])
    assert "full" in error.message
    assert team.members.count() == 2
    assert TeamInvitation.objects.filter(used_at__isnull=True).count() == 1


def test_leaving_keeps_the_team_and_its_runs_with_their_history(people, team):
    task = make_task(slug="t1")
    key = invite_to_team(team=team, by=people["ann"]).key
    join_team(key=key, user=people["bob"])
    run = Run.objects.create(task=task, team=team, name="bobs-run", submitted_by=people["bob"])
    run.events.create(state=Run.State.RECEIVED, reason="received")
    leave_team(team=team, user=people["bob"])
    assert list(team.members.all()) == [people["ann"]]
    run.refresh_from_db()
    assert run.team == team and run.submitted_by == people["bob"]
    assert list(team_runs(team)) == [run]
    assert run.events.count() == 1
    # The team sees its run; the one who left does not any more.
    assert run_for(run_id=run.pk, user=people["ann"]) is not None
    assert run_for(run_id=run.pk, user=people["bob"]) is None
    assert list(runs_visible_to(task=task, user=people["bob"])) == []
    # The last member leaving leaves the team (and its runs) in place.
    leave_team(team=team, user=people["ann"])
    assert Team.objects.filter(pk=team.pk).exists() and Run.objects.filter(pk=run.pk).exists()


def test_leaving_a_team_one_is_not_in_is_refused(people, team):
    refused("not_a_member", 403, leave_team, team=team, user=people["bob"])
    assert team.members.count() == 1


# -- taking part in a task that needs approval ---------------------------------------------------
def upload():
    import io

    stream = io.BytesIO(b"k1\t0.9\n")
    stream.name = "run.tsv"
    return stream


def test_a_task_that_needs_approval_takes_runs_only_from_approved_teams(people, team):
    from leaderboard.services.runs import SubmissionError, submit_run
    from leaderboard.services.teams import approve_team, request_approval

    task = make_task(slug="gated", team_approval=True)
    with pytest.raises(SubmissionError) as caught:
        submit_run(task=task, team=team, user=people["ann"], upload=upload(), enqueue=False)
    assert (caught.value.code, caught.value.http_status) == ("team_not_approved", 403)
    assert "ask to take part" in caught.value.message
    refused("no_approval_request", 404, approve_team, task=task, team=team, by=people["dan"])
    refused("not_a_member", 403, request_approval, task=task, team=team, by=people["bob"])
    first = request_approval(task=task, team=team, by=people["ann"])
    assert request_approval(task=task, team=team, by=people["ann"]) == first  # idempotent
    with pytest.raises(SubmissionError):
        submit_run(task=task, team=team, user=people["ann"], upload=upload(), enqueue=False)
    assert not Run.objects.exists()
    approved = approve_team(task=task, team=team, by=people["dan"])
    assert approved.approved_by == people["dan"] and approved.approved_at is not None
    assert approve_team(task=task, team=team, by=people["cat"]).approved_by == people["dan"]
    run = submit_run(task=task, team=team, user=people["ann"], upload=upload(), enqueue=False)
    assert run.state == Run.State.RECEIVED


def test_without_approval_every_team_submits(people, team):
    from leaderboard.services.runs import submit_run

    task = make_task(slug="open-to-all")
    run = submit_run(task=task, team=team, user=people["ann"], upload=upload(), enqueue=False)
    assert run.state == Run.State.RECEIVED


# -- links listed and revoked, members removed (issue 29, N11) -----------------------------------
def test_a_member_lists_and_revokes_the_teams_open_links(people, team):
    from leaderboard.selectors import open_team_invitations
    from leaderboard.services.teams import revoke_team_invitation

    key = invite_to_team(team=team, by=people["ann"]).key
    join_team(key=invite_to_team(team=team, by=people["ann"]).key, user=people["bob"])
    (open_link,) = open_team_invitations(team)
    assert open_link.digest == key_digest(key)
    revoke_team_invitation(team=team, invitation=open_link, by=people["bob"])
    revoke_team_invitation(team=team, invitation=open_link, by=people["bob"])  # idempotent
    assert not open_team_invitations(team)
    refused("invitation_revoked", 410, join_team, key=key, user=people["cat"])
    other = create_team(name="Other", members=[people["cat"]])
    foreign = invite_to_team(team=other, by=people["cat"]).invitation
    refused(
        "not_a_member",
        403,
        revoke_team_invitation,
        team=other,
        invitation=foreign,
        by=people["bob"],
    )
    refused(
        "invitation_unknown",
        404,
        revoke_team_invitation,
        team=team,
        invitation=foreign,
        by=people["bob"],
    )
    assert TeamInvitation.objects.get(pk=foreign.pk).revoked_at is None


def test_leaving_revokes_the_links_one_made_and_no_others(people, team):
    join_team(key=invite_to_team(team=team, by=people["ann"]).key, user=people["bob"])
    bobs = invite_to_team(team=team, by=people["bob"]).key
    anns = invite_to_team(team=team, by=people["ann"]).key
    leave_team(team=team, user=people["bob"])
    refused("invitation_revoked", 410, join_team, key=bobs, user=people["cat"])
    assert join_team(key=anns, user=people["cat"]) == team


def test_the_creator_removes_a_member_whose_history_stays(people, team):
    from leaderboard.models import TeamDeparture
    from leaderboard.services.teams import remove_from_team

    assert team.created_by == people["ann"]
    join_team(key=invite_to_team(team=team, by=people["ann"]).key, user=people["bob"])
    join_team(key=invite_to_team(team=team, by=people["ann"]).key, user=people["cat"])
    bobs = invite_to_team(team=team, by=people["bob"]).key
    refused(
        "not_team_creator", 403, remove_from_team, team=team, user=people["cat"], by=people["bob"]
    )
    refused(
        "remove_yourself", 409, remove_from_team, team=team, user=people["ann"], by=people["ann"]
    )
    assert team.members.count() == 3
    remove_from_team(team=team, user=people["bob"], by=people["ann"])
    remove_from_team(team=team, user=people["bob"], by=people["ann"])  # idempotent
    assert set(team.members.values_list("username", flat=True)) == {"ann", "cat"}
    assert list(TeamDeparture.objects.values_list("user__username", flat=True)) == ["bob"]
    refused("invitation_revoked", 410, join_team, key=bobs, user=people["dan"])
    # The creator gone, nobody removes members any more (each may still leave).
    leave_team(team=team, user=people["ann"])
    refused("not_a_member", 403, remove_from_team, team=team, user=people["cat"], by=people["ann"])
