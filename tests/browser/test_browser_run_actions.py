"""A participant in real Chromium: the submit page shows the limits and refuses a file over the
byte limit before sending a byte, in the words the server uses (under the page's CSP, no script
error); a file within it goes through, named after the file; the run is withdrawn from its
page."""

import re

import numpy as np
import pytest
from django.contrib.auth import get_user_model

from leaderboard.models import Run
from leaderboard.services.runs import SubmissionError, check_size

from pipeline_support import make_team
from worlds import demo_task_world

pytestmark = pytest.mark.django_db(transaction=True)

# 1.25 KiB and 2.75 KiB: halves in tenths, which both sides round to even (1.2, 2.8).
LIMIT, OVER = 1280, 2816


@pytest.fixture
def world():
    rng = np.random.default_rng(5)
    alice = get_user_model().objects.create_user("alice", password="alice-pass")
    task = demo_task_world(rng, n_items=50, reference=10, groups=5, target_half_width=0.1).task
    task.max_upload_bytes = LIMIT
    task.save()
    make_team("Alpha", alice)
    return task


def server_words(task, size: int) -> str:
    with pytest.raises(SubmissionError) as info:
        check_size(task=task, size=size)
    return info.value.message


def test_an_oversize_file_is_refused_in_the_browser_in_the_servers_words(
    live_server, page, login, world
):
    login(page, live_server, "alice", "alice-pass")
    page.goto(f"{live_server.url}/tasks/demo/submit/")
    limits = page.locator("#limits").inner_text()
    assert "at most 1.2 KiB" in limits and "submissions left today" in limits
    posts = []
    page.on("request", lambda request: posts.append(request) if request.method == "POST" else None)

    big = b"".join(f"k{i % 50}\t0.5\n".encode() for i in range(400))[:OVER]
    assert len(big) == OVER
    page.set_input_files(
        "input[name=file]", files=[{"name": "big.tsv", "mimeType": "text/plain", "buffer": big}]
    )
    box = page.locator("#size-error")
    box.wait_for(state="visible")
    words = server_words(world, OVER)
    assert words == "the file is 2.8 KiB, over the limit of 1.2 KiB for task 'demo'"
    assert box.inner_text() == f"Your run was not sent: {words}; nothing was uploaded or counted."
    page.get_by_role("button", name="Upload run").click()
    page.wait_for_timeout(300)
    assert posts == [] and page.url.endswith("/tasks/demo/submit/")
    assert not Run.objects.exists()

    small = b"k1\t0.9\nk2\t0.4\n"
    page.set_input_files(
        "input[name=file]",
        files=[{"name": "bm25 small.tsv", "mimeType": "text/plain", "buffer": small}],
    )
    assert box.is_hidden()
    page.get_by_role("button", name="Upload run").click()
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    assert page.locator("h1").inner_text().startswith("bm25 small")
    run = Run.objects.get()
    assert run.name == "bm25 small"

    page.locator("#withdraw summary").click()
    page.locator("#withdraw-button").click()
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    assert page.locator("#run-state").inner_text() == "withdrawn"
    assert "Run withdrawn" in page.locator(".messages").inner_text()
    run.refresh_from_db()
    assert run.state == Run.State.WITHDRAWN and run.quota_refunded
    assert page.js_errors == []
