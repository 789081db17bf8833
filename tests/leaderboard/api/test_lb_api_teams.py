"""The teams API: make a team, invite (the key once), join, leave; errors in the one error body,
changing nothing; the schema documents the endpoints."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from leaderboard.models import Team, TeamInvitation, key_digest

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    make = get_user_model().objects.create_user
    return {name: make(name, password="pw") for name in ("ann", "bob", "cat")}


def test_make_invite_join_and_leave(api, people):
    ann, bob = api(people["ann"]), api(people["bob"])
    made = ann.post("/api/teams/", {"name": "Alpha"}, format="json")
    assert made.status_code == 201, made.content
    team = made.json()
    assert team["name"] == "Alpha" and team["members"] == ["ann"]
    invitation = ann.post(f"/api/teams/{team['id']}/invitations/").json()
    assert TeamInvitation.objects.get().digest == key_digest(invitation["key"])
    assert invitation["url"].endswith(f"/teams/join/{invitation['key']}/")
    joined = bob.post("/api/teams/join/", {"key": invitation["key"]}, format="json")
    assert joined.status_code == 200 and joined.json()["members"] == ["ann", "bob"]
    assert [t["name"] for t in bob.get("/api/teams/").json()] == ["Alpha"]
    assert "Alpha" in bob.get("/api/me/").json()["teams"]
    assert bob.post(f"/api/teams/{team['id']}/leave/").status_code == 204
    assert bob.get(f"/api/teams/{team['id']}/").status_code == 404
    assert Team.objects.get(pk=team["id"]).members.count() == 1


@pytest.mark.parametrize(
    ("state", "status", "code"),
    [
        ("used", 410, "invitation_used"),
        ("expired", 410, "invitation_expired"),
        ("forged", 404, "invitation_unknown"),
    ],
)
def test_a_bad_invitation_is_refused_in_the_error_body(api, people, state, status, code):
    from datetime import timedelta

    from django.utils import timezone

    from leaderboard.services.teams import create_team, invite_to_team, join_team

    team = create_team(name="Alpha", members=[people["ann"]])
    if state == "expired":
        key = invite_to_team(
            team=team, by=people["ann"], now=timezone.now() - timedelta(days=9)
        ).key
    elif state == "used":
        key = invite_to_team(team=team, by=people["ann"]).key
        join_team(key=key, user=people["cat"])
    else:
        key = "forged"
    members = team.members.count()
    response = api(people["bob"]).post("/api/teams/join/", {"key": key}, format="json")
    assert response.status_code == status
    error = response.json()["error"]
    assert error["code"] == code and error["message"]
    assert team.members.count() == members and not people["bob"].teams.exists()


def test_a_taken_name_is_a_409(api, people):
    api(people["ann"]).post("/api/teams/", {"name": "Alpha"}, format="json")
    response = api(people["bob"]).post("/api/teams/", {"name": "Alpha"}, format="json")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "team_name_taken"
    assert Team.objects.count() == 1


def test_the_schema_documents_the_team_endpoints(api):
    schema = api().get("/api/schema/?format=json").json()
    for path in ("/api/teams/", "/api/teams/join/", "/api/teams/{team_id}/invitations/"):
        assert path in schema["paths"], path
    join = schema["paths"]["/api/teams/join/"]["post"]["responses"]
    assert {"200", "404", "409", "410"} <= set(join)


def test_a_team_body_with_an_unknown_field_makes_no_team(api, people):
    response = api(people["ann"]).post(
        "/api/teams/", {"name": "Alpha", "members": ["bob"]}, format="json"
    )
    assert response.status_code == 400
    assert "members: unknown field" in response.json()["error"]["message"]
    assert not Team.objects.exists()


def test_asking_to_take_part_and_approving_through_the_api(api, people):
    from leaderboard.services.tasks import create_task
    from leaderboard.services.teams import create_team

    from pipeline_support import open_unchecked

    open_unchecked(
        create_task(slug="gated", title="Gated", organizers=[people["cat"]], team_approval=True)
    )
    team = create_team(name="Alpha", members=[people["ann"]])
    asked = api(people["ann"]).post(f"/api/tasks/gated/teams/{team.pk}/request/")
    assert asked.status_code == 200 and asked.json()["approved"] is False
    listed = api(people["cat"]).get("/api/tasks/gated/teams/").json()
    assert [(a["team"], a["approved"]) for a in listed] == [("Alpha", False)]
    approved = api(people["cat"]).post(f"/api/tasks/gated/teams/{team.pk}/approve/")
    assert approved.status_code == 200 and approved.json()["approved"] is True
    assert api(people["bob"]).get("/api/tasks/gated/teams/").status_code == 403


@pytest.mark.parametrize(
    "name", ["TEAM  ALPHA", "Team\u00a0Alpha", "Te\u0430m Alpha", "Team \u200bAlpha "]
)
def test_a_lookalike_team_name_is_a_409_naming_the_team(api, people, name):
    """N10: case, spacing, invisible characters and another script's letters are no new name."""
    ann, bob = api(people["ann"]), api(people["bob"])
    assert ann.post("/api/teams/", {"name": "Team Alpha"}, format="json").status_code == 201
    refused = bob.post("/api/teams/", {"name": name}, format="json")
    assert refused.status_code == 409
    error = refused.json()["error"]
    assert error["code"] == "team_name_taken" and "'Team Alpha'" in error["message"]
    assert Team.objects.count() == 1


def test_a_team_name_with_a_newline_or_an_override_is_a_400(api, people):
    ann = api(people["ann"])
    for name in ("Alpha\nBeta", "Alpha \u202eateB"):
        refused = ann.post("/api/teams/", {"name": name}, format="json")
        assert (
            refused.status_code == 400 and "may not contain" in refused.json()["error"]["message"]
        )
    assert not Team.objects.exists()


def test_links_are_listed_without_keys_and_revoked_by_members(api, people):
    """N11: a team's open links, listed to its members (never the key) and revoked by any."""
    ann, bob = api(people["ann"]), api(people["bob"])
    team = ann.post("/api/teams/", {"name": "Alpha"}, format="json").json()
    base = f"/api/teams/{team['id']}/invitations/"
    made = ann.post(base).json()
    bob.post("/api/teams/join/", {"key": ann.post(base).json()["key"]}, format="json")
    listed = bob.get(base)
    assert listed.status_code == 200
    (link,) = listed.json()
    assert set(link) == {"id", "created_by", "created_at", "expires_at", "email"}
    assert link["created_by"] == "ann" and made["key"] not in listed.content.decode()
    assert bob.delete(f"{base}{link['id']}/").status_code == 204
    assert bob.delete(f"{base}{link['id']}/").status_code == 204  # idempotent
    assert bob.get(base).json() == []
    cat = api(people["cat"])
    refused = cat.post("/api/teams/join/", {"key": made["key"]}, format="json")
    assert refused.status_code == 410 and refused.json()["error"]["code"] == "invitation_revoked"
    assert cat.get(base).status_code == cat.delete(f"{base}{link['id']}/").status_code == 404


def test_the_creator_removes_a_member_and_the_members_links_go_with_them(api, people):
    ann, bob, cat = (api(people[name]) for name in ("ann", "bob", "cat"))
    team = ann.post("/api/teams/", {"name": "Alpha"}, format="json").json()
    assert team["created_by"] == "ann"
    base = f"/api/teams/{team['id']}"
    for client in (bob, cat):
        key = ann.post(f"{base}/invitations/").json()["key"]
        client.post("/api/teams/join/", {"key": key}, format="json")
    bobs_link = bob.post(f"{base}/invitations/").json()["key"]
    shown = bob.get(f"{base}/").json()
    ids = dict(zip(shown["members"], shown["member_ids"], strict=True))
    refused = bob.delete(f"{base}/members/{ids['cat']}/")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "not_team_creator"
    mine = ann.delete(f"{base}/members/{ids['ann']}/")
    assert mine.status_code == 409 and mine.json()["error"]["code"] == "remove_yourself"
    assert ann.delete(f"{base}/members/{ids['bob']}/").status_code == 204
    assert ann.delete(f"{base}/members/{ids['bob']}/").status_code == 404  # no longer a member
    assert bob.get(f"{base}/").status_code == 404
    assert ann.get(f"{base}/").json()["members"] == ["ann", "cat"]
    gone = api(get_user_model().objects.create_user("dan"))
    used = gone.post("/api/teams/join/", {"key": bobs_link}, format="json")
    assert used.status_code == 410 and used.json()["error"]["code"] == "invitation_revoked"
