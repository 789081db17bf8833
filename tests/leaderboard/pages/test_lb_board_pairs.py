"""The pair view on the board and on a run page (issue 31): neighbouring runs compared from the
differences the worker stored with the snapshot, under the board's visibility rules."""

import html as html_lib
import re

import pytest
from django.urls import reverse

from leaderboard.models import Run

pytestmark = pytest.mark.django_db

PAIRED = "paired-differences-max-t"


def ranking(pairs, method=PAIRED):
    return {
        "ranking": {
            "method": method,
            "family_level": 0.95,
            "pair_levels": {"precision": 0.99, "recall": 0.99, "f1": 0.99},
            "runs_ranked": {"precision": 3, "recall": 3, "f1": 3},
            "pairs": pairs,
        }
    }


def f1_pairs(world, gap=0.05):
    """F1 on the standard snapshot: a-two 0.60, a-one 0.55, b-one 0.30."""
    a1, a2, b1 = (world["runs"][k].pk for k in ("a1", "a2", "b1"))
    return {
        "precision": [],
        "recall": [],
        # a-one against a-two stored the other way round: the page turns it.
        "f1": [
            [a1, a2, -gap, -gap - 0.06, -gap + 0.06],
            [a1, b1, 0.25, 0.18, 0.32],
            [a2, b1, 0.30, 0.22, 0.38],
        ],
    }


def write(snapshots, world, *, version=1, published=True, details=None):
    return snapshots.write(
        world["task"],
        [(world["runs"][k], *snapshots.STANDARD[k]) for k in ("a1", "a2", "b1")],
        version=version,
        published=published,
        details=details,
    )


def pair_lines(page: str, section: str) -> list[str]:
    block = re.search(rf'<section id="{section}".*?</section>', page, re.S)
    if block is None:
        return []
    return [
        html_lib.unescape(re.sub(r"<[^>]+>", "", li)).strip()
        for li in re.findall(r"<li[^>]*>(.*?)</li>", block.group(0), re.S)
    ]


def board(client, **query):
    url = reverse("task_board", args=["ner"])
    return client.get(url, query).content.decode()


def test_the_board_compares_each_ranked_run_with_the_next(client, board_world, snapshots):
    write(snapshots, board_world, details=ranking(f1_pairs(board_world)))
    page = board(client, sort="f1")
    assert pair_lines(page, "pairs") == [
        "a-two and a-one not separated at 95% confidence; difference 0.050 [-0.010, 0.110]",
        "a-one above b-one with 95% confidence; difference 0.250 [0.180, 0.320]",
    ]
    assert "paired differences" in page
    # No pairs stored for precision: no pair view, the ranks as before.
    assert 'id="pairs"' not in board(client, sort="precision")


def test_a_run_withdrawn_since_leaves_the_pairs_its_neighbours_close_up(
    client, board_world, snapshots
):
    write(snapshots, board_world, details=ranking(f1_pairs(board_world)))
    Run.objects.filter(pk=board_world["runs"]["a1"].pk).update(state=Run.State.WITHDRAWN)
    assert pair_lines(board(client, sort="f1"), "pairs") == [
        "a-two above b-one with 95% confidence; difference 0.300 [0.220, 0.380]"
    ]


def test_a_board_ranked_by_bonferroni_says_so_and_shows_no_pairs(client, board_world, snapshots):
    details = ranking({}, method="bonferroni-simultaneous-intervals")
    write(snapshots, board_world, details=details)
    page = board(client, sort="f1")
    assert 'id="pairs"' not in page
    assert "widened for the number of runs (Bonferroni)" in page


def test_the_run_page_compares_the_run_with_its_neighbours(client, board_world, snapshots):
    write(snapshots, board_world, details=ranking(f1_pairs(board_world)))
    client.force_login(board_world["alice"])
    page = client.get(reverse("run_detail", args=[board_world["runs"]["a1"].pk])).content.decode()
    assert pair_lines(page, "neighbours") == [
        "F1: a-two and a-one not separated at 95% confidence; difference 0.050 [-0.010, 0.110]",
        "F1: a-one above b-one with 95% confidence; difference 0.250 [0.180, 0.320]",
    ]
    # The top run has a neighbour below only.
    page = client.get(reverse("run_detail", args=[board_world["runs"]["a2"].pk])).content.decode()
    assert pair_lines(page, "neighbours") == [
        "F1: a-two and a-one not separated at 95% confidence; difference 0.050 [-0.010, 0.110]"
    ]


@pytest.mark.parametrize("viewer", [None, "bob", "alice"])
def test_a_held_snapshots_pairs_stay_with_the_organizers(client, board_world, snapshots, viewer):
    """The public, another team and the run's own team see the published snapshot's pairs,
    never a held one's; the organizers see the held one's."""
    write(snapshots, board_world, version=1, details=ranking(f1_pairs(board_world, gap=0.05)))
    write(
        snapshots,
        board_world,
        version=2,
        published=False,
        details=ranking(f1_pairs(board_world, gap=0.07)),
    )
    if viewer:
        client.force_login(board_world[viewer])
    run_page = reverse("run_detail", args=[board_world["runs"]["a1"].pk])
    for page, section in ((board(client, sort="f1"), "pairs"), (client.get(run_page), None)):
        text = page if isinstance(page, str) else page.content.decode()
        lines = pair_lines(text, section or "neighbours")
        assert lines, viewer
        assert all("0.070" not in line for line in lines)
        assert any("difference 0.050" in line for line in lines)
    client.force_login(board_world["org"])
    page = client.get(run_page).content.decode()
    assert any("difference 0.070" in line for line in pair_lines(page, "neighbours"))
