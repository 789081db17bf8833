"""Invitations by mail in real Chromium: an organizer types a list with a bad address (refused,
the reason in view with the list kept), corrects it, and the invitee opens the link from the mail
(the file backend; the worker's job run in this process) and becomes an annotator; the
invitee's mail settings page turns a kind off."""

from __future__ import annotations

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from sent_mail import link_to, mail_files, use_file_mail

from leaderboard.models import MailOptOut, TaskInvitation
from leaderboard.services.tasks import create_task

from pipeline_support import PipelineDriver

pytestmark = pytest.mark.django_db(transaction=True)


def person(name: str):
    """A person with a verified address (without one, sign-in waits for the verification)."""
    user = get_user_model().objects.create_user(
        name, email=f"{name}@example.org", password=f"{name}-pass-42"
    )
    EmailAddress.objects.create(user=user, email=user.email, verified=True, primary=True)
    return user


IN_VIEW = "e => { const r = e.getBoundingClientRect(); return r.top >= 0 && r.top < innerHeight; }"


def test_an_organizer_invites_an_annotator_by_mail(
    page, browser, live_server, login, settings, tmp_path, monkeypatch
):
    mail_dir = use_file_mail(settings, tmp_path / "mail")
    settings.SITE_URL = live_server.url
    pipeline = PipelineDriver(monkeypatch)
    olga, _ = (person(name) for name in ("olga", "nina"))
    create_task(slug="mailed", title="Mailed task", organizers=[olga])

    login(page, live_server, "olga", "olga-pass-42")
    page.goto(f"{live_server.url}/tasks/mailed/organize/people/")
    page.fill("#id_addresses", "nina@example.org, nina@")
    page.select_option("#id_mail_role", "annotator")
    page.click("#invite-by-mail button[type=submit]")
    error = page.locator("#refusal")
    error.wait_for()
    assert "No invitation was sent" in error.inner_text()
    assert "'nina@' is not an email address" in error.inner_text()
    assert error.evaluate(IN_VIEW), "the refusal is in view"
    assert page.input_value("#id_addresses") == "nina@example.org, nina@"
    error.get_by_role("link", name="Correct the addresses").click()
    page.wait_for_function("document.activeElement.id === 'id_addresses'")
    assert not TaskInvitation.objects.exists()

    page.fill("#id_addresses", "nina@example.org")
    page.click("#invite-by-mail button[type=submit]")
    page.locator("#invitations-mailed").wait_for()
    shown = page.locator("#invitations-mailed code.invitation-link").inner_text()
    pipeline.drain()
    (message,) = mail_files(mail_dir)
    link = link_to(message, "/invitations/")
    assert link == shown and "To: nina@example.org" in message

    nina = browser.new_context().new_page()
    login(nina, live_server, "nina", "nina-pass-42")
    nina.goto(link)
    nina.click("text=Become an annotator of Mailed task")
    nina.wait_for_url("**/annotate/mailed/")
    assert TaskInvitation.objects.get().used_by.username == "nina"

    nina.goto(f"{live_server.url}/accounts/notifications/")
    nina.uncheck("#mail-run_finished")
    nina.click("#mail-settings button[type=submit]")
    nina.locator("ul.messages li").wait_for()
    assert list(MailOptOut.objects.values_list("user__username", "kind")) == [
        ("nina", "run_finished")
    ]
    assert page.js_errors == []
