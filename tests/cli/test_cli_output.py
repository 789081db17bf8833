"""The CLI's board table shows the measures the snapshot carries (a closed pool's choice), and its
``--sort`` accepts every measure a task may show; it writes ranks, states and what recall rests on
in the server's words (one rank notation, built the server's way when a server gave no text), on
any terminal; its exit codes."""

from __future__ import annotations

import io

import pytest

from evaluation.core.closed_pool import CLOSED_POOL_MEASURES
from evaluation.core.measures import OPEN_MEASURES
from leaderboard import board_text
from leaderboard_cli.__main__ import EXIT_REJECTED, exit_code, parser
from leaderboard_cli.client import ApiError
from leaderboard_cli.output import (
    ALL_MEASURES,
    LOOK_ALIKE_ERRORS,
    METRICS,
    format_board,
    format_history,
    format_run,
    rank_text,
)


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
    assert "-0.250 [-0.500, 0.000]" in text and "1\u20132" in text


def test_an_open_tasks_table_has_the_three():
    header = format_board(board({})).splitlines()[1].split()
    assert header == ["rank", "team", "run", "precision", "recall", "f1", "state"]


@pytest.mark.parametrize("measure", CLOSED_POOL_MEASURES)
def test_scores_sort_by_every_measure(measure):
    # The CLI needs no server code: its lists are kept in step with the engine's.
    assert set(ALL_MEASURES) == set(CLOSED_POOL_MEASURES)
    assert METRICS == OPEN_MEASURES
    args = parser().parse_args(["scores", "cp", "--sort", measure])
    assert args.sort == measure


# -- one rank notation ---------------------------------------------------------------------------
def test_the_cli_writes_a_rank_as_the_server_does():
    """The CLI may not import the server's code: its rank text is built the same way, and the two
    agree on every interval (the server's text, when given, is printed as it is)."""
    for best in range(1, 13):
        for worst in range(best, 16):
            shown = rank_text({"best": best, "worst": worst})
            assert shown == board_text.rank_text(best, worst)
            assert rank_text({"best": best, "worst": worst, "text": shown}) == shown
    assert rank_text({"best": 2, "worst": 5}) == "2\u20135"
    assert rank_text({"best": 3, "worst": 3}) == "3"
    assert rank_text(None) == rank_text({"best": None, "worst": None}) == "-"


def open_board(rows, reference=None):
    return {**board({}), "rows": rows, "reference": reference}


def test_the_board_ranks_by_the_sort_and_says_what_each_state_means():
    row = {
        "team": "T",
        "name": "r",
        "state": "scored",
        "state_text": "precision \u00b10.041, target \u00b10.05: met",
        "precision": {"value": 0.8, "low": 0.76, "high": 0.84},
        "rank": {
            "precision": {"best": 1, "worst": 3, "text": "1\u20133"},
            "f1": {"best": 2, "worst": 2},
        },
    }
    text = format_board(open_board([row]), "precision")
    assert "ranks by precision" in text.splitlines()[0]
    line = text.splitlines()[2]
    assert line.startswith("1\u20133 ") and line.endswith(
        "precision \u00b10.041, target \u00b10.05: met"
    )
    assert format_board(open_board([row])).splitlines()[2].startswith("2 ")  # by F1 by default


def test_the_board_flags_recall_and_f1_resting_on_a_small_reference_sample():
    cell = {"value": 0.5, "low": 0.2, "high": 0.9}
    flagged = {**cell, "reference_too_small": True}
    row = {
        "team": "T",
        "name": "r",
        "state": "scored",
        "precision": cell,
        "recall": flagged,
        "f1": flagged,
    }
    reference = {"text": "recall rests on 6 reference items (30 needed)", "enough": False}
    text = format_board(open_board([row], reference))
    assert text.count("0.500 [0.200, 0.900]*") == 2 and "0.500 [0.200, 0.900] " in text
    assert text.endswith(
        "* recall and f1 not settled: recall rests on 6 reference items (30 needed)"
    )
    ample = {"text": "recall rests on 60 reference items in 12 documents", "enough": True}
    row = {**row, "recall": cell, "f1": cell}
    assert format_board(open_board([row], ample)).endswith(ample["text"])
    history = {
        "metrics": {
            "precision": [{"snapshot": 4, **cell, "reference_too_small": False}],
            "recall": [{"snapshot": 4, **flagged}],
            "f1": [{"snapshot": 4, **flagged}],
        }
    }
    assert format_history(history).splitlines()[1] == (
        "* recall and f1 not settled: the reference sample recall rests on is smaller than the "
        "minimum"
    )


def test_a_runs_state_is_printed_with_what_it_means():
    run = {
        "id": 3,
        "name": "bm25",
        "team": "A",
        "task": "t",
        "state": "partial",
        "state_text": "budget spent: precision \u00b10.080, target \u00b10.05",
        "n_predictions": 4,
        "created_at": "2026-11-27",
    }
    assert format_run(run).splitlines()[0] == (
        "run 3 'bm25' (A, task t): partial (budget spent: precision \u00b10.080, target \u00b10.05)"
    )


def test_a_terminal_without_the_servers_characters_gets_look_alikes():
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii", errors=LOOK_ALIKE_ERRORS)
    stream.write("rank 2\u20135, precision \u00b10.041, \u22120.058, caf\u00e9\n")
    stream.flush()
    assert raw.getvalue() == b"rank 2-5, precision +/-0.041, -0.058, caf?\n"


def test_a_file_refused_for_its_content_exits_4_with_or_without_line_numbers():
    refused = {"error": {"code": "rejected", "message": "this looks like CSV", "problems": []}}
    assert exit_code(ApiError(400, refused)) == EXIT_REJECTED == 4
    by_line = {"error": {"code": "invalid", "problems": [{"line": 2, "message": "x"}]}}
    assert exit_code(ApiError(400, by_line)) == 4
    assert exit_code(ApiError(400, {"error": {"code": "invalid"}})) == 1


def test_the_board_ends_with_the_servers_pair_view_of_the_ranked_measure():
    pair = "a-one above b-one with 95% confidence; difference 0.250 [0.180, 0.320]"
    data = {**board({}), "pairs": {"f1": [{"text": pair}], "precision": []}}
    lines = format_board(data).splitlines()
    assert lines[-2:] == ["neighbours by f1:", f"  {pair}"]
    assert "neighbours" not in format_board(data, "precision")
    assert "neighbours" not in format_board(board({}))  # a server without pairs
