"""The life of a task in real Chromium, with no admin page and no management command.

An organizer (given the task creator role by the set-up, a shortcut) creates a task on its page (a
draft, whose checklist says what it needs to open; the set-up opens it, the other shortcut), sets
its phases and team approval, builds its reference sample in the product (uploads the documents'
candidate items, a refused file first, and draws a seeded sample of documents) and invites two
annotators and a co-organizer by links; the annotators sign up, accept and verify the drawn
candidates on the annotation page, and the estimation makes the true ones the reference sample
(version 1), before any run (recall rests on it); two participants sign up (the verification links
read from the file mail backend), form a team by an invitation link, ask to take part (the organizer
approves) and submit runs. The clock moves past the deadline: the phase job's service (what the beat
job ``evaluation.apply_task_phases`` calls) holds the board; a run submitted after the deadline is
scored but not shown; at the reveal the board is published, the late run marked "after the
deadline".

The pipeline's jobs (validate, plan, estimate) run in this process when the test drains them
(``PipelineDriver``), as in the participant's browser test: deterministic, no worker to wait on.

``WALKTHROUGH_SCREENSHOTS=1`` writes the screenshots of docs/ORGANIZERS.md to
docs/images/organizers/ (not in CI, so the files do not churn).
"""

from __future__ import annotations

import json
import os
import re
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.utils import timezone
from sent_mail import link_to, mail_files, use_file_mail

from annotation.models import VerificationRequest
from leaderboard.models import ReferenceSample, Run, Task
from leaderboard.services.board import apply_due_phases

from pipeline_support import PipelineDriver

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]

PASSWORD = "a long browser secret 42"
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "images" / "organizers"
VIEWPORT = {"width": 1200, "height": 800}
# The items: p0..p19; the true ones are p0..p9. The reference candidates: six documents' items,
# true and false. The draw of three documents with seed 36 picks doc-a, doc-b and doc-c: eight
# candidates, whose six true ones (p0..p5) become the reference sample.
TRUE = {f"p{i}" for i in range(10)}
CANDIDATES = {
    "doc-a": ["p0", "p1", "p10"],
    "doc-b": ["p2", "p3", "p11"],
    "doc-c": ["p4", "p5"],
    "doc-d": ["p6", "p12", "p14"],
    "doc-e": ["p7", "p8", "p15"],
    "doc-f": ["p9", "p16"],
}
SEED, DRAWN = 36, ["doc-a", "doc-b", "doc-c"]


class Clock:
    """``django.utils.timezone.now`` held at ``now`` and moved by the test (the live server
    runs in this process, so the pages read the same clock)."""

    def __init__(self, monkeypatch):
        self.now = timezone.now().replace(second=0, microsecond=0)
        monkeypatch.setattr(timezone, "now", lambda: self.now)

    def move(self, **delta) -> None:
        self.now += timedelta(**delta)


def payload(key: str) -> dict:
    return {"left": {"name": f"item {key}"}, "right": {"name": f"item {key}"}}


def jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def run_file(keys: list[str], scores: list[float]) -> bytes:
    rows = [
        {"key": k, "score": s, "payload": payload(k)} for k, s in zip(keys, scores, strict=True)
    ]
    return jsonl(rows)


def shoot(page, name: str) -> None:
    if os.environ.get("WALKTHROUGH_SCREENSHOTS"):
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{name}.png"))


def new_page(browser, errors: list[str]):
    page = browser.new_context(viewport=VIEWPORT).new_page()
    page.set_default_timeout(30_000)  # a busy CI machine: a failure waits, a pass does not
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return page


def sign_up(page, live_server, mail_dir, username: str, *, then: str = "") -> None:
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


def submit(page, live_server, name: str, content: bytes) -> Run:
    page.goto(f"{live_server.url}/tasks/walk/submit/")
    page.set_input_files(
        "input[name=file]",
        files=[{"name": f"{name}.jsonl", "mimeType": "application/json", "buffer": content}],
    )
    page.fill("input[name=name]", name)
    page.get_by_role("button", name="Upload run").click()
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    return Run.objects.get(name=name)


ITEM_OR_SCREEN = "#ann-item[data-token], #ann-screen:not([hidden]):not([data-status=loading])"


def verify_everything(page, live_server, shot: str = "") -> int:
    """Answer every item the annotation page serves (by keyboard), right every time."""
    page.goto(f"{live_server.url}/annotate/walk/")
    n = 0
    while True:
        page.wait_for_selector(ITEM_OR_SCREEN)
        token = page.get_attribute("#ann-item", "data-token")
        if not token:
            break
        if n == 0 and shot:
            shoot(page, shot)
        shown = page.locator("#ann-item tbody tr td").first.inner_text()
        key = re.fullmatch(r"item (p\d+)", shown).group(1)
        page.keyboard.press("y" if key in TRUE else "n")
        page.wait_for_function(
            "t => document.getElementById('ann-item').dataset.token !== t", arg=token
        )
        n += 1
    assert page.get_attribute("#ann-screen", "data-status") == "empty"
    return n


def settle(pipeline, annotators, live_server, shot: str = "") -> None:
    """The worker's jobs and the annotators' answers, until the planner asks for nothing more
    and no run is still in the pipeline. An answer's jobs are enqueued when the live server's
    thread commits it, which can be just after a drain: so drain until every run is settled."""
    for _ in range(40):
        pipeline.drain()
        if VerificationRequest.objects.filter(task__slug="walk", state="pending").exists():
            for annotator in annotators:
                verify_everything(annotator, live_server, shot)
                shot = ""
        elif not Run.objects.filter(task__slug="walk", state__in=Run.ACTIVE).exists():
            return
        else:
            # The last answer's jobs may be enqueued just after the drain: give them a moment.
            # No watchdog here: a run waiting with nothing pending is a missed wake-up.
            time.sleep(0.1)
    raise AssertionError(
        "the runs did not settle: "
        + repr(list(Run.objects.filter(task__slug="walk").values_list("name", "state")))
    )


def test_the_life_of_a_task_from_the_pages(browser, live_server, settings, tmp_path, monkeypatch):
    settings.MEDIA_ROOT = tmp_path / "media"
    mail_dir = use_file_mail(settings, tmp_path / "mail")
    clock = Clock(monkeypatch)
    pipeline = PipelineDriver(monkeypatch)
    errors: list[str] = []
    organizer, annotator, amy, alice, bob, visitor = (new_page(browser, errors) for _ in range(6))
    annotators = [annotator, amy]

    # -- The organizer: the one shortcut, the task creator role, granted here. -----------------
    sign_up(organizer, live_server, mail_dir, "olga")
    get_user_model().objects.get(username="olga").user_permissions.add(
        Permission.objects.get(codename="add_task")
    )
    organizer.goto(f"{live_server.url}/")
    organizer.click("text=New task")
    organizer.wait_for_url("**/tasks/new/")
    organizer.fill("#id_slug", "walk")
    organizer.fill("#id_title", "Walkthrough pairs")
    organizer.fill("#id_question", "Are these two records the same person?")
    organizer.fill("#id_target_half_width", "0.3")
    organizer.fill("#id_label_budget", "500")
    organizer.locator("#preview-item table.pair").wait_for()
    shoot(organizer, "01-new-task")
    organizer.click("form#task-new button[type=submit]")
    organizer.wait_for_url("**/tasks/walk/organize/")
    task = Task.objects.get(slug="walk")
    assert task.state == Task.State.DRAFT and task.label_budget == 500
    # A draft: the checklist at the top of the organize page says what it needs to open.
    assert organizer.inner_text("#readiness-verdict").startswith("Not ready to open yet")
    assert organizer.locator("#task-state button").is_disabled()
    shoot(organizer, "02-checklist")
    # The one other shortcut, until annotators may answer on a draft (issue 28, item 2): the
    # walk opens the task by the database, so that the annotator below can verify the
    # reference sample's candidates (tests/leaderboard/pages/test_lb_organize_readiness.py
    # opens a task through its checklist).
    Task.objects.filter(pk=task.pk).update(state=Task.State.OPEN)
    organizer.reload()

    # Phases: the window closes in two hours, the board is revealed two hours later; teams
    # take part once an organizer approves them.
    close, reveal = clock.now + timedelta(hours=2), clock.now + timedelta(hours=4)
    organizer.fill("#id_submissions_close_at", f"{close:%Y-%m-%d %H:%M}")
    organizer.fill("#id_reveal_at", f"{reveal:%Y-%m-%d %H:%M}")
    organizer.check("#id_team_approval")
    organizer.click("form.task-settings button[type=submit]")
    organizer.wait_for_url("**/tasks/walk/organize/")
    assert organizer.inner_text(".messages") == (
        "Settings saved: reveal_at, submissions_close_at, team_approval"
    )
    task.refresh_from_db()
    assert (task.submissions_close_at, task.reveal_at) == (close, reveal) and task.team_approval
    assert "until" in organizer.locator("#task-phases").inner_text()

    # The reference sample, built in the product: the documents' candidate items (a refused
    # file first: problems by line, nothing stored), then a seeded draw of three documents.
    organizer.locator("#reference-sample").scroll_into_view_if_needed()
    organizer.set_input_files(
        "#id_candidates_file",
        files=[{"name": "cands.tsv", "mimeType": "text/plain", "buffer": b"p0\tdoc-a\np1\n"}],
    )
    organizer.click("form#upload-candidates button[type=submit]")
    organizer.locator("#upload-error").wait_for()
    assert "line 2" in organizer.locator("#upload-error").inner_text()
    assert "0 items in 0 documents" in organizer.inner_text("#reference-candidates")
    organizer.locator("#upload-error").scroll_into_view_if_needed()
    shoot(organizer, "03-reference-refused")
    candidates = jsonl(
        [
            {"key": k, "document": doc, "payload": payload(k)}
            for doc, ks in CANDIDATES.items()
            for k in ks
        ]
    )
    organizer.set_input_files(
        "#id_candidates_file",
        files=[{"name": "candidates.jsonl", "mimeType": "application/json", "buffer": candidates}],
    )
    organizer.click("form#upload-candidates button[type=submit]")
    organizer.wait_for_url("**/tasks/walk/organize/")
    assert "Reference candidates replaced: 16 items in 6 documents." in organizer.inner_text(
        ".messages"
    )
    shoot(organizer, "02-organize")
    organizer.fill("#id_draw_size", "3")
    organizer.fill("#id_draw_seed", str(SEED))
    organizer.click("form#draw-reference-sample button[type=submit]")
    organizer.wait_for_url("**/tasks/walk/organize/")
    assert (
        f"Drew 3 of 6 documents (seed {SEED}): 8 candidates queued for verification; once they "
        "are all settled, their true ones are the reference sample."
    ) in organizer.inner_text(".messages")
    assert (
        organizer.inner_text("#reference-progress") == "0 of 8 candidates resolved, 0 true so far"
    )
    organizer.locator("#reference-sample").scroll_into_view_if_needed()
    shoot(organizer, "03-reference-drawn")
    drawn = ReferenceSample.objects.get(task__slug="walk")
    assert sorted(drawn.documents) == DRAWN and drawn.seed == SEED

    # -- Two annotators, each invited by a link. ----------------------------------------------
    for page, name in ((annotator, "ann"), (amy, "amy")):
        organizer.goto(f"{live_server.url}/tasks/walk/organize/")
        organizer.locator("#people").scroll_into_view_if_needed()
        organizer.select_option("#invitation-role", "annotator")
        organizer.locator("button", has_text="Make an invitation link").click()
        invitation = organizer.locator("code.invitation-link").inner_text()
        if name == "ann":
            shoot(organizer, "04-invitation")
        sign_up(page, live_server, mail_dir, name)
        page.goto(invitation)
        page.locator("button", has_text="Become an annotator").click()
        page.wait_for_url("**/annotate/walk/")
        # (The page claims items as it opens: let it show the first before the walk opens it.)
        page.wait_for_selector(ITEM_OR_SCREEN)
    assert sorted(task.annotators.values_list("username", flat=True)) == ["amy", "ann"]

    # The annotators verify the drawn documents' candidates (nothing else is asked yet), each
    # "correct" looked at again by the other; the estimation makes the true ones the reference
    # sample, in one new reference version.
    settle(pipeline, annotators, live_server, "05-annotate")
    # The estimation of the last answers (asked for as their transaction commits), and the looks
    # it may still ask.
    for _ in range(50):
        pipeline.drain()
        if ReferenceSample.objects.filter(task=task, state="complete").exists():
            break
        if VerificationRequest.objects.filter(task=task, state="pending").exists():
            settle(pipeline, annotators, live_server)
        annotator.wait_for_timeout(100)
    resolved = VerificationRequest.objects.filter(task=task, state="resolved")
    assert sorted(resolved.values_list("item__key", flat=True)) == sorted(
        k for doc in DRAWN for k in CANDIDATES[doc]
    )
    task.refresh_from_db()
    assert task.reference_version == 1
    organizer.goto(f"{live_server.url}/tasks/walk/organize/")
    assert organizer.inner_text("#reference-progress") == (
        "complete: 6 true items of 8 candidates; reference version 1: 6 items in 3 documents"
    )
    assert "Version 1: 6 items in 3 documents." in organizer.inner_text("form#upload-reference")
    organizer.locator("#reference-sample").scroll_into_view_if_needed()
    shoot(organizer, "03-reference-complete")

    # -- A co-organizer, invited the same way. --------------------------------------------------
    organizer.goto(f"{live_server.url}/tasks/walk/organize/")
    organizer.select_option("#invitation-role", "organizer")
    organizer.locator("button", has_text="Make an invitation link").click()
    invitation = organizer.locator("code.invitation-link").inner_text()
    co_organizer = new_page(browser, errors)
    sign_up(co_organizer, live_server, mail_dir, "carl")
    co_organizer.goto(invitation)
    co_organizer.locator("button", has_text="Become an organizer").click()
    co_organizer.wait_for_url("**/tasks/walk/organize/")
    people = co_organizer.locator("table.organizers").inner_text()
    assert "olga" in people and "carl" in people
    assert "ann" in co_organizer.locator("table.annotators").inner_text()

    # -- Two participants sign up and form a team by invitation. -------------------------------
    sign_up(alice, live_server, mail_dir, "alice")
    alice.goto(f"{live_server.url}/teams/")
    alice.fill("input[name=name]", "Team Alice")
    alice.locator("form [type=submit]", has_text="Make the team").click()
    alice.wait_for_url("**/teams/*/")
    alice.locator("button", has_text="Make an invitation link").click()
    team_link = alice.locator("code.invitation-link").inner_text()
    sign_up(bob, live_server, mail_dir, "bob")
    bob.goto(team_link)
    bob.locator("button", has_text="Join Team Alice").click()
    bob.wait_for_url("**/teams/*/")
    assert "alice" in bob.inner_text("ul.members") and "bob" in bob.inner_text("ul.members")
    shoot(bob, "06-team")

    # The team asks to take part in the task; the organizer approves it.
    alice.goto(f"{live_server.url}/tasks/walk/submit/")
    alice.locator("button", has_text="Ask to take part").click()
    assert "waiting for an organizer" in alice.inner_text(".banner.approvals")
    organizer.goto(f"{live_server.url}/tasks/walk/organize/")
    approvals = organizer.locator("table.approvals")
    approvals.scroll_into_view_if_needed()
    shoot(organizer, "06-team-approval")
    approvals.locator("tr[data-team='Team Alice'] button", has_text="Approve").click()
    organizer.wait_for_url("**/tasks/walk/organize/")
    assert "Team Alice may submit runs to walk." in organizer.inner_text(".messages")

    # They submit two runs before the deadline; the worker validates and plans them.
    keys = [f"p{i}" for i in range(20)]
    first = submit(alice, live_server, "alice-first", run_file(keys[:14], [0.9] * 10 + [0.2] * 4))
    second = submit(bob, live_server, "bob-second", run_file(keys[4:], [0.8] * 6 + [0.3] * 10))
    pipeline.drain()
    assert {r.state for r in Run.objects.filter(pk__in=[first.pk, second.pk])} == {
        Run.State.AWAITING_LABELS
    }

    # The annotator verifies what the queue serves; the answers are estimated, and the planner
    # asks for more where the intervals are still too wide.
    settle(pipeline, annotators, live_server)
    assert {r.state for r in Run.objects.filter(pk__in=[first.pk, second.pk])} <= {
        Run.State.SCORED,
        Run.State.PARTIAL,
    }
    organizer.goto(f"{live_server.url}/tasks/walk/organize/")
    shoot(organizer, "07-organize-with-runs")
    organizer.goto(f"{live_server.url}/annotate/walk/queue/")
    shoot(organizer, "08-queue")

    # The board is live before the deadline: both runs are public.
    visitor.goto(f"{live_server.url}/tasks/walk/")
    board = visitor.locator("table.board").inner_text()
    assert "alice-first" in board and "bob-second" in board
    public_version = visitor.locator(".snapshot-meta strong").inner_text()
    shoot(visitor, "09-board-live")

    # -- The deadline passes: the phase job holds the board. ------------------------------------
    clock.move(hours=2, minutes=1)
    assert apply_due_phases() == {"held": 1, "published": 0}
    assert apply_due_phases() == {"held": 0, "published": 0}  # idempotent
    organizer.goto(f"{live_server.url}/tasks/walk/")
    assert "The public board is held." in organizer.inner_text("[aria-label=Publication]")
    assert "after the deadline" in organizer.inner_text("#task-phases")
    shoot(organizer, "10-board-held")

    # A run after the deadline: accepted, scored, marked; the public board does not show it.
    clock.move(hours=1)
    late = submit(alice, live_server, "alice-late", run_file(keys[2:16], [0.95] * 8 + [0.1] * 6))
    assert alice.locator("#after-deadline").inner_text() == "after the deadline"
    settle(pipeline, annotators, live_server)
    late.refresh_from_db()
    assert late.after_deadline and late.state in (Run.State.SCORED, Run.State.PARTIAL)
    visitor.goto(f"{live_server.url}/tasks/walk/")
    assert "Results are being held by the organizers" in visitor.inner_text("main")
    assert visitor.locator(".snapshot-meta strong").inner_text() == public_version
    assert "alice-late" not in visitor.inner_text("table.board")

    # -- The reveal: the board is published, the late run marked. ------------------------------
    clock.move(hours=1)
    assert apply_due_phases() == {"held": 0, "published": 1}
    visitor.goto(f"{live_server.url}/tasks/walk/")
    assert "held" not in visitor.inner_text("main").lower()
    row = visitor.locator("table.board tr", has_text="alice-late")
    assert "after the deadline" in row.inner_text()
    for name in ("alice-first", "bob-second"):
        assert "after the deadline" not in visitor.locator("tr", has_text=name).inner_text()
    shoot(visitor, "11-board-revealed")
    assert errors == []
