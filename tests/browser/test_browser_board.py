"""The public board in real Chromium, on snapshots the pipeline (driven in-process) computed:
values with intervals, the provisional badge and rank text; sorting by each metric through the
column headers (mouse and keyboard); snapshot permalinks; CSV and JSON downloads; an organizer
holding the board and publishing it."""

import csv
import json
import re
from itertools import pairwise

import numpy as np
import pytest
from django.contrib.auth import get_user_model

from leaderboard.models import LeaderboardSnapshot, Task

from pipeline_support import (
    PipelineDriver,
    add_run,
    annotator,
    answer_all,
    make_team,
)
from worlds import demo_task_world

pytestmark = pytest.mark.django_db(transaction=True)

N = 300


@pytest.fixture
def world(monkeypatch):
    rng = np.random.default_rng(5)
    org = get_user_model().objects.create_user("olga", password="olga-pass")
    base = demo_task_world(rng, n_items=N, reference=60, groups=12, target_half_width=0.12)
    task, truth = base.task, base.truth
    task.organizers.add(org)
    teams = [make_team("Alpha"), make_team("Beta")]
    driver = PipelineDriver(monkeypatch)
    world = {
        "task": task,
        "truth": truth,
        "driver": driver,
        "annotator": annotator(task),
        "teams": teams,
        "rng": rng,
    }
    for k, size in enumerate((120, 200, 80)):
        new_run(world, f"sys-{k}", size, teams[k % 2])
    settle(world)
    # A fourth run, planned but not answered yet: provisional on the next snapshot.
    new_run(world, "sys-late", 100, teams[1])
    driver.drain()
    driver.sent.append(("evaluation.estimate_task", [task.pk]))
    driver.drain()
    return world


def new_run(world, name, size, team):
    rng = world["rng"]
    run = add_run(
        world["task"], team, rng.choice(N, size, replace=False), rng.random(size), name=name
    )
    world["driver"].sent.append(("evaluation.plan_run", [run.pk]))
    return run


def settle(world):
    for _ in range(30):
        world["driver"].drain()
        if not answer_all(world["task"], world["truth"], world["annotator"]):
            world["driver"].drain()
            return
    raise AssertionError("pipeline did not settle")


def latest_published(task):
    return (
        LeaderboardSnapshot.objects.filter(task=task, published=True).order_by("-version").first()
    )


def expected_order(snapshot, metric):
    rows = snapshot.rows
    return [
        r["name"]
        for r in sorted(
            rows,
            key=lambda r: (
                r[metric]["value"] is None,
                -(r[metric]["value"] or 0),
                r["name"],
                r["run"],
            ),
        )
    ]


def expected_rank_text(row, metric):
    rank = (row.get("rank") or {}).get(metric)
    if not rank:
        return "—"
    best, worst = rank["best"], rank["worst"]
    return str(best) if best == worst else f"{best}\u2013{worst}"


def as_stored(row):
    """An exported row without what the export adds to the stored one (the board's words)."""
    row = {k: v for k, v in row.items() if k not in ("after_deadline", "state_text")}
    for metric in ("recall", "f1"):
        row[metric] = {k: v for k, v in row[metric].items() if k != "reference_too_small"}
    row["rank"] = {
        m: None if rank is None else {k: v for k, v in rank.items() if k != "text"}
        for m, rank in row["rank"].items()
    }
    return row


def shown_order(page):
    return page.locator("table.board tbody td.run-name > :first-child").all_inner_texts()


def test_read_sort_open_snapshot_and_export(live_server, page, world):
    snapshot = latest_published(world["task"])
    by_name = {r["name"]: r for r in snapshot.rows}
    assert by_name["sys-late"]["provisional"] and not by_name["sys-0"]["provisional"]
    page.goto(f"{live_server.url}/tasks/demo/")
    assert f"v{snapshot.version}" in page.locator(".snapshot-meta").inner_text()
    assert "95% confidence intervals" in page.locator(".stats-note").inner_text()
    assert shown_order(page) == expected_order(snapshot, "f1")
    for tr in page.locator("table.board tbody tr").all():
        name = tr.locator("td.run-name > :first-child").inner_text()
        row = by_name[name]
        f1 = tr.locator("td.metric").nth(2)
        value, low, high = row["f1"]["value"], row["f1"]["low"], row["f1"]["high"]
        if value is None:
            # Not identifiable yet (a provisional run none of whose own draws is answered, with
            # the annotators' error rates uncertain): a dash, never a made-up number.
            assert row["provisional"] and f1.locator(".value").inner_text() == "\u2014"
            assert f1.locator(".plus").count() == 0
        else:
            assert f1.locator(".value").inner_text() == f"{value:.3f}"
            assert f1.locator(".plus").inner_text() == f"+{high - value:.3f}"
            assert f1.locator(".minus").inner_text() == f"\u2212{value - low:.3f}"
            assert f"[{low:.3f}, {high:.3f}]" in f1.get_attribute("title")
        assert tr.locator(".provisional-badge").count() == (1 if row["provisional"] else 0)
        assert tr.locator("td.rank").inner_text().strip() == expected_rank_text(row, "f1")
    assert page.locator("figure.interval-plot svg").count() == 1

    # Sort by each metric through the header links (the last one from the keyboard).
    for metric in ("precision", "recall"):
        page.locator(f"a.sort-link[data-metric={metric}]").click()
        page.wait_for_url(f"**/tasks/demo/?sort={metric}")
        assert shown_order(page) == expected_order(snapshot, metric)
        ranks = [t.strip() for t in page.locator("td.rank").all_inner_texts()]
        names = shown_order(page)
        assert ranks == [expected_rank_text(by_name[n], metric) for n in names]
    page.locator("a.sort-link[data-metric=f1]").focus()
    page.keyboard.press("Enter")
    page.wait_for_url("**/tasks/demo/?sort=f1")
    assert shown_order(page) == expected_order(snapshot, "f1")

    # An older snapshot through the list of snapshots.
    page.get_by_role("link", name="Snapshots").click()
    page.get_by_role("link", name="v1", exact=True).click()
    page.wait_for_url("**/tasks/demo/snapshots/1/")
    assert (
        f"Snapshot 1 of {snapshot.version}, not the latest"
        in page.locator(".banner.old").inner_text()
    )

    # Downloads of the latest snapshot.
    page.goto(f"{live_server.url}/tasks/demo/")
    with page.expect_download() as info:
        page.locator(".downloads a", has_text="CSV").click()
    with open(info.value.path(), encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert sorted(r["name"] for r in rows) == sorted(by_name)
    # A value not identifiable yet is an empty cell.
    assert {r["name"]: float(r["f1_value"]) if r["f1_value"] else None for r in rows} == {
        n: r["f1"]["value"] for n, r in by_name.items()
    }
    with page.expect_download() as info:
        page.locator(".downloads a", has_text="JSON").click()
    with open(info.value.path(), encoding="utf-8") as fh:
        data = json.load(fh)
    # The rows as stored, each marked whether its run came after the deadline (none here), with
    # the board's words beside them.
    assert data["version"] == snapshot.version
    assert [as_stored(row) for row in data["rows"]] == snapshot.rows
    assert all(row["after_deadline"] is False and row["state_text"] for row in data["rows"])
    assert info.value.suggested_filename == f"demo-v{snapshot.version}.json"
    assert page.js_errors == []


def test_organizer_holds_then_publishes(live_server, browser, page, login, world):
    before = latest_published(world["task"])
    login(page, live_server, "olga", "olga-pass")
    page.goto(f"{live_server.url}/tasks/demo/")
    page.get_by_role("button", name="Hold the board").click()
    assert "The public board is held" in page.locator(".banner.organizer").inner_text()

    new_run(world, "sys-after-deadline", 90, world["teams"][0])
    world["driver"].drain()
    world["driver"].sent.append(("evaluation.estimate_task", [world["task"].pk]))
    world["driver"].drain()
    assert LeaderboardSnapshot.objects.filter(task=world["task"], published=False).count() == 1

    public = browser.new_context().new_page()
    try:
        public.goto(f"{live_server.url}/tasks/demo/")
        assert "sys-after-deadline" not in public.content()
        assert (
            f"Results are being held by the organizers; last published: version {before.version}"
        ) in public.locator(".banner.held").inner_text()

        page.reload()
        assert (
            "1 snapshot waiting for publication" in page.locator(".banner.organizer").inner_text()
        )
        page.get_by_role("button", name=re.compile(r"^Publish")).click()
        assert "Published" in page.locator(".messages").inner_text()

        public.reload()
        assert "sys-after-deadline" in public.locator("table.board").inner_text()
        assert public.locator(".banner.held").count() == 0
    finally:
        public.context.close()
    assert not Task.objects.get(pk=world["task"].pk).board_held


def expected_pairs(snapshot, metric):
    """The pair view's lines, worked out here from the stored pairs (issue 31)."""
    ranking = snapshot.details["ranking"]
    assert ranking["method"] == "paired-differences-max-t"
    stored = {(a, b): (d, lo, hi) for a, b, d, lo, hi in ranking["pairs"][metric]}
    by_name = {r["name"]: r for r in snapshot.rows}
    ranked = [by_name[n] for n in expected_order(snapshot, metric) if by_name[n]["rank"][metric]]
    lines = []
    for upper, lower in pairwise(ranked):
        key = (upper["run"], lower["run"])
        if key in stored:
            d, lo, hi = stored[key]
        else:
            d, lo, hi = stored[key[::-1]]
            d, lo, hi = -d, -hi, -lo
        if lo > 0 or hi < 0:
            first, second = (upper, lower) if lo > 0 else (lower, upper)
            claim = f"{first['name']} above {second['name']} with 95% confidence"
        else:
            claim = f"{upper['name']} and {lower['name']} not separated at 95% confidence"
        lines.append(f"{claim}; difference {d:.3f} [{lo:.3f}, {hi:.3f}]")
    return lines


def test_neighbours_on_the_board_and_on_a_run_page(live_server, page, world):
    snapshot = latest_published(world["task"])
    page.goto(f"{live_server.url}/tasks/demo/")
    expected = expected_pairs(snapshot, "f1")
    assert expected  # at least two runs ranked on F1
    assert page.locator("#pairs h2").inner_text() == "Neighbours by F1"
    assert page.locator("#pairs li").all_inner_texts() == expected
    assert "paired differences" in page.locator("#rank-method").inner_text()
    page.locator("a.sort-link[data-metric=precision]").click()
    page.wait_for_url("**/tasks/demo/?sort=precision")
    assert page.locator("#pairs li").all_inner_texts() == expected_pairs(snapshot, "precision")
    # The top run's page compares it with the run below it, per measure.
    page.locator("table.board tbody td.run-name a").first.click()
    lines = page.locator("#neighbours li").all_inner_texts()
    assert lines and all(line.split(": ", 1)[0] in ("Precision", "Recall", "F1") for line in lines)
    assert any(line.split(": ", 1)[1] == expected_pairs(snapshot, "precision")[0] for line in lines)
    assert page.js_errors == []
