"""Script payloads in every user-writable field never run in a real browser: every page is
loaded (anonymous, team member, organizer) and ``window.__xss`` stays undefined."""

import pytest
from django.contrib.auth import get_user_model

from evaluation.core.measures import OPEN_MEASURES
from leaderboard.models import Estimate, RunEvent, Task

from pipeline_support import add_items, add_run, make_task, make_team
from worlds import stored_snapshot

pytestmark = pytest.mark.django_db(transaction=True)

SCRIPT = "<script>window.__xss=1</script>"
BREAKOUT = '"><img src=x onerror="window.__xss=1">'
SVG = "<svg onload=window.__xss=1>"
JS_LINK = "javascript:window.__xss=1"


@pytest.fixture
def hostile():
    User = get_user_model()
    member = User.objects.create_user("mallory", password="pw-mallory")
    org = User.objects.create_user("olga", password="pw-olga")
    task = make_task(
        slug="xss", title=SCRIPT, description=BREAKOUT + SVG, question=SCRIPT, state=Task.State.OPEN
    )
    task.organizers.add(org)
    add_items(task, 4)
    team = make_team(BREAKOUT, member)
    runs = [add_run(task, team, [0, 1], name=SCRIPT), add_run(task, team, [1, 2], name=SVG)]
    for run, link in zip(runs, (JS_LINK, " JAVASCRIPT:window.__xss=1"), strict=True):
        run.description, run.link, run.reason = BREAKOUT + "\n" + SCRIPT, link, SVG
        run.errors, run.error_count = [{"line": 1, "message": SCRIPT}], 1
        run.save()
        RunEvent.objects.create(run=run, state="queued", reason=BREAKOUT)
    rows = [
        {
            "run": r.pk,
            "name": r.name,
            "team": team.name,
            "state": r.state,
            "provisional": True,
            "n_predictions": 2,
            "n_requested": 2,
            "n_verified": 1,
            **{
                m: {
                    "value": 0.5 + i / 10,
                    "low": 0.3,
                    "high": 0.8,
                    "labels_used": 4,
                    "method": SCRIPT,
                }
                for m in OPEN_MEASURES
            },
            "rank": {m: {"best": 1, "worst": 2} for m in OPEN_MEASURES},
        }
        for i, r in enumerate(runs)
    ]
    for version, published in ((1, True), (2, False)):
        snap = stored_snapshot(
            task,
            rows,
            version=version,
            published=published,
            engine_version=SCRIPT,
            labels_version=1,
            reference_version=1,
            n_labels=4,
            details={"ranking": {"method": BREAKOUT}},
        )
        Estimate.objects.bulk_create(
            [
                Estimate(
                    snapshot=snap,
                    run=r,
                    metric=m,
                    value=0.5,
                    low=0.3,
                    high=0.8,
                    level=0.95,
                    labels_used=4,
                    method=SCRIPT,
                )
                for r in runs
                for m in OPEN_MEASURES
            ]
        )
    return {"task": task, "runs": runs}


def visit_all(page, base, urls):
    for url in urls:
        response = page.goto(base + url)
        assert response.status == 200, url
        page.wait_for_load_state("load")
        assert page.evaluate("typeof window.__xss") == "undefined", url
        assert page.locator("a[href^='javascript:' i]").count() == 0, url


def test_payloads_never_execute(live_server, page, login, hostile):
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    public = [
        "/",
        "/tasks/xss/",
        "/tasks/xss/?sort=precision",
        "/tasks/xss/snapshots/",
        "/tasks/xss/snapshots/1/",
    ]
    visit_all(page, live_server.url, public)
    run_pages = [f"/runs/{r.pk}/" for r in hostile["runs"]]
    login(page, live_server, "mallory", "pw-mallory")
    visit_all(
        page, live_server.url, [*public, "/tasks/xss/runs/", "/tasks/xss/submit/", *run_pages]
    )
    page.context.clear_cookies()
    login(page, live_server, "olga", "pw-olga")
    visit_all(
        page,
        live_server.url,
        [
            *public,
            "/tasks/xss/runs/",
            *(
                f"/tasks/xss/organize/{section}"
                for section in ("", "settings/", "data/", "people/", "page/", "phases/", "board/")
            ),
            "/tasks/xss/snapshots/2/",
            *run_pages,
        ],
    )
    # The payloads are on the page as text.
    page.goto(live_server.url + "/tasks/xss/")
    assert SCRIPT in page.locator("h1").inner_text()
    assert dialogs == [] and page.js_errors == []
