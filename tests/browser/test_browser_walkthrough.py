"""A task from nothing, in real Chromium, on an empty database at default settings: no admin
page, no management command, no setting changed from its default but the ones the walk types.

The organizer (given the task creator role by the set-up, the one shortcut) creates a task on its
page: a draft whose checklist says what it needs to open. On the organize pages' Data section
they upload the documents' candidate items (a refused file first: the banner at the top, the
problems by line), ten gold items, and draw four documents; they invite two annotators (People),
who answer on the draft, each "correct" looked at again by the other, until the draw completes
with exactly its true candidates as the reference sample. A second draw of six documents adds to
it (30 items in 10 documents: what recall is presented on). The task page gets its terms and a
data file; the checklist turns complete and the task opens. A participant signs up (the
verification link read from the file mail backend), makes a team, asks to take part (the task
asks for approval: the organizer approves it from the overview), accepts the terms, downloads
the data file, submits a run and another it withdraws. The annotators verify what the planner
asks, the run is scored, the team is mailed, and an anonymous visitor opens the run's public
page. At the deadline the board is held, and a run submitted after it is evaluated but not shown;
at the reveal the board is published, the late run marked "after the deadline".

Each section's page is measured at 1200x800 (printed with ``-s``). The pipeline's jobs (validate,
plan, estimate, mail) run in this process when the test drains them (``PipelineDriver``).
``WALKTHROUGH_SCREENSHOTS=1`` writes the screenshots of docs/ORGANIZERS.md to
docs/images/organizers/ (not in CI, so the files do not churn). The closed pool's walk:
test_browser_walkthrough_pool.py.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from browser_walk import (
    Clock,
    jsonl,
    new_page,
    page_height,
    payload,
    settle,
    shoot,
    sign_up,
    submit,
    task_creator,
    upload,
    upload_loaded,
    walk_settings,
)
from sent_mail import link_to, mail_files

from leaderboard.models import ReferenceItem, ReferenceSample, Run, Task
from leaderboard.services.board import apply_due_phases

from pipeline_support import PipelineDriver

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]

SLUG = "walk"
# Sixteen documents of four candidates each: three true ones (a, b, c) and a false one (x).
DOCUMENTS = [f"doc-{n:02d}" for n in range(1, 17)]
CANDIDATES = {doc: [f"{doc[4:]}{tail}" for tail in "abcx"] for doc in DOCUMENTS}
FIRST_DRAW, SECOND_DRAW = 4, 6  # documents: 12 + 18 true items, 30 in 10 documents
GOLD = [key for doc in DOCUMENTS[-5:] for key in CANDIDATES[doc][1::2]]  # b and x: 10 items
SEED = 7
# The page height each section may reach at 1200x800 with this task (its people, files, runs):
# the overview within two screens, no section past three (measured: 879 to 2,054 px).
MAX_HEIGHT = {"overview": 1600}
DEFAULT_MAX_HEIGHT = 2400


def is_true(key: str) -> bool:
    return not key.endswith("x")


def true_candidates(documents) -> set[str]:
    return {key for doc in documents for key in CANDIDATES[doc] if is_true(key)}


def reference_keys(task) -> set[str]:
    return set(ReferenceItem.objects.filter(task=task).values_list("item__key", flat=True))


def complete_draw(pipeline, annotators, live_server, task, shot=""):
    """Answer the draw's candidates (and the further looks the estimation asks) until it is
    complete; returns the draw."""

    def complete():
        return ReferenceSample.objects.filter(task=task, state="complete").count() == drawn

    drawn = ReferenceSample.objects.filter(task=task).count()
    settle(pipeline, annotators, live_server, SLUG, is_true, done=complete, shot=shot)
    return ReferenceSample.objects.filter(task=task).latest("created_at")


def settle_runs(pipeline, annotators, live_server, task) -> None:
    """Answer what the planner asks until no run of the task is still being evaluated."""

    def evaluated():
        return not Run.objects.filter(task=task, state__in=Run.ACTIVE).exists()

    settle(pipeline, annotators, live_server, SLUG, is_true, done=evaluated)


def organize(page, live_server, section: str = "") -> None:
    page.goto(f"{live_server.url}/tasks/{SLUG}/organize/{section}")


def test_a_task_from_nothing_at_default_settings(
    browser, live_server, settings, tmp_path, monkeypatch
):
    mail_dir = walk_settings(settings, tmp_path, live_server)
    clock = Clock(monkeypatch)
    pipeline = PipelineDriver(monkeypatch)
    errors: list[str] = []
    olga, ann, amy, alice, visitor = (new_page(browser, errors) for _ in range(5))
    annotators = [ann, amy]

    # -- The organizer: the one shortcut, the task creator role, granted here. -----------------
    task_creator(olga, live_server, mail_dir, "olga")
    olga.goto(f"{live_server.url}/")
    olga.click("text=New task")
    olga.wait_for_url("**/tasks/new/")
    olga.fill("#id_slug", SLUG)
    olga.fill("#id_title", "Walkthrough pairs")
    olga.fill("#id_question", "Are these two records the same person?")
    olga.locator("#preview-item table.pair").wait_for()
    shoot(olga, "01-new-task")
    olga.click("form#task-new button[type=submit]")
    olga.wait_for_url(f"**/tasks/{SLUG}/organize/")
    task = Task.objects.get(slug=SLUG)
    assert task.state == Task.State.DRAFT
    defaults = Task(slug="other")
    for name in ("judgments_per_item", "target_half_width", "confidence", "gold_rate"):
        assert getattr(task, name) == getattr(defaults, name), name
    # A draft: the checklist on the overview says what it needs to open, each linked.
    assert olga.inner_text("#readiness-verdict").startswith("Not ready to open yet: 3 needs")
    assert olga.locator("#task-state button").is_disabled()
    shoot(olga, "02-checklist")
    olga.locator("li[data-check=reference_sample] a").click()
    olga.wait_for_url(f"**/tasks/{SLUG}/organize/data/#reference-sample")
    assert olga.locator("nav.subnav [aria-current=page]").inner_text() == "Data"

    # -- The reference sample, built in the product: a refused file first, then the candidates.
    data = f"**/tasks/{SLUG}/organize/data/"
    upload(olga, "#id_candidates_file", "cands.tsv", b"01a\tdoc-01\n01b\n", then=data)
    row = upload_loaded(olga, pipeline)  # the worker rejects it, with its problem by line
    assert "rejected" in row and "line 2" in row and "document missing" in row
    assert "0 items in 0 documents" in olga.inner_text("#reference-candidates")
    olga.locator("#uploads").scroll_into_view_if_needed()
    shoot(olga, "03-reference-refused")
    rows = [
        {"key": key, "document": doc, "payload": payload(key)}
        for doc, keys in CANDIDATES.items()
        for key in keys
    ]
    upload(olga, "#id_candidates_file", "candidates.jsonl", jsonl(rows), then=data)
    assert "loaded: 64 candidates, 16 documents" in upload_loaded(olga, pipeline)
    # Gold items: the task's default gold rate (5%) asks for ten known answers.
    gold = "".join(f"{k}\t{'correct' if is_true(k) else 'incorrect'}\n" for k in GOLD)
    upload(olga, "#id_gold_file", "gold.tsv", gold.encode(), then=data)
    assert "loaded: 10 created, 0 updated, 0 unchanged" in upload_loaded(olga, pipeline)
    olga.fill("#id_draw_size", str(FIRST_DRAW))
    olga.fill("#id_draw_seed", str(SEED))
    olga.click("form#draw-reference-sample button[type=submit]")
    olga.wait_for_url(f"**/tasks/{SLUG}/organize/data/")
    assert (
        f"Drew {FIRST_DRAW} of 16 documents (seed {SEED}): 16 candidates queued for verification;"
        " once they are all settled, their true ones are the reference sample."
    ) in olga.inner_text(".messages")
    assert olga.inner_text("#reference-progress") == "0 of 16 candidates resolved, 0 true so far"
    olga.locator("#reference-sample").scroll_into_view_if_needed()
    shoot(olga, "03-reference-drawn")

    # -- Two annotators, each invited by a link from the People section. ----------------------
    for page, name in ((ann, "ann"), (amy, "amy")):
        organize(olga, live_server, "people/")
        olga.select_option("#invitation-role", "annotator")
        olga.locator("button", has_text="Make an invitation link").click()
        invitation = olga.locator("#new-invitation code.invitation-link").inner_text()
        if name == "ann":
            shoot(olga, "04-invitation")
        sign_up(page, live_server, mail_dir, name)
        page.goto(invitation)
        page.locator("button", has_text="Become an annotator").click()
        page.wait_for_url(f"**/annotate/{SLUG}/")
        page.wait_for_selector("#ann-item[data-token], #ann-screen:not([hidden])")
    assert sorted(task.annotators.values_list("username", flat=True)) == ["amy", "ann"]

    # They answer on the draft (runs' items would wait for it to open): every candidate of the
    # drawn documents, a "correct" looked at again by the other, until each is settled.
    first = complete_draw(pipeline, annotators, live_server, task, "05-annotate")
    task.refresh_from_db()
    assert task.state == Task.State.DRAFT and task.reference_version == 1
    assert reference_keys(task) == true_candidates(first.documents)  # exactly the true ones
    organize(olga, live_server, "data/")
    assert olga.inner_text("#reference-progress") == (
        "complete: 12 true items of 16 candidates; reference version 1: 12 items in 4 documents"
    )
    olga.locator("#reference-sample").scroll_into_view_if_needed()
    shoot(olga, "03-reference-complete")

    # A second draw takes documents not drawn yet and adds its true candidates to the sample.
    olga.fill("#id_draw_size", str(SECOND_DRAW))
    olga.click("form#draw-reference-sample button[type=submit]")
    olga.wait_for_url(f"**/tasks/{SLUG}/organize/data/")
    assert "their true ones are added to the reference sample" in olga.inner_text(".messages")
    second = complete_draw(pipeline, annotators, live_server, task)
    assert not set(second.documents) & set(first.documents)
    task.refresh_from_db()
    assert reference_keys(task) == true_candidates([*first.documents, *second.documents])
    organize(olga, live_server, "data/")
    assert "30 items in 10 documents (version 2)" in olga.inner_text("#reference-size")
    assert "10 drawn, 6 left to draw" in olga.inner_text("#reference-candidates")

    # -- The task page: its terms, and a sample run file for participants. -------------------
    organize(olga, live_server, "page/")
    olga.fill("#id_description", "Link the records of two registers.")
    olga.fill("#id_terms", "Runs are **published** under the team's name.")
    olga.get_by_role("button", name="Save the task page").click()
    olga.wait_for_url(f"**/tasks/{SLUG}/organize/page/")
    sample_run = jsonl([{"key": "01a", "score": 0.9}, {"key": "01x", "score": 0.1}])
    olga.select_option("#id_task_file_kind", "sample_run")
    olga.fill("#id_task_file_title", "A sample run")
    upload(
        olga,
        "#id_task_file_file",
        "sample-run.jsonl",
        sample_run,
        then=f"**/tasks/{SLUG}/organize/page/",
    )
    assert "Data file added: A sample run (sample-run.jsonl)." in olga.inner_text(".messages")

    # Teams ask to take part and an organizer approves them (the Settings section).
    organize(olga, live_server, "settings/")
    olga.check("#id_team_approval")
    olga.click("form#settings-form button[type=submit]")
    olga.wait_for_url(f"**/tasks/{SLUG}/organize/settings/")
    assert olga.inner_text(".messages") == "Settings saved: team_approval"

    # -- The checklist is complete: the task opens. --------------------------------------------
    organize(olga, live_server)
    assert olga.inner_text("#readiness-verdict") == "Ready to open: nothing below is missing."
    assert {
        olga.locator(f"li[data-check={key}] .mark").inner_text()
        for key in ("annotators", "reference_sample", "gold")
    } == {"done"}
    olga.get_by_role("button", name="Open the task").click()
    olga.wait_for_url(f"**/tasks/{SLUG}/organize/")
    assert "Task walk opened: it takes runs." in olga.inner_text(".messages")
    task.refresh_from_db()
    assert task.state == Task.State.OPEN

    # -- A participant: signs up, makes a team, asks to take part. -----------------------------
    sign_up(alice, live_server, mail_dir, "alice")
    alice.goto(f"{live_server.url}/teams/")
    alice.fill("input[name=name]", "Team Alice")
    alice.locator("form [type=submit]", has_text="Make the team").click()
    alice.wait_for_url("**/teams/*/")
    shoot(alice, "06-team")
    alice.goto(f"{live_server.url}/tasks/{SLUG}/submit/")
    alice.locator("button", has_text="Ask to take part").click()
    assert "waiting for an organizer" in alice.inner_text(".banner.approvals")
    pipeline.drain()  # the organizers are mailed
    asked = mail_files(mail_dir)[-1]
    assert "To: olga@example.org" in asked and "Team Alice" in asked
    olga.goto(link_to(asked, "/organize/"))
    waiting = olga.locator("#attention table.approvals")
    shoot(olga, "06-team-approval")
    waiting.locator("tr[data-team='Team Alice'] button", has_text="Approve").click()
    olga.wait_for_url(f"**/tasks/{SLUG}/organize/")
    assert "Team Alice may submit runs to walk." in olga.inner_text(".messages")

    # The terms, accepted for the team on the overview; then the data file.
    alice.goto(f"{live_server.url}/tasks/{SLUG}/overview/")
    alice.get_by_role("button", name="Accept the terms for Team Alice").click()
    alice.wait_for_url(f"**/tasks/{SLUG}/overview/")
    with alice.expect_download() as download:
        alice.get_by_role("link", name="A sample run").click()
    saved = tmp_path / "sample-run.jsonl"
    download.value.save_as(saved)
    assert saved.read_bytes() == sample_run

    # Two runs: a mistake withdrawn at once, and the one that counts.
    keys = [k for doc in DOCUMENTS for k in CANDIDATES[doc]]
    mistake = submit(alice, live_server, SLUG, "mistake", jsonl([{"key": keys[0], "score": 1}]))
    alice.locator("#withdraw summary").click()
    alice.locator("#withdraw-button").click()
    alice.wait_for_url(re.compile(r"/runs/\d+/$"))
    assert alice.locator("#run-state").inner_text() == "withdrawn"
    predicted = [k for k in keys[:44] if is_true(k)] + [k for k in keys[:44] if not is_true(k)][:3]
    run = submit(
        alice,
        live_server,
        SLUG,
        "alice-linker",
        jsonl([{"key": k, "score": 0.9 if is_true(k) else 0.4} for k in predicted]),
    )
    settle_runs(pipeline, annotators, live_server, task)
    run.refresh_from_db()
    mistake.refresh_from_db()
    assert mistake.state == Run.State.WITHDRAWN
    assert run.state == Run.State.SCORED, (run.state, run.reason)
    pipeline.drain()  # its mail
    scored = [m for m in mail_files(mail_dir) if 'Run "alice-linker"' in m]
    assert len(scored) == 1 and "To: alice@example.org" in scored[0] and "is scored" in scored[0]
    alice.goto(link_to(scored[0], "/runs/"))
    assert alice.locator("#run-state").inner_text() == "scored"

    # -- Anyone: the board and the run's public page. -------------------------------------------
    visitor.goto(f"{live_server.url}/tasks/{SLUG}/")
    board = visitor.locator("table.board")
    assert "alice-linker" in board.inner_text() and "mistake" not in board.inner_text()
    shoot(visitor, "09-board-live")
    board.get_by_role("link", name="alice-linker").click()
    visitor.wait_for_url(f"**/runs/{run.pk}/")
    assert "Team Alice" in visitor.inner_text("main")
    assert visitor.locator("#withdraw").count() == 0

    # -- The organize pages of a task with people, files and runs: each one short. -------------
    heights = {}
    for section, path in (
        ("overview", ""),
        ("settings", "settings/"),
        ("data", "data/"),
        ("people", "people/"),
        ("task_page", "page/"),
        ("phases", "phases/"),
        ("board", "board/"),
    ):
        organize(olga, live_server, path)
        heights[section] = page_height(olga)
        if section == "overview":
            shoot(olga, "02-organize")
        if section == "board":
            shoot(olga, "07-organize-with-runs")
    print("organize pages' heights at 1200x800:", heights)
    for section, height in heights.items():
        assert height <= MAX_HEIGHT.get(section, DEFAULT_MAX_HEIGHT), (section, height)
    olga.goto(f"{live_server.url}/annotate/{SLUG}/queue/")
    shoot(olga, "08-queue")

    # -- Dates: the window closes in an hour, the board is revealed an hour later. -------------
    close, reveal = clock.now + timedelta(hours=1), clock.now + timedelta(hours=2)
    organize(olga, live_server, "phases/")
    olga.fill("#id_submissions_close_at", f"{close:%Y-%m-%d %H:%M}")
    olga.fill("#id_reveal_at", f"{reveal:%Y-%m-%d %H:%M}")
    olga.click("form#phases-form button[type=submit]")
    olga.wait_for_url(f"**/tasks/{SLUG}/organize/phases/")
    assert olga.inner_text(".messages") == "Dates saved: reveal_at, submissions_close_at"
    clock.move(hours=1, minutes=1)
    assert apply_due_phases() == {"held": 1, "published": 0}
    olga.goto(f"{live_server.url}/tasks/{SLUG}/")
    assert "The public board is held." in olga.inner_text("[aria-label=Publication]")
    shoot(olga, "10-board-held")
    # A run after the deadline: accepted, evaluated, marked; the held board does not show it.
    late_keys = [k for k in keys[16:] if is_true(k)][:30] + [k for k in keys[16:] if not is_true(k)]
    late = submit(
        alice,
        live_server,
        SLUG,
        "alice-late",
        jsonl([{"key": k, "score": 0.8 if is_true(k) else 0.3} for k in late_keys]),
    )
    assert alice.locator("#after-deadline").inner_text() == "after the deadline"
    settle_runs(pipeline, annotators, live_server, task)
    late.refresh_from_db()
    assert late.after_deadline and late.state in (Run.State.SCORED, Run.State.PARTIAL)
    visitor.goto(f"{live_server.url}/tasks/{SLUG}/")
    assert "alice-late" not in visitor.inner_text("table.board")
    clock.move(hours=1)
    assert apply_due_phases() == {"held": 0, "published": 1}
    visitor.goto(f"{live_server.url}/tasks/{SLUG}/")
    assert "held" not in visitor.inner_text("main").lower()
    row = visitor.locator("table.board tr", has_text="alice-late")
    assert "after the deadline" in row.inner_text()
    shoot(visitor, "11-board-revealed")
    assert errors == []
