"""Invitations by mail: each address of a list is mailed a single-use link of its own (to a team,
or to a role on a task), by a worker after the transaction commits, at most once; a list with a
problem is refused whole, each problem naming its address, nothing made or sent; one person may
send only so many in a window."""

from __future__ import annotations

import pytest
from account_support import fullwidth
from sent_mail import link_to

from leaderboard.models import TaskInvitation, TeamInvitation
from leaderboard.services.invitation_mail import (
    InvitationAddressError,
    invite_to_task_by_mail,
    invite_to_team_by_mail,
    parse_addresses,
    send_invitation_mail,
)
from leaderboard.services.invitations import revoke_invitation
from leaderboard.services.sign_in import AttemptsRefused
from leaderboard.services.task_roles import TaskRoleError, accept_task_invitation
from leaderboard.services.teams import TeamError, join_team

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(mail_world):
    return mail_world


def refused_list(call, **kwargs) -> list[str]:
    with pytest.raises(InvitationAddressError) as caught:
        call(**kwargs)
    assert (caught.value.code, caught.value.http_status) == ("invalid_addresses", 400)
    return [problem["message"] for problem in caught.value.problems]


def test_each_address_is_mailed_a_link_of_its_own_that_works_once(
    world, pipeline, committed, mailoutbox, django_user_model
):
    with committed():
        issued = invite_to_team_by_mail(
            team=world.alpha,
            by=world.people["ada"],
            addresses="new1@example.org,\n new2@example.org; new3@example.org",
        )
    assert [one.invitation.sent_to for one in issued] == [
        "new1@example.org",
        "new2@example.org",
        "new3@example.org",
    ]
    assert mailoutbox == []  # a worker mails them
    pipeline.drain()
    assert [m.to for m in mailoutbox] == [[f"new{i}@example.org"] for i in (1, 2, 3)]
    links = [link_to(m.body, "/teams/join/") for m in mailoutbox]
    assert links == [f"http://localhost:8000/teams/join/{one.key}/" for one in issued]
    assert mailoutbox[0].subject == 'ada invites you to join the team "Alpha"'
    assert set(TeamInvitation.objects.values_list("mailed_at", flat=True)) != {None}
    newcomer = django_user_model.objects.create_user("new1")
    assert join_team(key=links[0].rstrip("/").rsplit("/", 1)[1], user=newcomer) == world.alpha
    with pytest.raises(TeamError):
        join_team(key=issued[0].key, user=django_user_model.objects.create_user("new9"))


def test_a_repeated_message_mails_no_second_time(world, pipeline, committed, mailoutbox):
    with committed():
        (issued,) = invite_to_team_by_mail(
            team=world.alpha, by=world.people["ada"], addresses=["new@example.org"]
        )
    args = {"kind": "team", "invitation_id": issued.invitation.pk, "key": issued.key}
    assert send_invitation_mail(**args) == "sent"
    assert send_invitation_mail(**args) == "already mailed"
    assert len(mailoutbox) == 1


def test_a_message_with_another_key_sends_nothing(world, pipeline, committed, mailoutbox):
    with committed():
        (issued,) = invite_to_team_by_mail(
            team=world.alpha, by=world.people["ada"], addresses=["new@example.org"]
        )
    pk = issued.invitation.pk
    assert send_invitation_mail(kind="team", invitation_id=pk, key="forged") == "unknown"
    assert send_invitation_mail(kind="task", invitation_id=pk, key=issued.key) == "unknown"
    assert send_invitation_mail(kind="bogus", invitation_id=pk, key=issued.key) == "unknown"
    assert mailoutbox == []


def test_an_invitation_revoked_before_its_mail_goes_is_not_mailed(
    world, pipeline, committed, mailoutbox
):
    with committed():
        (issued,) = invite_to_task_by_mail(
            task=world.task, role="annotator", by=world.people["olga"], addresses="a@example.org"
        )
    revoke_invitation(issued.invitation)
    pipeline.drain()
    assert mailoutbox == [] and TaskInvitation.objects.get().mailed_at is None


def test_a_task_role_invitation_by_mail_makes_its_user_that_role(
    world, pipeline, committed, mailoutbox, django_user_model
):
    with committed():
        (issued,) = invite_to_task_by_mail(
            task=world.task, role="organizer", by=world.people["olga"], addresses="co@example.org"
        )
    pipeline.drain()
    (message,) = mailoutbox
    assert message.to == ["co@example.org"]
    assert message.subject == "olga invites you to be an organizer of Mail task"
    link = link_to(message.body, "/invitations/")
    key = link.rstrip("/").rsplit("/", 1)[1]
    assert key == issued.key
    co = django_user_model.objects.create_user("co")
    assert accept_task_invitation(key=key, user=co).role == "organizer"
    assert world.task.organizers.filter(pk=co.pk).exists()


# -- refused lists ---------------------------------------------------------------------------------


def test_a_list_with_a_bad_address_is_refused_whole(world, pipeline, committed, mailoutbox):
    with committed():
        problems = refused_list(
            invite_to_team_by_mail,
            team=world.alpha,
            by=world.people["ada"],
            addresses="good@example.org bob@ @example.org not-an-address",
        )
    assert problems == [
        "'bob@' is not an email address",
        "'@example.org' is not an email address",
        "'not-an-address' is not an email address",
    ]
    assert not TeamInvitation.objects.exists() and pipeline.sent == [] and mailoutbox == []


def test_an_address_listed_twice_is_named(world):
    problems = refused_list(
        invite_to_task_by_mail,
        task=world.task,
        role="annotator",
        by=world.people["olga"],
        addresses=["a@example.org", "b@example.org", "A@Example.org"],
    )
    assert problems == ["A@Example.org is listed twice"]
    assert not TaskInvitation.objects.exists()


def test_someone_who_already_holds_the_place_is_named(world):
    problems = refused_list(
        invite_to_team_by_mail,
        team=world.alpha,
        by=world.people["ada"],
        addresses="BEA@example.org, otto@example.org",
    )
    assert problems == ["BEA@example.org is already a member of 'Alpha'"]
    problems = refused_list(
        invite_to_task_by_mail,
        task=world.task,
        role="organizer",
        by=world.people["olga"],
        addresses="olga@example.org",
    )
    assert problems == ["olga@example.org is already an organizer of 'mailtask'"]


def test_an_empty_list_and_a_bad_role_are_refused(world):
    assert refused_list(parse_addresses, addresses=" ,\n ") == []
    with pytest.raises(TaskRoleError) as caught:
        invite_to_task_by_mail(
            task=world.task, role="boss", by=world.people["olga"], addresses="a@example.org"
        )
    assert caught.value.http_status == 400 and "boss" in caught.value.message


def test_only_a_member_invites_to_a_team(world):
    with pytest.raises(TeamError) as caught:
        invite_to_team_by_mail(team=world.alpha, by=world.people["otto"], addresses="x@example.org")
    assert caught.value.code == "not_a_member" and not TeamInvitation.objects.exists()


def test_one_person_sends_only_so_many_in_a_window(world, settings, pipeline, committed):
    settings.INVITATION_MAIL_LIMIT = 3
    ada, bea = world.people["ada"], world.people["bea"]
    with pytest.raises(InvitationAddressError) as caught:  # more than the limit at once
        invite_to_team_by_mail(
            team=world.alpha, by=ada, addresses=["a@x.org", "b@x.org", "c@x.org", "d@x.org"]
        )
    assert "at most 3 may be invited by mail at once" in caught.value.message
    with committed():
        invite_to_team_by_mail(team=world.alpha, by=ada, addresses=["a@x.org", "b@x.org"])
    with pytest.raises(AttemptsRefused) as caught:
        invite_to_team_by_mail(team=world.alpha, by=ada, addresses=["c@x.org", "d@x.org"])
    assert caught.value.http_status == 429 and caught.value.headers["Retry-After"] == "3600"
    assert TeamInvitation.objects.count() == 2
    with committed():
        invite_to_team_by_mail(team=world.alpha, by=ada, addresses=["c@x.org"])  # the last one
        invite_to_team_by_mail(team=world.alpha, by=bea, addresses=["d@x.org"])  # her own count
    assert TeamInvitation.objects.count() == 4


def test_addresses_are_mailed_and_compared_in_their_one_spelling(world):
    spelt = f"New@{fullwidth('EXAMPLE')}.org"
    assert parse_addresses([spelt, "other@example.org"]) == [
        "new@example.org",
        "other@example.org",
    ]
    problems = refused_list(
        invite_to_team_by_mail,
        team=world.alpha,
        by=world.people["ada"],
        addresses=["new@example.org", spelt, f"bea@{fullwidth('example')}.org"],
    )
    assert problems == [
        f"{spelt} is listed twice",
        f"bea@{fullwidth('example')}.org is already a member of 'Alpha'",
    ]
