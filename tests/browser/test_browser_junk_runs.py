"""Junk runs in real Chromium, under the Content-Security-Policy: a comma-separated file with a
header is refused on the submit page with its hint above the form; a run of keys with a score
glued on is held, its team reads why on its run page, and the organizer releases it from the
organize page."""

import json
import re

import numpy as np
import pytest
from django.contrib.auth import get_user_model

from leaderboard.models import Run

from pipeline_support import PipelineDriver, make_team
from worlds import demo_task_world

pytestmark = pytest.mark.django_db(transaction=True)

WATCH_VIOLATIONS = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', e => window.__csp.push(e.violatedDirective));
"""


@pytest.fixture
def world(monkeypatch):
    users = get_user_model().objects
    alice = users.create_user("alice", password="alice-pass")
    olga = users.create_user("olga", password="olga-pass")
    base = demo_task_world(
        np.random.default_rng(5), n_items=120, reference=30, groups=6, target_half_width=0.1
    )
    base.task.organizers.add(olga)
    make_team("Alpha", alice)
    return {"task": base.task, "driver": PipelineDriver(monkeypatch)}


def upload(page, live_server, name: str, data: bytes, run_name: str) -> None:
    page.goto(f"{live_server.url}/tasks/demo/submit/")
    page.set_input_files(
        "input[name=file]", files=[{"name": name, "mimeType": "text/plain", "buffer": data}]
    )
    page.fill("input[name=name]", run_name)
    page.get_by_role("button", name="Upload run").click()
    page.wait_for_load_state()


def test_a_csv_file_is_refused_and_a_junk_run_held_then_released(
    live_server, browser_context, login, world
):
    browser_context.add_init_script(WATCH_VIOLATIONS)
    page = browser_context.new_page()
    login(page, live_server, "alice", "alice-pass")
    csv = b"key,score\n" + b"".join(f"k{i},0.{i % 10}\n".encode() for i in range(40))
    upload(page, live_server, "preds.csv", csv, "from excel")
    alert = page.get_by_role("alert")
    assert alert.inner_text().startswith(
        "Your run was not accepted: line 1: this looks like CSV (comma-separated): separate key "
        "and score with a tab, and remove the header line"
    )
    form_top = page.locator("form[enctype='multipart/form-data']").bounding_box()["y"]
    assert alert.bounding_box()["y"] < form_top  # the hint above the form
    assert page.input_value("input[name=name]") == "from excel"  # the form keeps what was typed
    assert [m for m in world["driver"].sent if m[0] == "evaluation.ingest_run"] == []

    junk = "".join(json.dumps({"key": f"k{i},0.9000"}) + "\n" for i in range(40)).encode()
    upload(page, live_server, "preds.jsonl", junk, "glued")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    world["driver"].drain()  # the worker validates it: held, nothing planned
    run = Run.objects.get(name="glued")
    assert run.state == Run.State.HELD
    page.reload()
    assert page.locator("#run-state").inner_text() == "held for the organizers"
    assert "40 of its 40 keys match no item of the task and look malformed" in page.inner_text(
        ".reason"
    )

    organizer = browser_context.browser.new_context()
    organizer.add_init_script(WATCH_VIOLATIONS)
    olga = organizer.new_page()
    login(olga, live_server, "olga", "olga-pass")
    olga.goto(f"{live_server.url}/tasks/demo/organize/")  # the overview: what waits for you
    held = olga.locator("#held-runs")
    assert "glued" in held.inner_text() and "Alpha" in held.inner_text()
    held.get_by_role("button", name="Release").click()
    olga.wait_for_url(re.compile(r"/tasks/demo/organize/$"))
    assert "Run 'glued' of team Alpha released" in olga.inner_text(".messages")
    assert olga.locator("#held-runs").count() == 0
    run.refresh_from_db()
    assert run.state == Run.State.RECEIVED
    world["driver"].drain()  # validated again, not held again, then planned
    run.refresh_from_db()
    assert run.state not in (Run.State.HELD, Run.State.RECEIVED, Run.State.REJECTED), run.reason
    assert olga.evaluate("window.__csp") == [] and page.evaluate("window.__csp") == []
    organizer.close()
