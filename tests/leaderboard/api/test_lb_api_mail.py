"""The API's mail: invitations sent to a list of addresses (a team's, a task's roles), each its
own link, mailed after commit; a list with a problem refused whole in the one error body, each
problem naming its address; too many for now 429; each person's notification switches. The
schema documents the endpoints."""

from __future__ import annotations

import pytest
from sent_mail import link_to

from leaderboard.models import MailOptOut, TaskInvitation, TeamInvitation

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(mail_world):
    return mail_world


def test_a_team_invites_a_list_of_addresses_by_mail(api, world, pipeline, committed, mailoutbox):
    client = api(world.people["ada"])
    with committed():
        response = client.post(
            f"/api/teams/{world.alpha.pk}/invitations/mail/",
            {"emails": ["new1@example.org", "new2@example.org"]},
            format="json",
        )
    assert response.status_code == 201, response.content
    body = response.json()
    assert [one["email"] for one in body] == ["new1@example.org", "new2@example.org"]
    assert all(one["url"].endswith(f"/teams/join/{one['key']}/") for one in body)
    assert set(TeamInvitation.objects.values_list("sent_to", flat=True)) == {
        "new1@example.org",
        "new2@example.org",
    }
    pipeline.drain()
    assert [m.to for m in mailoutbox] == [["new1@example.org"], ["new2@example.org"]]
    assert link_to(mailoutbox[1].body, "/teams/join/").endswith(f"/{body[1]['key']}/")
    # The link works: its addressee joins by the key the mail carries.
    joined = api(world.people["otto"]).post(
        "/api/teams/join/", {"key": body[0]["key"]}, format="json"
    )
    assert joined.status_code == 200 and "otto" in joined.json()["members"]


def test_a_list_with_problems_is_refused_whole_naming_each(api, world, pipeline, committed):
    client = api(world.people["ada"])
    with committed():
        response = client.post(
            f"/api/teams/{world.alpha.pk}/invitations/mail/",
            {"emails": ["ok@example.org", "bad@", "bea@example.org", "OK@example.org"]},
            format="json",
        )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_addresses"
    assert error["message"].startswith("3 of the 4 addresses cannot be invited")
    assert [p["message"] for p in error["problems"]] == [
        "'bad@' is not an email address",
        "bea@example.org is already a member of 'Alpha'",
        "OK@example.org is listed twice",
    ]
    assert not TeamInvitation.objects.exists() and pipeline.sent == []


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "emails: This field is required."),
        ({"emails": "a@example.org"}, 'emails: Expected a list of items but got type "str".'),
        ({"emails": ["a@example.org"], "cc": ["b@example.org"]}, "cc: unknown field"),
    ],
)
def test_a_malformed_body_is_refused(api, world, body, message):
    response = api(world.people["ada"]).post(
        f"/api/teams/{world.alpha.pk}/invitations/mail/", body, format="json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["problems"][0]["message"].startswith(message)
    assert not TeamInvitation.objects.exists()


def test_only_members_invite_to_a_team_by_mail(api, world):
    for who in ("otto", "olga"):
        response = api(world.people[who]).post(
            f"/api/teams/{world.alpha.pk}/invitations/mail/",
            {"emails": ["x@example.org"]},
            format="json",
        )
        assert response.status_code == 404
    assert api().post(f"/api/teams/{world.alpha.pk}/invitations/mail/").status_code == 401
    assert not TeamInvitation.objects.exists()


def test_too_many_invitations_for_now_are_refused_with_429(api, world, settings, committed):
    settings.INVITATION_MAIL_LIMIT = 2
    client = api(world.people["ada"])
    path = f"/api/teams/{world.alpha.pk}/invitations/mail/"
    with committed():
        assert client.post(path, {"emails": ["a@x.org"]}, format="json").status_code == 201
    response = client.post(path, {"emails": ["b@x.org", "c@x.org"]}, format="json")
    assert response.status_code == 429 and response["Retry-After"] == "3600"
    assert response.json()["error"]["code"] == "throttled"
    assert TeamInvitation.objects.count() == 1


def test_a_tasks_organizer_invites_annotators_by_mail(api, world, pipeline, committed, mailoutbox):
    client = api(world.people["olga"])
    with committed():
        response = client.post(
            f"/api/tasks/{world.task.slug}/invitations/mail/",
            {"role": "annotator", "emails": ["ann1@example.org", "ann2@example.org"]},
            format="json",
        )
    assert response.status_code == 201, response.content
    body = response.json()
    assert [(one["email"], one["role"], one["created_by"]) for one in body] == [
        ("ann1@example.org", "annotator", "olga"),
        ("ann2@example.org", "annotator", "olga"),
    ]
    assert all(one["url"].endswith(f"/invitations/{one['key']}/") for one in body)
    pipeline.drain()
    assert [m.subject for m in mailoutbox] == [
        "olga invites you to be an annotator of Mail task"
    ] * 2
    listed = client.get(f"/api/tasks/{world.task.slug}/invitations/").json()
    assert {(one["id"], one["email"]) for one in listed} == {
        (one["id"], one["email"]) for one in body
    }
    accepted = api(world.people["otto"]).post(
        "/api/invitations/accept/", {"key": body[0]["key"]}, format="json"
    )
    assert accepted.status_code == 200 and accepted.json()["role"] == "annotator"


def test_task_invitations_by_mail_are_for_its_organizers_and_known_roles(api, world):
    path = f"/api/tasks/{world.task.slug}/invitations/mail/"
    body = {"role": "annotator", "emails": ["x@example.org"]}
    assert api(world.people["ada"]).post(path, body, format="json").status_code == 403
    bad_role = api(world.people["olga"]).post(
        path, {"role": "boss", "emails": ["x@example.org"]}, format="json"
    )
    assert bad_role.status_code == 400 and "role" in bad_role.json()["error"]["message"]
    taken = api(world.people["olga"]).post(
        path, {"role": "organizer", "emails": ["OLGA@example.org"]}, format="json"
    )
    assert taken.status_code == 400
    assert taken.json()["error"]["problems"][0]["message"] == (
        "OLGA@example.org is already an organizer of 'mailtask'"
    )
    assert not TaskInvitation.objects.exists()


def test_each_person_switches_their_notifications(api, world):
    client = api(world.people["ada"])
    assert client.get("/api/me/notifications/").json() == {
        "run_finished": True,
        "team_request": True,
    }
    turned = client.patch("/api/me/notifications/", {"run_finished": False}, format="json")
    assert turned.status_code == 200
    assert turned.json() == {"run_finished": False, "team_request": True}
    assert list(MailOptOut.objects.values_list("user__username", "kind")) == [
        ("ada", "run_finished")
    ]
    # Another person's switches are their own.
    assert api(world.people["bea"]).get("/api/me/notifications/").json()["run_finished"]
    back = client.patch("/api/me/notifications/", {"run_finished": True}, format="json")
    assert back.json()["run_finished"] is True and not MailOptOut.objects.exists()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"runs": False}, "runs: unknown field"),
        ({"run_finished": "sometimes"}, "run_finished: Must be a valid boolean."),
    ],
)
def test_a_bad_switch_is_refused_and_changes_nothing(api, world, body, message):
    response = api(world.people["ada"]).patch("/api/me/notifications/", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["problems"][0]["message"].startswith(message)
    assert not MailOptOut.objects.exists()


def test_notification_switches_need_a_signed_in_caller(api, world):
    assert api().get("/api/me/notifications/").status_code == 401
    assert api().patch("/api/me/notifications/", {}, format="json").status_code == 401


def test_the_schema_documents_the_mail_endpoints(api):
    schema = api().get("/api/schema/?format=json").json()
    paths = schema["paths"]
    assert set(paths["/api/me/notifications/"]) >= {"get", "patch"}
    assert "429" in paths["/api/teams/{team_id}/invitations/mail/"]["post"]["responses"]
    assert "429" in paths["/api/tasks/{slug}/invitations/mail/"]["post"]["responses"]
