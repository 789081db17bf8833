"""The pages' mail: the mail settings page (each kind of notification on or off), invitations by
mail from a team's page and from a task's own page (each address its link, shown once; a refused
list shown with each problem, the addresses kept as typed), and the organize page's form."""

from __future__ import annotations

import pytest

from leaderboard.models import MailOptOut, TaskInvitation, TeamInvitation

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(mail_world):
    return mail_world


def signed_in(client, user):
    client.force_login(user)
    return client


# -- mail settings -------------------------------------------------------------------------------


def test_the_mail_settings_page_shows_each_kind_on_until_turned_off(client, world):
    page = signed_in(client, world.people["ada"]).get("/accounts/notifications/")
    text = page.content.decode()
    assert page.status_code == 200
    assert 'name="on" value="run_finished" id="mail-run_finished" checked' in text
    assert 'name="on" value="team_request" id="mail-team_request" checked' in text
    assert "ada@example.org" in text


def test_unticking_a_kind_turns_it_off(client, world):
    client = signed_in(client, world.people["ada"])
    response = client.post("/accounts/notifications/", {"on": ["team_request"]}, follow=True)
    assert response.redirect_chain == [("/accounts/notifications/", 302)]
    text = response.content.decode()
    assert (
        "Mail settings saved: off when a run of one of your teams is scored, partial or rejected."
        in text
    )
    assert 'value="run_finished" id="mail-run_finished">' in text  # unticked now
    assert list(MailOptOut.objects.values_list("kind", flat=True)) == ["run_finished"]
    client.post("/accounts/notifications/", {"on": ["team_request", "run_finished"]})
    assert not MailOptOut.objects.exists()


def test_a_person_without_an_address_is_told_to_add_one(client, world):
    text = signed_in(client, world.people["nomail"]).get("/accounts/notifications/")
    assert "You have no address" in text.content.decode()


# -- a team's invitations by mail ------------------------------------------------------------------


def test_a_team_page_invites_by_mail_and_shows_each_link_once(
    client, world, pipeline, committed, mailoutbox
):
    client = signed_in(client, world.people["ada"])
    page = client.get(f"/teams/{world.alpha.pk}/").content.decode()
    assert f'action="/teams/{world.alpha.pk}/invite/mail/#invite-by-mail"' in page
    with committed():
        response = client.post(
            f"/teams/{world.alpha.pk}/invite/mail/",
            {"addresses": "new1@example.org\nnew2@example.org"},
        )
    assert response.status_code == 200
    text = response.content.decode()
    assert "Invitations sent to 2 addresses" in text
    for invitation in TeamInvitation.objects.all():
        assert f"<td>{invitation.sent_to}</td>" in text
    pipeline.drain()
    assert [m.to for m in mailoutbox] == [["new1@example.org"], ["new2@example.org"]]
    for message in mailoutbox:  # the link on the page is the one in the mail
        link = next(line for line in message.body.splitlines() if "/teams/join/" in line)
        assert link.removeprefix("http://localhost:8000") in text


def test_a_refused_list_is_shown_with_each_problem_and_kept(client, world, pipeline, committed):
    client = signed_in(client, world.people["ada"])
    typed = "good@example.org, bad@, bea@example.org"
    with committed():
        response = client.post(f"/teams/{world.alpha.pk}/invite/mail/", {"addresses": typed})
    assert response.status_code == 400
    text = response.content.decode()
    assert 'id="invite-mail-error"' in text and "No invitation was sent" in text
    assert "&#x27;bad@&#x27; is not an email address" in text
    assert "bea@example.org is already a member of &#x27;Alpha&#x27;" in text
    assert f">{typed}</textarea>" in text
    assert '<a href="#id_addresses">' in text
    assert not TeamInvitation.objects.exists() and pipeline.sent == []


def test_a_team_page_refuses_too_many_invitations_with_429(client, world, settings, committed):
    settings.INVITATION_MAIL_LIMIT = 1
    client = signed_in(client, world.people["ada"])
    with committed():
        client.post(f"/teams/{world.alpha.pk}/invite/mail/", {"addresses": "a@x.org"})
    response = client.post(f"/teams/{world.alpha.pk}/invite/mail/", {"addresses": "b@x.org"})
    assert response.status_code == 429 and response["Retry-After"] == "3600"
    assert "as many invitations by mail as you may for now" in response.content.decode()


def test_only_members_reach_a_teams_invitations_by_mail(client, world):
    client = signed_in(client, world.people["otto"])
    response = client.post(f"/teams/{world.alpha.pk}/invite/mail/", {"addresses": "x@x.org"})
    assert response.status_code == 404 and not TeamInvitation.objects.exists()


# -- a task's invitations by mail ------------------------------------------------------------------


def test_the_organize_page_has_the_form_and_lists_where_invitations_went(client, world, committed):
    client = signed_in(client, world.people["olga"])
    page = client.get(f"/tasks/{world.task.slug}/organize/people/").content.decode()
    assert f'action="/tasks/{world.task.slug}/organize/invite/mail/"' in page
    assert '<select name="role" id="id_mail_role">' in page
    with committed():
        response = client.post(
            f"/tasks/{world.task.slug}/organize/invite/mail/",
            {"role": "organizer", "addresses": "co@example.org"},
        )
    assert response.status_code == 200
    assert "Invitation sent to 1 address," in response.content.decode()
    assert TaskInvitation.objects.get().role == "organizer"
    page = client.get(f"/tasks/{world.task.slug}/organize/people/").content.decode()
    assert "<td>co@example.org</td>" in page  # the open invitations say where each went


def test_a_refused_task_list_keeps_the_role_and_addresses(client, world):
    client = signed_in(client, world.people["olga"])
    response = client.post(
        f"/tasks/{world.task.slug}/organize/invite/mail/",
        {"role": "organizer", "addresses": "olga@example.org x@"},
    )
    assert response.status_code == 400
    text = response.content.decode()
    assert "olga@example.org is already an organizer of &#x27;mailtask&#x27;" in text
    assert '<option value="organizer" selected>' in text
    assert ">olga@example.org x@</textarea>" in text
    assert not TaskInvitation.objects.exists()


def test_a_task_invitation_by_mail_is_for_its_organizers(client, world):
    client = signed_in(client, world.people["ada"])
    response = client.post(
        f"/tasks/{world.task.slug}/organize/invite/mail/",
        {"role": "annotator", "addresses": "x@example.org"},
    )
    assert response.status_code == 403 and not TaskInvitation.objects.exists()
