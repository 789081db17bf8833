"""A participant in real Chromium: submit a run through the page, find it on "my runs", and watch
its state and progress bar move as the pipeline (driven in-process) validates, plans, gets
answers and scores it."""

import re

import numpy as np
import pytest
from django.contrib.auth import get_user_model

from annotation.models import VerificationRequest
from annotation.services import submit_judgment
from leaderboard.models import Run
from leaderboard.services.ingest import ingest_run

from pipeline_support import PipelineDriver, annotator, answer_all, make_team
from worlds import demo_task_world

pytestmark = pytest.mark.django_db(transaction=True)

N = 300


@pytest.fixture
def world(monkeypatch):
    rng = np.random.default_rng(11)
    alice = get_user_model().objects.create_user("alice", password="alice-pass")
    base = demo_task_world(rng, n_items=N, reference=60, groups=12, target_half_width=0.1)
    task, truth = base.task, base.truth
    make_team("Alpha", alice)
    keys = rng.choice(N, 150, replace=False)
    run_file = "".join(f"k{k}\t{s:.3f}\n" for k, s in zip(keys, rng.random(150), strict=True))
    return {
        "task": task,
        "truth": truth,
        "driver": PipelineDriver(monkeypatch),
        "annotator": annotator(task),
        "file": run_file.encode(),
    }


def worker_validates(driver) -> None:
    """The worker's first job: the upload's validation (the plan it sends stays queued)."""
    name, args = driver.sent.pop(0)
    assert name == "evaluation.ingest_run"
    ingest_run(*args)


def wait_for_state(page, state: str) -> None:
    """The run page refreshes itself while the file is validated."""
    page.wait_for_function(
        "s => document.querySelector('#run-state').innerText === s", arg=state, timeout=15_000
    )


def progress(page) -> tuple[int, int]:
    text = page.locator("#run-progress .progress-text").inner_text()
    verified, requested = map(int, re.match(r"(\d+) of (\d+) items? verified", text).groups())
    bar = page.locator("#run-progress [role=progressbar]")
    assert int(bar.get_attribute("aria-valuenow")) == verified
    return verified, requested


def test_submit_through_the_page_and_watch_progress(live_server, page, login, world):
    login(page, live_server, "alice", "alice-pass")
    page.goto(f"{live_server.url}/tasks/demo/submit/")
    page.set_input_files(
        "input[name=file]",
        files=[
            {"name": "preds.tsv", "mimeType": "text/tab-separated-values", "buffer": world["file"]}
        ],
    )
    page.fill("input[name=name]", "alice-bert")
    page.get_by_role("button", name="Upload run").click()
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    assert page.locator("h1").inner_text().startswith("alice-bert")
    assert page.locator("#run-state").inner_text() == "received"
    worker_validates(world["driver"])
    wait_for_state(page, "queued")
    run = Run.objects.get(name="alice-bert")
    assert run.n_predictions == 150

    page.get_by_role("link", name="runs", exact=True).click()
    row = page.locator(f"tr[data-run='{run.pk}']")
    assert "alice-bert" in row.inner_text() and "queued" in row.inner_text()
    assert "of 20 in total" in page.locator(".quota").inner_text()

    # The worker plans the run: items go to annotators.
    world["driver"].drain()
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    assert page.locator("#run-state").inner_text() == "awaiting labels"
    verified, requested = progress(page)
    assert verified == 0 and requested > 0

    # Half of the items are answered; the estimate updates the progress.
    pending = list(
        VerificationRequest.objects.filter(task=world["task"], state="pending")
        .select_related("item")
        .order_by("id")
    )
    half = pending[: len(pending) // 2]
    for request in half:
        submit_judgment(
            request_id=request.pk,
            annotator=world["annotator"],
            answer="correct" if world["truth"][request.item.index] else "incorrect",
        )
    world["driver"].drain()
    page.reload()
    assert progress(page) == (len(half), requested)
    assert page.locator("#run-state").inner_text() == "awaiting labels"

    # Everything else is answered until the run is scored.
    for _ in range(30):
        world["driver"].drain()
        if not answer_all(world["task"], world["truth"], world["annotator"]):
            world["driver"].drain()
            break
    page.reload()
    assert page.locator("#run-state").inner_text() in ("scored", "partial")
    verified, requested = progress(page)
    assert verified == requested > 0
    scores = page.locator("table.scores")
    assert scores.locator("tr[data-metric]").count() == 3
    assert re.search(
        r"\d\.\d{3} \+\d\.\d{3} / \u2212\d\.\d{3}",
        scores.locator("tr[data-metric=precision] td.metric").inner_text(),
    )

    page.goto(f"{live_server.url}/tasks/demo/runs/")
    row = page.locator(f"tr[data-run='{run.pk}']")
    assert re.search(r"\d\.\d{3}", row.inner_text()) and "not published" not in row.inner_text()
    assert page.js_errors == []


def test_rejected_upload_shows_problems_by_line(live_server, page, login, world):
    login(page, live_server, "alice", "alice-pass")
    page.goto(f"{live_server.url}/tasks/demo/submit/")
    page.set_input_files(
        "input[name=file]",
        files=[
            {"name": "bad.tsv", "mimeType": "text/plain", "buffer": b"k1\t0.5\nk2\tlots\nk3\t9\n"}
        ],
    )
    page.get_by_role("button", name="Upload run").click()
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    worker_validates(world["driver"])
    wait_for_state(page, "rejected")
    problems = page.locator("ol.problems").inner_text()
    assert "line 2" in problems and "line 3" in problems
