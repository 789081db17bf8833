"""The public board and snapshot permalinks: asymmetric intervals, rank intervals, the stated
level and methods, sorting by each metric, held boards, downloads, and the organizer controls."""

import csv
import io
import json
import re

import pytest
from django.urls import reverse

from evaluation.core.measures import OPEN_MEASURES
from leaderboard.models import LeaderboardSnapshot, Task

pytestmark = pytest.mark.django_db

MINUS = "\u2212"


def board_url(slug="ner", **query):
    url = reverse("task_board", args=[slug])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def run_order(html: str) -> list[str]:
    return re.findall(r'<td class="run-name"><a href="/runs/\d+/">([^<]+)</a>', html)


def rank_cells(html: str) -> list[str]:
    return [
        re.sub(r"<[^>]+>", "", cell).strip()
        for cell in re.findall(r'<td class="num rank">(.*?)</td>', html)
    ]


def test_board_shows_values_with_asymmetric_intervals_and_what_they_rest_on(
    client, board_world, snapshots
):
    snapshots.standard(board_world)
    html = client.get(board_url()).content.decode()
    # a1's F1: 0.55, interval [0.47, 0.62] -> +0.070 / -0.080, printed with U+2212
    assert f'+0.070</span> / <span class="minus">{MINUS}0.080' in html
    assert "[0.470, 0.620]" in html
    assert "rests on 40 labels" in html
    assert "95% confidence intervals" in html
    assert "wilson" in html and "pairwise bootstrap, Holm" in html
    assert "engine engine-7" in html and "label set v10" in html
    assert reverse("snapshot_detail", args=["ner", 1]) in html
    assert html.count("provisional-badge") == 3  # none of the runs is scored yet


def test_the_board_states_once_that_labels_are_corrected_for_annotator_error(
    client, board_world, snapshots
):
    statement = "Labels corrected for annotator error"
    exact = snapshots.standard(board_world)  # judged by a perfect oracle: no annotator model
    assert statement not in client.get(board_url()).content.decode()
    details = {
        **exact.details,
        "label_model": {
            "method": "dawid-skene-2class/em-map/louis",
            "judgments": 120,
            "items": 80,
            "annotators": 3,
            "converged": True,
        },
    }
    corrected = snapshots.write(
        board_world["task"],
        [(board_world["runs"][k], *snapshots.STANDARD[k]) for k in ("a1", "a2", "b1")],
        version=2,
        details=details,
    )
    html = client.get(board_url(sort="precision")).content.decode()
    assert html.count(statement) == 1 and html.count('id="labels-corrected"') == 1
    permalink = client.get(reverse("snapshot_detail", args=["ner", corrected.version]))
    assert permalink.content.decode().count(statement) == 1
    older = client.get(reverse("snapshot_detail", args=["ner", exact.version]))
    assert statement not in older.content.decode()
    assert 'id="too-few-annotators"' not in html


def test_the_board_warns_when_a_pool_had_fewer_annotators_than_its_looks_need(
    client, board_world, snapshots
):
    exact = snapshots.standard(board_world)
    model = {"method": "dawid-skene-2class/em-map/louis", "annotators": 2}
    snapshots.write(
        board_world["task"],
        [(board_world["runs"][k], *snapshots.STANDARD[k]) for k in ("a1", "a2", "b1")],
        version=2,
        details={
            **exact.details,
            "label_model": {**model, "too_few_annotators": True, "look_annotators": 3},
        },
    )
    html = client.get(board_url()).content.decode()
    assert html.count('id="too-few-annotators"') == 1
    assert "Fewer than 3 annotators have answered on this pool" in html


def test_rank_column_follows_the_sort_and_writes_the_range_in_the_cell(
    client, board_world, snapshots
):
    snapshots.standard(board_world)
    by_f1 = client.get(board_url()).content.decode()
    assert run_order(by_f1) == ["a-two", "a-one", "b-one"]
    # Tied for the top: the range itself, not "tied for 1st" with the range in a tooltip.
    assert rank_cells(by_f1) == ["1\u20132", "1\u20132", "3"]
    assert "tied for 1st" not in by_f1
    by_precision = client.get(board_url(sort="precision")).content.decode()
    assert run_order(by_precision) == ["a-one", "a-two", "b-one"]
    assert rank_cells(by_precision) == ["1", "2\u20133", "2\u20133"]
    by_recall = client.get(board_url(sort="recall")).content.decode()
    assert run_order(by_recall) == ["a-two", "b-one", "a-one"]
    assert rank_cells(by_recall) == ["1", "2\u20133", "2\u20133"]
    assert 'aria-sort="descending"' in by_recall
    assert 'href="?sort=precision"' in by_recall  # header links, keyboard-reachable anchors


def test_unknown_sort_is_a_clear_400(client, board_world, snapshots):
    snapshots.standard(board_world)
    response = client.get(board_url(sort="accuracy"))
    assert response.status_code == 400
    assert "precision, recall, f1" in response.content.decode()


def test_snapshot_without_ranks_says_rank_not_computed(client, board_world, snapshots):
    snapshots.standard(board_world, ranks=False)
    html = client.get(board_url()).content.decode()
    assert "Rank not computed" in html
    assert rank_cells(html) == ["—", "—", "—"]


def test_board_shows_the_interval_plot_for_the_sorted_metric(client, board_world, snapshots):
    snapshots.standard(board_world)
    html = client.get(board_url(sort="recall")).content.decode()
    svg = html[html.index("<svg") : html.index("</svg>")]
    assert "Recall" in svg and "a-two" in svg


def test_renamed_run_shows_its_current_name_and_safe_link(client, board_world, snapshots):
    snapshots.standard(board_world)
    run = board_world["runs"]["a1"]
    run.name, run.link = "a-one renamed", "https://example.org/paper"
    run.save()
    b1 = board_world["runs"]["b1"]
    type(b1).objects.filter(pk=b1.pk).update(link="javascript:alert(1)")
    html = client.get(board_url()).content.decode()
    assert "a-one renamed" in html
    assert 'href="https://example.org/paper" rel="nofollow noopener noreferrer"' in html
    assert "javascript:" not in html


def test_public_sees_only_published_and_a_hold_notice(client, board_world, snapshots):
    snapshots.standard(board_world, version=1)
    Task.objects.filter(pk=board_world["task"].pk).update(board_held=True)
    held = snapshots.write(
        board_world["task"],
        [
            (
                board_world["runs"]["a1"],
                {
                    "precision": (0.123, 0.1, 0.2),
                    "recall": (0.1, 0.05, 0.2),
                    "f1": (0.11, 0.05, 0.2),
                },
                None,
            )
        ],
        version=2,
        published=False,
    )
    html = client.get(board_url()).content.decode()
    assert "Results are being held by the organizers; last published: version 1" in html
    assert "0.123" not in html and "Snapshot <strong>v1</strong>" in html
    assert client.get(reverse("snapshot_detail", args=["ner", held.version])).status_code == 404
    assert client.get(reverse("snapshot_csv", args=["ner", 2])).status_code == 404
    listing = client.get(reverse("task_snapshots", args=["ner"])).content.decode()
    assert ">v1<" in listing and ">v2<" not in listing


def test_organizer_holds_and_publishes_through_the_buttons(client, board_world, snapshots):
    snapshots.standard(board_world, version=1)
    client.force_login(board_world["org"])
    html = client.get(board_url()).content.decode()
    assert "Hold the board" in html and 'name="csrfmiddlewaretoken"' in html
    response = client.post(reverse("board_hold", args=["ner"]))
    assert response.status_code == 302
    assert Task.objects.get(slug="ner").board_held
    snapshots.write(
        board_world["task"],
        [
            (
                board_world["runs"]["a1"],
                {
                    "precision": (0.321, 0.3, 0.4),
                    "recall": (0.1, 0.05, 0.2),
                    "f1": (0.11, 0.05, 0.2),
                },
                None,
            )
        ],
        version=2,
        published=False,
    )
    html = client.get(board_url()).content.decode()
    assert "1 snapshot waiting for publication" in html and "0.321" not in html
    listing = client.get(reverse("task_snapshots", args=["ner"])).content.decode()
    assert ">v2<" in listing and "held-badge" in listing
    held_page = client.get(reverse("snapshot_detail", args=["ner", 2])).content.decode()
    assert "not public yet" in held_page and "0.321" in held_page
    client.post(reverse("board_publish", args=["ner"]), {"next": "organize"})
    assert LeaderboardSnapshot.objects.get(version=2).published
    assert not Task.objects.get(slug="ner").board_held
    client.logout()
    assert "0.321" in client.get(board_url()).content.decode()


def test_hold_and_publish_are_for_organizers_only_and_post_only(client, board_world):
    url = reverse("board_publish", args=["ner"])
    assert client.post(url).status_code == 302  # anonymous: log in first
    client.force_login(board_world["alice"])
    assert client.post(url).status_code == 403
    assert client.post(reverse("board_hold", args=["ner"])).status_code == 403
    client.force_login(board_world["org"])
    assert client.get(url).status_code == 405
    assert not Task.objects.get(slug="ner").board_held


def test_older_snapshot_permalink_is_marked_not_the_latest(client, board_world, snapshots):
    snapshots.standard(board_world, version=1)
    snapshots.standard(board_world, version=2)
    html = client.get(reverse("snapshot_detail", args=["ner", 1])).content.decode()
    assert "Snapshot 1 of 2, not the latest" in html
    latest = client.get(reverse("snapshot_detail", args=["ner", 2])).content.decode()
    assert "not the latest" not in latest
    assert client.get(reverse("snapshot_detail", args=["ner", 9])).status_code == 404


def test_snapshot_downloads_have_the_right_types_and_content(client, board_world, snapshots):
    snapshots.standard(board_world)
    response = client.get(reverse("snapshot_csv", args=["ner", 1]))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert {r["name"] for r in rows} == {"a-one", "a-two", "b-one"}
    assert {r["f1_rank_best"] for r in rows} == {"1", "3"}
    response = client.get(reverse("snapshot_json", args=["ner", 1]))
    assert response["Content-Type"].startswith("application/json")
    data = json.loads(response.content)
    assert data["version"] == 1 and len(data["rows"]) == 3 and data["confidence"] == 0.95


def test_board_without_snapshot_and_unknown_task(client, board_world):
    assert "No results yet" in client.get(board_url()).content.decode()
    assert client.get(board_url("nope")).status_code == 404
    assert client.get(reverse("task_snapshots", args=["nope"])).status_code == 404


def test_a_rename_after_the_board_was_shown_is_never_stale(client, board_world, snapshots):
    snapshots.standard(board_world)
    for sort in ("f1", "recall"):
        assert "a-one" in client.get(board_url(sort=sort)).content.decode()
    client.force_login(board_world["alice"])
    run = board_world["runs"]["a1"]
    response = client.post(
        reverse("run_detail", args=[run.pk]), {"name": "a-one v2", "description": "", "link": ""}
    )
    assert response.status_code == 302
    client.logout()
    for sort in ("f1", "recall"):
        html = client.get(board_url(sort=sort)).content.decode()
        assert "a-one v2" in html and ">a-one<" not in html
    assert "a-one v2" in client.get(reverse("snapshot_detail", args=["ner", 1])).content.decode()


def test_the_page_and_the_api_list_tied_runs_in_the_same_order(client, board_world, snapshots):
    """One board order (``selectors.board_order``): ties by run name, then run id. The rows are
    stored in another order (b-one, a-two, a-one), which the API's sort used to keep."""
    runs = board_world["runs"]
    tied = {"precision": (0.7, 0.6, 0.8), "recall": (0.5, 0.4, 0.6), "f1": (0.6, 0.5, 0.7)}
    snapshots.write(
        board_world["task"], [(runs[k], tied, None) for k in ("b1", "a2", "a1")], version=1
    )
    expected = ["a-one", "a-two", "b-one"]
    for metric in OPEN_MEASURES:
        page = run_order(client.get(board_url(sort=metric)).content.decode())
        api = client.get(f"/api/tasks/ner/board/?sort={metric}").json()["rows"]
        assert page == [row["name"] for row in api] == expected
    ascending = client.get("/api/tasks/ner/board/?sort=f1&order=asc").json()["rows"]
    assert [row["name"] for row in ascending] == expected
