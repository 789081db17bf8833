"""Two people in real Chromium: each signs up and verifies their address with the link read from
the file mail backend; the first makes a team and an invitation link, the second joins by it."""

from __future__ import annotations

import pytest
from browser_walk import sign_up
from sent_mail import use_file_mail

from leaderboard.models import Team

pytestmark = pytest.mark.django_db(transaction=True)


def test_sign_up_make_a_team_and_invite_someone_who_joins(browser, live_server, settings, tmp_path):
    mail_dir = use_file_mail(settings, tmp_path / "mail")
    alice = browser.new_context().new_page()
    bob = browser.new_context().new_page()
    errors: list[str] = []
    for page in (alice, bob):
        page.set_default_timeout(15_000)
        page.on("pageerror", lambda exc: errors.append(str(exc)))

    sign_up(alice, live_server, mail_dir, "alice")
    alice.goto(f"{live_server.url}/teams/")
    alice.fill("input[name=name]", "Team Alice")
    alice.locator("form [type=submit]", has_text="Make the team").click()
    alice.wait_for_url("**/teams/*/")
    alice.locator("button", has_text="Make an invitation link").click()
    link = alice.locator("code.invitation-link").inner_text()
    assert "/teams/join/" in link

    sign_up(bob, live_server, mail_dir, "bob")
    bob.goto(link)
    bob.locator("button", has_text="Join Team Alice").click()
    bob.wait_for_url("**/teams/*/")
    members = bob.locator("ul.members").inner_text()
    assert "alice" in members and "bob" in members
    assert set(Team.objects.get(name="Team Alice").members.values_list("username", flat=True)) == {
        "alice",
        "bob",
    }
    assert errors == []
