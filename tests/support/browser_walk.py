"""What the walkthrough browser tests share: people who sign up through the pages (the address
confirmed by the link in the mail), annotators who answer what the annotation page serves them,
the pipeline's jobs run in the test's process until nothing waits (``PipelineDriver``), a clock
the test moves, and the screenshots of docs/ORGANIZERS.md (written with
``WALKTHROUGH_SCREENSHOTS=1``)."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.utils import timezone
from sent_mail import link_to, mail_files, use_file_mail

from annotation.models import VerificationRequest
from leaderboard.models import Run

PASSWORD = "a long browser secret 42"
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "images" / "organizers"
VIEWPORT = {"width": 1200, "height": 800}
# The annotation page has shown an item, or its screen (nothing to do, an error): never loading.
ITEM_OR_SCREEN = "#ann-item[data-token], #ann-screen:not([hidden]):not([data-status=loading])"


class Clock:
    """``django.utils.timezone.now`` held at ``now`` and moved by the test (the live server
    runs in this process, so the pages read the same clock)."""

    def __init__(self, monkeypatch):
        self.now = timezone.now().replace(second=0, microsecond=0)
        monkeypatch.setattr(timezone, "now", lambda: self.now)

    def move(self, **delta) -> None:
        self.now += timedelta(**delta)


def walk_settings(settings, tmp_path, live_server) -> Path:
    """Stored files and mail in the test's own directory, links in mail to the live server;
    returns the directory the mail is written to."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.SITE_URL = live_server.url
    return use_file_mail(settings, tmp_path / "mail")


def payload(key: str) -> dict:
    """What annotators see of an item: a pair whose sides name the item's key."""
    return {"left": {"name": f"item {key}"}, "right": {"name": f"item {key}"}}


def jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def shoot(page, name: str) -> None:
    if os.environ.get("WALKTHROUGH_SCREENSHOTS"):
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{name}.png"))


def new_page(browser, errors: list[str]):
    """A page of its own (cookies and all) at the screenshots' size; script errors collected."""
    page = browser.new_context(viewport=VIEWPORT).new_page()
    page.set_default_timeout(30_000)  # a busy CI machine: a failure waits, a pass does not
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return page


def page_height(page) -> int:
    """The height of the page as laid out, in CSS pixels."""
    return page.evaluate("document.documentElement.scrollHeight")


def sign_up(page, live_server, mail_dir, username: str) -> None:
    """Sign up on the allauth page and confirm the address with the link from the mail."""
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


def task_creator(page, live_server, mail_dir, username: str) -> None:
    """Someone who signs up and is given the task creator role (by the set-up: the
    administrator's one step, in the admin)."""
    sign_up(page, live_server, mail_dir, username)
    get_user_model().objects.get(username=username).user_permissions.add(
        Permission.objects.get(codename="add_task")
    )


def upload(page, field: str, name: str, content: bytes, *, then: str = "") -> None:
    """Choose ``content`` as the file of the input ``field`` and send its form; ``then``: the
    address to wait for (a success's redirect)."""
    page.set_input_files(field, files=[{"name": name, "mimeType": "text/plain", "buffer": content}])
    page.locator(field).locator("xpath=ancestor::form").locator("button[type=submit]").click()
    if then:
        page.wait_for_url(then)


def upload_loaded(page, pipeline) -> str:
    """After an organizer's upload was received (the Data section says so): the worker's job
    run (``pipeline`` drained) and the section reloaded; the text of the newest upload's row."""
    assert "it is being checked and loaded" in page.inner_text(".messages")
    pipeline.drain()
    page.reload()
    return page.locator("table.uploads tbody tr").first.inner_text()


def submit(page, live_server, slug: str, name: str, content: bytes) -> Run:
    """Upload a run (JSON Lines) on the task's submit page; its page opens."""
    page.goto(f"{live_server.url}/tasks/{slug}/submit/")
    page.set_input_files(
        "input[name=file]",
        files=[{"name": f"{name}.jsonl", "mimeType": "application/json", "buffer": content}],
    )
    page.get_by_role("button", name="Upload run").click()
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    return Run.objects.get(task__slug=slug, name=name)


def verify_everything(page, live_server, slug: str, is_true: Callable[[str], bool], shot="") -> int:
    """Answer every item the annotation page serves (by keyboard), right every time: ``is_true``
    says whether the item the page names is a true one."""
    page.goto(f"{live_server.url}/annotate/{slug}/")
    n = 0
    while True:
        page.wait_for_selector(ITEM_OR_SCREEN)
        token = page.get_attribute("#ann-item", "data-token")
        if not token:
            break
        if n == 0 and shot:
            shoot(page, shot)
        shown = page.locator("#ann-item tbody tr td").first.inner_text()
        key = re.fullmatch(r"item (\S+)", shown).group(1)
        page.keyboard.press("y" if is_true(key) else "n")
        page.wait_for_function(
            "t => document.getElementById('ann-item').dataset.token !== t", arg=token
        )
        n += 1
    assert page.get_attribute("#ann-screen", "data-status") == "empty"
    return n


def settle(
    pipeline,
    annotators,
    live_server,
    slug: str,
    is_true: Callable[[str], bool],
    *,
    done: Callable[[], bool],
    shot: str = "",
) -> int:
    """The worker's jobs and the annotators' answers until ``done()``; returns the answers
    given. An answer's jobs are enqueued as the live server's thread commits it, which can be
    just after a drain: so drain until ``done``, answering whatever the queue holds."""
    answers = 0
    for _ in range(80):
        pipeline.drain()
        if done():
            return answers
        if VerificationRequest.objects.filter(task__slug=slug, state="pending").exists():
            for annotator in annotators:
                answers += verify_everything(annotator, live_server, slug, is_true, shot)
                shot = ""
        else:
            # The last answer's jobs may be enqueued just after the drain: give them a moment.
            # No watchdog here: waiting with nothing pending is a missed wake-up.
            time.sleep(0.1)
    raise AssertionError(
        "the task did not settle: "
        + repr(list(Run.objects.filter(task__slug=slug).values_list("name", "state")))
    )
