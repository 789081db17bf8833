"""The CLI's board table shows the measures the snapshot carries (a closed pool's choice), and its
``--sort`` accepts every measure a task may show."""

from __future__ import annotations

import pytest

from evaluation.core.closed_pool import MEASURES
from leaderboard_cli.__main__ import parser
from leaderboard_cli.output import ALL_MEASURES, format_board


def board(details):
    cell = {"value": 0.5, "low": 0.4, "high": 0.6}
    return {
        "task": "cp",
        "version": 3,
        "n_labels": 120,
        "confidence": 0.95,
        "published_at": "2026-11-24T00:00:00Z",
        "details": details,
        "rows": [
            {
                "team": "T",
                "name": "r",
                "state": "scored",
                "mcc": {"value": -0.25, "low": -0.5, "high": 0.0},
                "fbeta": cell,
                "f1": cell,
                "rank": {"mcc": {"best": 1, "worst": 2}},
            }
        ],
    }


def test_a_closed_pools_table_has_its_measures():
    text = format_board(board({"closed_pool": {"measures": ["mcc", "fbeta"]}}))
    header = text.splitlines()[1].split()
    assert header == ["rank", "team", "run", "mcc", "fbeta", "state"]
    assert "-0.250 [-0.500, 0.000]" in text and "1-2" in text


def test_an_open_tasks_table_has_the_three():
    header = format_board(board({})).splitlines()[1].split()
    assert header == ["rank", "team", "run", "precision", "recall", "f1", "state"]


@pytest.mark.parametrize("measure", MEASURES)
def test_scores_sort_by_every_measure(measure):
    assert set(ALL_MEASURES) == set(MEASURES)  # the CLI needs no server code: kept in step
    args = parser().parse_args(["scores", "cp", "--sort", measure])
    assert args.sort == measure
