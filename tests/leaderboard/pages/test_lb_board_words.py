"""The board read in plain words: a "how to read this board" panel, run states that say what was
met (board, run page, my runs), and recall and F1 flagged, never presented as settled, when the
reference sample they rest on is empty or below the minimum."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from leaderboard.models import LeaderboardSnapshot
from leaderboard.services.board import hold_board

pytestmark = pytest.mark.django_db

TINY = (6, 3)  # reference items, documents: under 30 items in 10 documents
TINY_TEXT = "recall rests on 6 reference items in 3 documents (30 items in 10 documents needed)"
TINY_NOTE = "recall not settled: 6 of 30 reference items, 3 of 10 documents"


def finished(world) -> None:
    """a1 scored (precision +-0.045, target +-0.05), a2 partial with its budget spent (+-0.050),
    b1 still awaiting labels (312 of 480 verified)."""
    runs = world["runs"]
    for key, state, outcome in (
        ("a1", "scored", "met"),
        ("a2", "partial", "budget_exhausted"),
        ("b1", "awaiting_labels", "sample"),
    ):
        runs[key].state, runs[key].outcome = state, outcome
        runs[key].n_requested, runs[key].n_verified = 480, 312
        runs[key].save()


def board_html(client, **query) -> str:
    url = reverse("task_board", args=["ner"])
    return client.get(url, query).content.decode()


def row_of(html: str, name: str) -> str:
    (row,) = [r for r in re.findall(r"<tr class=\"run-row.*?</tr>", html, re.S) if name in r]
    return row


def flagged_cells(html: str) -> int:
    return html.count('data-flag="reference_too_small"')


def test_the_board_has_a_collapsible_panel_on_how_to_read_it(client, board_world, snapshots):
    snapshots.standard(board_world)
    html = board_html(client)
    panel = html[html.index('<details class="how-to-read"') : html.index("</details>")]
    assert "<summary>How to read this board</summary>" in panel
    assert "<strong>2\u20135</strong> means somewhere from 2nd to 5th" in panel  # a rank range
    assert "neither is significantly better" in panel  # why runs share ranks
    assert "How many verified items" in panel  # what "labels" means
    assert "between 0.654 and 0.753 with 95% confidence" in panel  # what an interval means
    assert "recall rests on <strong>40 reference items in 12 documents</strong>" in panel
    assert "Below 30 items in 10 documents" in panel
    assert "target, ±0.05" in panel
    assert "wilson" in panel and "pairwise bootstrap, Holm" in panel  # the methods, in there
    # CSP: a <details> element needs no script, and nothing inline.
    assert "<script" not in panel and "style=" not in panel
    assert not re.search(r"\son\w+=", panel)


def test_the_board_says_what_recall_rests_on_and_flags_nothing_when_it_is_enough(
    client, board_world, snapshots
):
    snapshots.standard(board_world, reference=(40, 12))
    html = board_html(client)
    assert '<span id="reference-size">40 reference items in 12 documents</span>' in html
    assert flagged_cells(html) == 0 and 'id="reference-short"' not in html


@pytest.mark.parametrize(
    ("reference", "text", "note"),
    [
        (TINY, TINY_TEXT, TINY_NOTE),
        (
            (0, 0),
            "no reference sample yet: recall cannot be estimated",
            "recall not settled: no reference sample yet",
        ),
        (
            (45, 4),
            "recall rests on 45 reference items in 4 documents (10 documents needed)",
            "recall not settled: 4 of 10 documents",
        ),
    ],
)
def test_recall_and_f1_on_a_small_reference_sample_are_flagged_never_settled(
    client, board_world, snapshots, reference, text, note
):
    finished(board_world)
    snapshots.standard(board_world, reference=reference)
    for sort in ("f1", "precision", "recall"):
        html = board_html(client, sort=sort)
        assert html.count('id="reference-short"') == 1 and text in html
        scored = row_of(html, "a-one")
        cells = re.findall(r"<td class=\"metric[^\"]*\".*?</td>", scored, re.S)
        assert ["flagged" in c for c in cells] == [False, True, True]  # precision, recall, F1
        # Still shown, for transparency: a1's recall 0.40 [0.31, 0.50] with the reason.
        assert "[0.310, 0.500]" in cells[1] and f'<div class="cell-note">{note}</div>' in cells[1]
        assert flagged_cells(html) == 6  # recall and F1 of the three runs
        # Its state claims precision only, and says recall is not settled.
        assert f"precision ±0.045, target ±0.05: met; {note}" in scored


def test_the_board_says_what_each_runs_state_means(client, board_world, snapshots):
    finished(board_world)
    snapshots.standard(board_world)
    html = board_html(client)
    state = re.compile(r'<div class="state-text small">([^<]*)</div>')
    assert state.findall(row_of(html, "a-one")) == ["precision ±0.045, target ±0.05: met"]
    assert state.findall(row_of(html, "a-two")) == ["budget spent: precision ±0.050, target ±0.05"]
    assert state.findall(row_of(html, "b-one")) == [
        "waiting for the annotators: 312 of 480 items verified"
    ]
    # The machine state is still shown, as a label.
    assert '<span class="state state-partial">partial</span>' in row_of(html, "a-two")


def test_a_state_is_read_against_the_target_it_was_decided_on(client, board_world, snapshots):
    finished(board_world)
    snapshot = snapshots.standard(board_world)
    LeaderboardSnapshot.objects.filter(pk=snapshot.pk).update(
        details={**snapshot.details, "target_half_width": 0.02}
    )
    board_world["task"].target_half_width = 0.1  # changed since: the snapshot's target stands
    board_world["task"].save()
    assert "budget spent: precision ±0.050, target ±0.02" in board_html(client)


def test_the_run_page_says_what_its_state_means_and_what_recall_rests_on(
    client, board_world, snapshots
):
    finished(board_world)
    snapshots.standard(board_world, reference=TINY)
    client.force_login(board_world["alice"])
    run = board_world["runs"]["a1"]
    html = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert (
        f'<p class="state-text" id="run-state-text">precision ±0.045, target ±0.05: met; '
        f"{TINY_NOTE}</p>"
    ) in html
    assert f'<span id="reference-size">{TINY_TEXT}</span>' in html
    flagged = re.findall(
        r'<tr data-metric="(\w+)">\s*<td>[^<]*</td>\s*<td class="metric flagged"', html
    )
    assert flagged == ["recall", "f1"]
    assert html.count(f'<div class="cell-note">{TINY_NOTE}</div>') == 2


def test_the_run_page_of_a_run_on_an_ample_sample_flags_nothing(client, board_world, snapshots):
    finished(board_world)
    snapshots.standard(board_world, reference=(300, 40))
    client.force_login(board_world["alice"])
    run = board_world["runs"]["a2"]
    html = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "budget spent: precision ±0.050, target ±0.05</p>" in html
    assert "recall rests on 300 reference items in 40 documents" in html
    assert flagged_cells(html) == 0


def test_my_runs_say_what_each_state_means_and_flag_recall(client, board_world, snapshots):
    finished(board_world)
    snapshots.standard(board_world, reference=TINY)
    client.force_login(board_world["alice"])
    html = client.get(reverse("task_runs", args=["ner"])).content.decode()
    texts = re.findall(r'<div class="state-text small">([^<]*)</div>', html)
    assert texts == [
        f"budget spent: precision ±0.050, target ±0.05; {TINY_NOTE}",  # a2, newest first
        f"precision ±0.045, target ±0.05: met; {TINY_NOTE}",
    ]
    assert flagged_cells(html) == 4  # recall and F1 of a1 and a2
    assert f'<span id="reference-size">{TINY_TEXT}</span>' in html


def test_my_runs_read_an_organizers_runs_against_the_newest_snapshot(
    client, board_world, snapshots
):
    """Organizers see runs as they are: a run scored in a held snapshot reads against it, not
    against the older published one (where it was still awaiting labels, wider)."""
    run = board_world["runs"]["a1"]
    snapshots.standard(board_world, version=1)  # every run queued
    hold_board(task=board_world["task"])
    finished(board_world)
    held = snapshots.standard(board_world, version=2, published=False)
    row = next(r for r in held.rows if r["run"] == run.pk)
    row["precision"] = {**row["precision"], "low": 0.89, "high": 0.91}
    LeaderboardSnapshot.objects.filter(pk=held.pk).update(rows=held.rows)
    client.force_login(board_world["org"])
    html = client.get(reverse("task_runs", args=["ner"])).content.decode()
    assert "precision ±0.010, target ±0.05: met" in html
    # The team, while the board is held, sees the run as the published snapshot left it.
    client.force_login(board_world["alice"])
    html = client.get(reverse("task_runs", args=["ner"])).content.decode()
    assert "precision ±0.010" not in html
