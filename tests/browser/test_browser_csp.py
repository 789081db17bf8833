"""The Content-Security-Policy in real Chromium: every main page is served with a strict policy
(no inline script or style, nothing from other origins, no framing, no plugins, forms only to this
site) and works under it: Chromium reports no violation while each page loads and its scripts run
(the board's sort and charts, the annotate page's queue, Swagger UI)."""

import re

import numpy as np
import pytest
from django.contrib.auth import get_user_model

from leaderboard.models import Run

from pipeline_support import (
    PipelineDriver,
    add_run,
    annotator,
    answer_all,
    make_team,
)
from worlds import demo_task_world

pytestmark = pytest.mark.django_db(transaction=True)

N = 200
REQUIRED = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'self'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
}
# Reported by an init script (outside the page's policy) and by Chromium's console.
WATCH_VIOLATIONS = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', e => window.__csp.push(
  `${e.violatedDirective} blocked ${e.blockedURI || 'inline'} at ${e.sourceFile}:${e.lineNumber}`));
"""


@pytest.fixture
def world(monkeypatch):
    rng = np.random.default_rng(3)
    users = get_user_model().objects
    alice = users.create_user("alice", password="alice-pass")
    users.create_user("olga", password="olga-pass", is_staff=True)
    users.create_superuser("root", password="root-pass")
    base = demo_task_world(rng, n_items=N, reference=40, groups=8, target_half_width=0.15)
    task, truth = base.task, base.truth
    task.organizers.add(users.get(username="olga"))
    driver = PipelineDriver(monkeypatch)
    judge = annotator(task, "judge")
    teams = [make_team("Alpha", alice), make_team("Beta")]
    for k, size in enumerate((80, 120)):
        run = add_run(
            task, teams[k], rng.choice(N, size, replace=False), rng.random(size), name=f"sys-{k}"
        )
        driver.sent.append(("evaluation.plan_run", [run.pk]))
    for _ in range(30):
        driver.drain()
        if not answer_all(task, truth, judge):
            break
    driver.drain()
    # A late run leaves items pending for the annotator page.
    late = add_run(
        task, teams[1], rng.choice(N, 150, replace=False), rng.random(150), name="sys-late"
    )
    driver.sent.append(("evaluation.plan_run", [late.pk]))
    driver.drain()
    users.create_user("ann", password="ann-pass")
    task.annotators.add(users.get(username="ann"))
    return {"task": task, "run": Run.objects.get(name="sys-0")}


def policy_of(response) -> dict[str, str]:
    header = response.headers.get("content-security-policy")
    assert header, f"no Content-Security-Policy on {response.url}"
    return {d.split()[0]: " ".join(d.split()[1:]) for d in header.split(";") if d.strip()}


@pytest.fixture
def visit(page):
    page.add_init_script(WATCH_VIOLATIONS)
    console: list[str] = []
    page.on("console", lambda m: console.append(m.text) if m.type in ("error", "warning") else None)

    def go(url: str, ready: str | None = None) -> None:
        console.clear()
        response = page.goto(url)
        assert response.status == 200, (url, response.status)
        policy = policy_of(response)
        for directive, value in REQUIRED.items():
            assert policy.get(directive) == value, (url, directive, policy)
        assert "unsafe" not in response.headers["content-security-policy"]
        if ready:
            page.wait_for_selector(ready)
        page.wait_for_load_state("networkidle")
        reported = page.evaluate("window.__csp")
        refused = [m for m in console if "Content Security Policy" in m]
        assert reported == [] and refused == [], (url, reported, refused)
        assert page.js_errors == [], (url, page.js_errors)

    return go


def test_public_pages_and_the_api_docs(live_server, page, visit, world):
    visit(live_server.url + "/")
    visit(f"{live_server.url}/tasks/demo/", "svg")
    # The board's sort (its script) works under the policy.
    header = page.locator("th a, th button").filter(has_text=re.compile("recall", re.I)).first
    header.click()
    page.wait_for_load_state("networkidle")
    assert page.evaluate("window.__csp") == []
    visit(f"{live_server.url}/tasks/demo/snapshots/")
    visit(f"{live_server.url}/tasks/demo/overview/")
    visit(f"{live_server.url}/accounts/login/")
    visit(f"{live_server.url}/accounts/signup/")
    visit(f"{live_server.url}/accounts/password/reset/")
    visit(f"{live_server.url}/api/tasks/")  # DRF's browsable API
    visit(f"{live_server.url}/api/tasks/demo/board/")
    visit(f"{live_server.url}/api/docs/", ".swagger-ui .info")
    page.locator(".opblock-summary").first.click()  # Swagger UI's own scripts and styles
    page.wait_for_selector(".opblock-body")
    assert page.evaluate("window.__csp") == []


def test_participant_pages(live_server, page, visit, login, world):
    login(page, live_server, "alice", "alice-pass")
    visit(f"{live_server.url}/runs/{world['run'].pk}/", "#run-state")
    visit(f"{live_server.url}/tasks/demo/submit/", "input[name=file]")
    visit(f"{live_server.url}/tasks/demo/runs/")
    visit(f"{live_server.url}/teams/")
    visit(f"{live_server.url}/accounts/password/change/")
    visit(f"{live_server.url}/accounts/email/")
    visit(f"{live_server.url}/accounts/notifications/", "#mail-settings")


def test_annotator_page_runs_its_script(live_server, page, visit, login, world):
    login(page, live_server, "ann", "ann-pass")
    visit(f"{live_server.url}/annotate/")
    visit(f"{live_server.url}/annotate/demo/", "#ann-item[data-token]")


def test_organizer_pages(live_server, page, visit, login, world):
    login(page, live_server, "olga", "olga-pass")
    visit(f"{live_server.url}/tasks/demo/organize/", "#readiness")
    visit(f"{live_server.url}/tasks/demo/organize/settings/", "#preview-item table")
    visit(f"{live_server.url}/tasks/demo/organize/data/", "#upload-gold")
    visit(f"{live_server.url}/tasks/demo/organize/people/", "#invite-by-mail")
    visit(f"{live_server.url}/tasks/demo/organize/invite/mail/", "#id_addresses")
    visit(f"{live_server.url}/tasks/demo/organize/page/", "#upload-task-file")
    visit(f"{live_server.url}/tasks/demo/organize/board/", "#budget-spent")
    visit(f"{live_server.url}/tasks/demo/organize/phases/", "#phases-form")
    # A refusal's banner, focused by its script, and its link that moves the focus to the field.
    page.fill("#id_reveal_at", "soon")
    page.click("#phases-form button[type=submit]")
    page.locator("#refusal").wait_for()
    page.wait_for_function("document.activeElement.id === 'refusal'")
    page.click("#refusal a[href='#id_reveal_at']")
    page.wait_for_function("document.activeElement.id === 'id_reveal_at'")
    assert page.evaluate("window.__csp") == [] and page.js_errors == []
    visit(f"{live_server.url}/annotate/demo/queue/")
    visit(f"{live_server.url}/api/tasks/", "form")  # the browsable API with its forms
    visit(f"{live_server.url}/api/tasks/demo/")


def test_admin_pages(live_server, page, visit, login, world):
    login(page, live_server, "root", "root-pass")
    visit(f"{live_server.url}/admin/")
    visit(f"{live_server.url}/admin/leaderboard/task/")
    visit(f"{live_server.url}/admin/leaderboard/task/{world['task'].pk}/change/")
    visit(f"{live_server.url}/admin/auth/user/add/")
