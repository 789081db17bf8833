"""The team pages: make a team, invite by a link shown once, join by it (signed in, or after
signing up when registration is by invitation), leave; refusals show the problem with their
status and change nothing."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from leaderboard.models import Run, Team, TeamInvitation
from leaderboard.services.teams import create_team, invite_to_team

from pipeline_support import make_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    make = get_user_model().objects.create_user
    return {name: make(name, password="pw") for name in ("ann", "bob", "cat")}


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def invitation_link(client, team) -> str:
    page = client.post(f"/teams/{team.pk}/invite/")
    assert page.status_code == 200
    text = page.content.decode()
    start = text.index('<code class="invitation-link">') + len('<code class="invitation-link">')
    return urlsplit(text[start : text.index("</code>", start)]).path


def test_make_a_team_invite_join_and_leave(people):
    ann = signed_in(people["ann"])
    made = ann.post("/teams/", {"name": "Alpha"})
    team = Team.objects.get(name="Alpha")
    assert made.status_code == 302 and made["Location"] == f"/teams/{team.pk}/"
    assert list(team.members.all()) == [people["ann"]]
    link = invitation_link(ann, team)
    assert TeamInvitation.objects.count() == 1
    assert link.rsplit("/", 2)[-2] not in TeamInvitation.objects.get().digest
    # Shown once: the team page does not show it again.
    assert link not in ann.get(f"/teams/{team.pk}/").content.decode()
    bob = signed_in(people["bob"])
    invite_page = bob.get(link)
    assert invite_page.status_code == 200 and "Join Alpha" in invite_page.content.decode()
    joined = bob.post(link)
    assert joined.status_code == 302 and joined["Location"] == f"/teams/{team.pk}/"
    assert set(team.members.values_list("username", flat=True)) == {"ann", "bob"}
    assert "bob" in bob.get(f"/teams/{team.pk}/").content.decode()
    left = bob.post(f"/teams/{team.pk}/leave/")
    assert left.status_code == 302 and left["Location"] == "/teams/"
    assert bob.get(f"/teams/{team.pk}/").status_code == 404


def test_the_second_use_of_a_link_is_refused_and_changes_nothing(people):
    ann = signed_in(people["ann"])
    ann.post("/teams/", {"name": "Alpha"})
    team = Team.objects.get(name="Alpha")
    link = invitation_link(ann, team)
    signed_in(people["bob"]).post(link)
    again = signed_in(people["cat"]).post(link)
    assert again.status_code == 410
    assert "already been used" in again.content.decode()
    assert not team.members.filter(username="cat").exists()


def test_a_duplicate_team_name_is_a_409_naming_it(people):
    create_team(name="Alpha", members=[people["bob"]])
    response = signed_in(people["ann"]).post("/teams/", {"name": "Alpha"})
    assert response.status_code == 409
    assert "the team name &#x27;Alpha&#x27; is already taken" in response.content.decode()
    assert Team.objects.count() == 1 and not people["ann"].teams.exists()


def test_a_full_team_is_a_409_and_nobody_joins(people, settings):
    settings.TEAM_MAX_MEMBERS = 1
    team = create_team(name="Alpha", members=[people["ann"]])
    key = invite_to_team(team=team, by=people["ann"]).key
    response = signed_in(people["bob"]).post(f"/teams/join/{key}/")
    assert response.status_code == 409 and "is full" in response.content.decode()
    assert team.members.count() == 1


def test_the_team_page_lists_the_runs_of_members_past_and_present(people):
    team = create_team(name="Alpha", members=[people["ann"], people["bob"]])
    Run.objects.create(
        task=make_task(slug="t1"), team=team, name="bobs-run", submitted_by=people["bob"]
    )
    signed_in(people["bob"]).post(f"/teams/{team.pk}/leave/")
    text = signed_in(people["ann"]).get(f"/teams/{team.pk}/").content.decode()
    assert "bobs-run" in text and ">bob<" in text


def test_invite_only_registration_opens_sign_up_to_a_valid_invitation(people, settings, mailoutbox):
    settings.REGISTRATION = "invite"
    team = create_team(name="Alpha", members=[people["ann"]])
    key = invite_to_team(team=team, by=people["ann"]).key
    visitor = Client()
    assert visitor.get("/accounts/signup/").status_code == 403
    page = visitor.get(f"/teams/join/{key}/")
    assert page.status_code == 200 and "Sign up" in page.content.decode()
    assert visitor.get("/accounts/signup/").status_code == 200
    assert key not in str(dict(visitor.session))  # the session holds the digest, not the key
    signed_up = visitor.post(
        "/accounts/signup/",
        {
            "email": "newbie@example.org",
            "username": "newbie",
            "password1": "a long new secret 42",
            "password2": "a long new secret 42",
        },
    )
    assert signed_up.status_code == 302
    assert get_user_model().objects.filter(username="newbie").exists()
    # A used or expired invitation opens nothing.
    signed_in(people["bob"]).post(f"/teams/join/{key}/")
    late = Client()
    assert late.get(f"/teams/join/{key}/").status_code == 410
    assert late.get("/accounts/signup/").status_code == 403


def test_a_team_asks_to_take_part_and_the_organizer_approves_it(people):
    from leaderboard.models import TeamApproval

    task = make_task(slug="gated", team_approval=True)
    task.organizers.add(people["cat"])
    team = create_team(name="Alpha", members=[people["ann"]])
    ann, cat = signed_in(people["ann"]), signed_in(people["cat"])
    page = ann.get("/tasks/gated/submit/").content.decode()
    assert "Ask to take part" in page
    assert ann.post(f"/tasks/gated/teams/{team.pk}/request/").status_code == 302
    assert "waiting for an organizer" in ann.get("/tasks/gated/submit/").content.decode()
    organize = cat.get("/tasks/gated/organize/").content.decode()
    assert "Alpha" in organize and "Approve" in organize
    assert ann.post(f"/tasks/gated/teams/{team.pk}/approve/").status_code == 403
    assert TeamApproval.objects.get().approved_at is None
    assert cat.post(f"/tasks/gated/teams/{team.pk}/approve/").status_code == 302
    assert TeamApproval.objects.get().approved_by == people["cat"]
    assert "approved" in ann.get("/tasks/gated/submit/").content.decode()


def test_a_lookalike_team_name_is_refused_on_the_page_with_the_name_kept(people):
    create_team(name="Team Alpha", members=[people["ann"]])
    page = signed_in(people["bob"]).post("/teams/", {"name": "TEAM \u0410LPHA"})
    assert page.status_code == 409
    text = page.content.decode()
    assert "looks like the name of team &#x27;Team Alpha&#x27;" in text
    assert 'value="TEAM \u0410LPHA"' in text
    assert Team.objects.count() == 1


def test_the_team_page_lists_links_to_revoke_and_lets_the_creator_remove_members(people):
    """N11 on the page: open links listed (who made each, never the key) with a revoke button
    for every member; a remove button beside each other member, for the team's creator only."""
    from leaderboard.services.teams import join_team

    team = create_team(name="Alpha", members=[people["ann"]])
    join_team(key=invite_to_team(team=team, by=people["ann"]).key, user=people["bob"])
    open_key = invite_to_team(team=team, by=people["bob"]).key
    link = TeamInvitation.objects.get(used_at=None)
    ann, bob = signed_in(people["ann"]), signed_in(people["bob"])
    page = bob.get(f"/teams/{team.pk}/").content.decode()
    assert f"/teams/{team.pk}/invitations/{link.pk}/revoke/" in page and open_key not in page
    assert "/remove/" not in page  # bob did not make the team
    creator_page = ann.get(f"/teams/{team.pk}/").content.decode()
    assert f"/teams/{team.pk}/members/{people['bob'].pk}/remove/" in creator_page
    assert f"/teams/{team.pk}/members/{people['ann'].pk}/remove/" not in creator_page
    refused = bob.post(f"/teams/{team.pk}/members/{people['ann'].pk}/remove/")
    assert refused.status_code == 403 and "only the member who made" in refused.content.decode()
    revoked = ann.post(f"/teams/{team.pk}/invitations/{link.pk}/revoke/")
    assert revoked.status_code == 302 and revoked["Location"] == f"/teams/{team.pk}/"
    assert TeamInvitation.objects.get(pk=link.pk).revoked_at is not None
    removed = ann.post(f"/teams/{team.pk}/members/{people['bob'].pk}/remove/")
    assert removed.status_code == 302
    assert list(team.members.all()) == [people["ann"]]
    assert bob.get(f"/teams/{team.pk}/").status_code == 404
