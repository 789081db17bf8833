"""A closed-pool task whose first run arrived before its pool, in real Chromium.

The issue's blocker: a closed pool could be opened before its pool existed, and one run, even a
rejected one, then made every pool upload answer ``409 pool_exists``. A task can no longer open
so (its checklist asks for the pool); the walk makes one as it was, the organizer creating it on
the new task page and the database opening it (the shortcut besides the creator role). A
participant's run is refused at upload with ``no_pool`` and nothing is stored; the organizer,
told on the overview that the open task falls short, closes it, uploads the pool from the Data
section (no early run stands in its way; a second pool is refused in the banner at the top),
the gold items, and invites four annotators by mail (a closed pool's further looks need four);
the checklist completes, the task opens from it, and the participant's run is accepted, planned
and queued for the annotators.
"""

from __future__ import annotations

import re

import pytest
from browser_walk import (
    jsonl,
    new_page,
    payload,
    shoot,
    sign_up,
    submit,
    task_creator,
    upload,
    upload_loaded,
    walk_settings,
)
from sent_mail import link_to, mail_files

from leaderboard.models import Item, Run, Task

from pipeline_support import PipelineDriver

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]

SLUG = "pool-walk"
KEYS = [f"pair-{n:03d}" for n in range(40)]
ANNOTATORS = ("ann1", "ann2", "ann3", "ann4")


def run_file(keys) -> bytes:
    """A closed pool's run scores every pool item and says which it predicts (``label``)."""
    scores = [round(1 - i / len(keys), 3) for i in range(len(keys))]
    return jsonl(
        [{"key": k, "score": s, "label": int(s > 0.5)} for k, s in zip(keys, scores, strict=True)]
    )


def test_a_closed_pool_whose_first_run_came_before_its_pool(
    browser, live_server, settings, tmp_path, monkeypatch
):
    mail_dir = walk_settings(settings, tmp_path, live_server)
    pipeline = PipelineDriver(monkeypatch)
    errors: list[str] = []
    olga, pat = new_page(browser, errors), new_page(browser, errors)

    task_creator(olga, live_server, mail_dir, "olga")
    olga.goto(f"{live_server.url}/tasks/new/")
    olga.fill("#id_slug", SLUG)
    olga.fill("#id_title", "Pooled pairs")
    olga.select_option("#id_kind", "closed_pool")
    olga.click("form#task-new button[type=submit]")
    olga.wait_for_url(f"**/tasks/{SLUG}/organize/")
    pool_check = olga.locator("li[data-check=pool]")
    assert pool_check.locator(".mark").inner_text() == "missing"
    # Opened before its pool, as tasks could be before the checklist: the one other shortcut.
    Task.objects.filter(slug=SLUG).update(state=Task.State.OPEN)

    # -- A participant's run arrives first: refused, nothing stored, nothing counted. ----------
    sign_up(pat, live_server, mail_dir, "pat")
    pat.goto(f"{live_server.url}/teams/")
    pat.fill("input[name=name]", "Early birds")
    pat.locator("form [type=submit]", has_text="Make the team").click()
    pat.wait_for_url("**/teams/*/")
    pat.goto(f"{live_server.url}/tasks/{SLUG}/submit/")
    pat.set_input_files(
        "input[name=file]",
        files=[{"name": "early.jsonl", "mimeType": "text/plain", "buffer": run_file(KEYS)}],
    )
    pat.get_by_role("button", name="Upload run").click()
    refusal = pat.locator(".error-box[role=alert]:not([hidden])")
    refusal.wait_for()
    assert "has no pool yet: its organizers upload it before runs are accepted" in (
        refusal.inner_text()
    )
    assert not Run.objects.filter(task__slug=SLUG).exists()

    # -- The organizer: the overview says the open task falls short; closed until it is ready.
    olga.goto(f"{live_server.url}/tasks/{SLUG}/organize/")
    assert "although its checklist falls short" in olga.inner_text("#readiness-verdict")
    olga.get_by_role("button", name="Close the task").click()
    olga.wait_for_url(f"**/tasks/{SLUG}/organize/")
    assert f"Task {SLUG} closed." in olga.inner_text(".messages")

    # The pool, from the Data section: the early run stands in nobody's way.
    pool_check.locator("a").click()
    olga.wait_for_url(f"**/tasks/{SLUG}/organize/data/#upload-pool")
    pool = jsonl([{"key": k, "payload": payload(k)} for k in KEYS])
    data = f"**/tasks/{SLUG}/organize/data/"
    upload(olga, "#id_pool_file", "pool.jsonl", pool, then=data)
    assert f"loaded: {len(KEYS)} items" in upload_loaded(olga, pipeline)
    assert Item.objects.filter(task__slug=SLUG).count() == len(KEYS)
    # A second pool is refused: the banner at the top says why.
    upload(olga, "#id_pool_file", "again.tsv", b"z\n")
    banner = olga.locator("#refusal")
    banner.wait_for()
    assert "Your pool was not accepted" in banner.inner_text()
    assert f"already has its pool ({len(KEYS)} items)" in banner.inner_text()
    assert olga.evaluate("window.scrollY") == 0
    shoot(olga, "03c-pool-refused")
    gold = "".join(f"{k}\t{'correct' if i % 2 else 'incorrect'}\n" for i, k in enumerate(KEYS[:10]))
    upload(olga, "#id_gold_file", "gold.tsv", gold.encode(), then=data)
    assert "loaded: 10 created, 0 updated, 0 unchanged" in upload_loaded(olga, pipeline)

    # -- Four annotators, invited by mail at once from the People section. ---------------------
    olga.goto(f"{live_server.url}/tasks/{SLUG}/organize/")
    olga.locator("li[data-check=annotators] a").click()
    olga.wait_for_url(f"**/tasks/{SLUG}/organize/people/#annotators")
    olga.fill("#id_addresses", " ".join(f"{name}@example.org" for name in ANNOTATORS))
    olga.select_option("#id_mail_role", "annotator")
    olga.click("#invite-by-mail button[type=submit]")
    olga.locator("#invitations-mailed").wait_for()
    pipeline.drain()  # the invitations' mail
    invitations = {
        name: link_to(next(m for m in mail_files(mail_dir) if f"To: {name}@" in m), "/invitations/")
        for name in ANNOTATORS
    }
    for name, link in invitations.items():
        annotator = new_page(browser, errors)
        sign_up(annotator, live_server, mail_dir, name)
        annotator.goto(link)
        annotator.locator("button", has_text="Become an annotator").click()
        annotator.wait_for_url(f"**/annotate/{SLUG}/")
        annotator.context.close()
    assert Task.objects.get(slug=SLUG).annotators.count() == 4

    # -- The checklist is complete: the task opens from it. -------------------------------------
    olga.goto(f"{live_server.url}/tasks/{SLUG}/organize/")
    assert olga.inner_text("#readiness-verdict") == "Ready to open: nothing below is missing."
    marks = olga.locator("ul.checklist li.check-missing").count()
    assert marks == 0
    olga.get_by_role("button", name="Open the task").click()
    olga.wait_for_url(f"**/tasks/{SLUG}/organize/")
    assert f"Task {SLUG} opened: it takes runs." in olga.inner_text(".messages")

    # -- The participant's run is accepted now, validated and planned. -------------------------
    run = submit(pat, live_server, SLUG, "early", run_file(KEYS))
    pipeline.drain()
    run.refresh_from_db()
    assert run.state == Run.State.AWAITING_LABELS, (run.state, run.reason)
    assert run.n_predictions == len(KEYS)
    pat.reload()
    assert re.search(r"awaiting", pat.locator("#run-state").inner_text())
    assert errors == []
