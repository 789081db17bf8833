"""A closed pool's public board in real Chromium (issue 31): the neighbours it shows come from
the paired differences its estimation stored, on each measure the board sorts by, and a run's
page compares it with its neighbour per measure, as an open task's board does
(test_browser_board)."""

import pytest
from test_browser_board import expected_pairs

from leaderboard.models import LeaderboardSnapshot

from pipeline_support import PipelineDriver
from pool_pipeline import pool_world, settle

pytestmark = pytest.mark.django_db(transaction=True)

MEASURES = ("precision", "recall", "f1", "mcc")


@pytest.fixture
def world(monkeypatch):
    driver = PipelineDriver(monkeypatch)  # before the runs are submitted: it takes their messages
    world = pool_world(target_half_width=0.2, measures=MEASURES)
    settle(driver, world)
    return world


def test_a_closed_pools_board_shows_its_neighbours_from_paired_differences(
    live_server, page, world
):
    snapshot = (
        LeaderboardSnapshot.objects.filter(task=world.task, published=True)
        .order_by("-version")
        .first()
    )
    assert snapshot is not None
    page.goto(f"{live_server.url}/tasks/{world.task.slug}/")
    assert "paired differences" in page.locator("#rank-method").inner_text()
    expected = expected_pairs(snapshot, "f1")
    assert len(expected) == len(world.runs) - 1
    assert page.locator("#pairs h2").inner_text() == "Neighbours by F1"
    assert page.locator("#pairs li").all_inner_texts() == expected
    for metric in ("mcc", "recall"):
        page.locator(f"a.sort-link[data-metric={metric}]").click()
        page.wait_for_url(f"**/tasks/{world.task.slug}/?sort={metric}")
        assert page.locator("#pairs li").all_inner_texts() == expected_pairs(snapshot, metric)
    page.locator("table.board tbody td.run-name a").first.click()
    lines = page.locator("#neighbours li").all_inner_texts()
    names = {"Precision", "Recall", "F1", "MCC"}
    assert lines and all(line.split(": ", 1)[0] in names for line in lines)
    assert page.js_errors == []
