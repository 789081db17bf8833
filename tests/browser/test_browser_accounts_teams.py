"""Two people in real Chromium: each signs up and verifies their address with the link read from
the file mail backend; the first makes a team and an invitation link, the second joins by it."""

from __future__ import annotations

import pytest
from sent_mail import link_to, mail_files, use_file_mail

from leaderboard.models import Team

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "a long browser secret 42"


def sign_up_and_verify(page, live_server, mail_dir, username: str) -> None:
    before = len(mail_files(mail_dir))
    page.goto(f"{live_server.url}/accounts/signup/")
    page.fill("input[name=email]", f"{username}@example.org")
    page.fill("input[name=username]", username)
    page.fill("input[name=password1]", PASSWORD)
    page.fill("input[name=password2]", PASSWORD)
    page.locator("form [type=submit]").first.click()
    page.wait_for_url("**/accounts/confirm-email/")
    mails = mail_files(mail_dir)
    assert len(mails) == before + 1 and f"{username}@example.org" in mails[-1]
    page.goto(link_to(mails[-1], "/accounts/confirm-email/"))
    page.locator("form [type=submit]").first.click()
    page.wait_for_load_state()
    assert page.locator(".nav .who").inner_text() == username


def test_sign_up_make_a_team_and_invite_someone_who_joins(browser, live_server, settings, tmp_path):
    mail_dir = use_file_mail(settings, tmp_path / "mail")
    alice = browser.new_context().new_page()
    bob = browser.new_context().new_page()
    errors: list[str] = []
    for page in (alice, bob):
        page.set_default_timeout(15_000)
        page.on("pageerror", lambda exc: errors.append(str(exc)))

    sign_up_and_verify(alice, live_server, mail_dir, "alice")
    alice.goto(f"{live_server.url}/teams/")
    alice.fill("input[name=name]", "Team Alice")
    alice.locator("form [type=submit]", has_text="Make the team").click()
    alice.wait_for_url("**/teams/*/")
    alice.locator("button", has_text="Make an invitation link").click()
    link = alice.locator("code.invitation-link").inner_text()
    assert "/teams/join/" in link

    sign_up_and_verify(bob, live_server, mail_dir, "bob")
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
