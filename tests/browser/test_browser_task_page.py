"""The task page in real Chromium: Markdown (with hostile text in every field) drawn under the
Content-Security-Policy with no violation and no script run; the organizer's live preview; a
participant who accepts the terms on the submit page, downloads a data file and submits."""

import re

import pytest
from django.contrib.auth import get_user_model
from hostile_markup import HOSTILE
from test_browser_csp import WATCH_VIOLATIONS
from test_browser_walkthrough import shoot

from leaderboard.models import Run, Task, TermsAcceptance
from leaderboard.services.task_files import add_task_file
from leaderboard.services.tasks import update_task

from pipeline_support import PipelineDriver, add_items, make_task, make_team

pytestmark = pytest.mark.django_db(transaction=True)

OVERVIEW = """\
# Record linkage

Find the pairs of records that describe **the same person**.

| file | lines |
|:-----|------:|
| pairs.jsonl | 2 |

```
key<TAB>score
```

[The data set](https://example.org/febrl)
"""
RULES = "1. One team per person.\n2. At most 5 runs per team per day.\n"
TERMS = "Runs are **published** under your team's name."


@pytest.fixture
def hostile_world(world):
    """The task with hostile text after the Markdown of each of its page's fields."""
    hostile = "\n\n".join(HOSTILE)
    return update_task(
        task=world, description=OVERVIEW + hostile, rules=RULES + hostile, terms=TERMS + hostile
    )


@pytest.fixture
def world(monkeypatch):
    PipelineDriver(monkeypatch)  # pipeline messages are recorded, not sent to a broker
    users = get_user_model().objects
    olga = users.create_user("olga", password="olga-pass")
    mallory = users.create_user("mallory", password="mallory-pass")
    task = make_task(slug="linkage", title="Record linkage", state=Task.State.OPEN)
    task.organizers.add(olga)
    add_items(task, 3)
    update_task(task=task, description=OVERVIEW, rules=RULES, terms=TERMS)
    add_task_file(
        task=task,
        user=olga,
        upload=_named(b'{"key": "k0"}\n{"key": "k1"}\n', "pairs.jsonl"),
        title="Record pairs",
    )
    make_team("Alpha", mallory)
    return task


def _named(body: bytes, name: str):
    import io

    stream = io.BytesIO(body)
    stream.name = name
    return stream


@pytest.fixture
def watched(page):
    page.add_init_script(WATCH_VIOLATIONS)
    console: list[str] = []
    page.on("console", lambda m: console.append(m.text) if m.type in ("error", "warning") else None)

    def check(url: str) -> None:
        page.wait_for_load_state("networkidle")
        assert page.evaluate("window.__csp") == [], url
        assert [m for m in console if "Content Security Policy" in m] == [], url
        assert page.evaluate("window.__xss") is None, url
        assert page.js_errors == [], url

    return check


def test_the_markdown_page_is_drawn_under_the_policy_and_runs_nothing(
    live_server, page, watched, hostile_world
):
    page.goto(f"{live_server.url}/tasks/linkage/overview/")
    watched("overview")
    overview = page.locator("#overview .page-text")
    assert overview.locator("h3").first.inner_text() == "Record linkage"
    assert overview.locator("td.align-right").first.inner_text() == "2"
    link = overview.locator("a[href='https://example.org/febrl']")
    assert link.get_attribute("rel") == "nofollow noopener noreferrer"
    assert page.locator("#overview script, #rules script, #terms script").count() == 0
    assert page.locator("#rules").inner_text().count("<script>window.__xss=1</script>") >= 1
    assert page.locator("#data").inner_text().count("Record pairs") == 1


def test_the_organizer_previews_the_page_as_they_type(live_server, page, watched, login, world):
    login(page, live_server, "olga", "olga-pass")
    page.goto(f"{live_server.url}/tasks/linkage/organize/page/")
    watched("organize")
    preview = page.locator("#id_rules-preview")
    page.fill("#id_rules", "## Rules\n\n1. *One* account each\n\n<script>window.__xss=1</script>")
    page.wait_for_function(
        "() => document.querySelector('#id_rules-preview h4') !== null", timeout=10_000
    )
    assert preview.locator("h4").inner_text() == "Rules"
    assert preview.locator("li em").inner_text() == "One"
    page.evaluate("document.getElementById('task-page').scrollIntoView()")
    shoot(page, "03b-task-page-preview")
    assert "<script>window.__xss=1</script>" in preview.inner_text()
    page.get_by_role("button", name="Save the task page").click()
    page.wait_for_url(re.compile(r"/organize/page/$"))
    watched("organize after saving")
    world.refresh_from_db()
    assert world.rules.startswith("## Rules")


def test_a_participant_accepts_the_terms_downloads_and_submits(
    live_server, page, watched, login, world, tmp_path
):
    login(page, live_server, "mallory", "mallory-pass")
    page.goto(f"{live_server.url}/tasks/linkage/overview/")
    assert "accept them for your team" in page.locator("#data-access").inner_text()
    page.evaluate("document.getElementById('rules').scrollIntoView()")
    shoot(page, "03a-task-page")
    page.goto(f"{live_server.url}/tasks/linkage/submit/")
    watched("submit")
    assert "published" in page.locator("#terms .terms-text").inner_text()
    shoot(page, "06a-terms")
    page.get_by_role("button", name="Accept the terms for Alpha").click()
    page.wait_for_url(re.compile(r"/submit/$"))
    assert "accepted by mallory" in page.locator("#terms").inner_text()
    assert TermsAcceptance.objects.get().team.name == "Alpha"
    page.goto(f"{live_server.url}/tasks/linkage/overview/")
    with page.expect_download() as download_info:
        page.get_by_role("link", name="Record pairs").click()
    download = download_info.value
    assert download.suggested_filename == "pairs.jsonl"
    saved = tmp_path / "pairs.jsonl"
    download.save_as(saved)
    assert saved.read_bytes() == b'{"key": "k0"}\n{"key": "k1"}\n'
    page.goto(f"{live_server.url}/tasks/linkage/submit/")
    page.set_input_files(
        "input[name=file]",
        files=[{"name": "run.tsv", "mimeType": "text/plain", "buffer": b"k0\t0.9\nk1\t0.2\n"}],
    )
    page.get_by_role("button", name="Upload run").click()
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    assert Run.objects.get().team.name == "Alpha"
