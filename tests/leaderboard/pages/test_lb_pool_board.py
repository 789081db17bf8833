"""A closed-pool task's board: the task's measures as columns (MCC included), sorting by them,
the CSV download and the API board with every measure."""

from __future__ import annotations

import csv
import io

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from leaderboard.models import Estimate, Run, Task
from leaderboard.services.tasks import create_task
from leaderboard.services.teams import create_team

from pipeline_support import open_unchecked
from worlds import stored_snapshot

pytestmark = pytest.mark.django_db


def cell(value, low, high):
    return {
        "value": value,
        "low": low,
        "high": high,
        "labels_used": 120,
        "method": "cell-posterior",
    }


@pytest.fixture
def pool_board():
    task = open_unchecked(
        create_task(slug="cp", title="CP", kind=Task.Kind.CLOSED_POOL, measures=["f1", "mcc"])
    )
    team = create_team(name="T")
    runs = [
        Run.objects.create(task=task, team=team, name=name, state=Run.State.SCORED)
        for name in ("low", "high")
    ]
    rows = [
        {
            "run": run.pk,
            "name": run.name,
            "team": "T",
            "state": "scored",
            "provisional": False,
            "n_predictions": 400,
            "f1": cell(f1, f1 - 0.1, f1 + 0.05),
            "mcc": cell(mcc, mcc - 0.2, mcc + 0.1),
            "rank": {"f1": {"best": rank, "worst": rank}, "mcc": {"best": 1, "worst": 2}},
        }
        for run, f1, mcc, rank in ((runs[0], 0.4, -0.3, 2), (runs[1], 0.8, 0.6, 1))
    ]
    snapshot = stored_snapshot(
        task,
        rows,
        engine_version="e",
        design="adaptive",
        labels_version=3,
        n_labels=120,
        details={"closed_pool": {"measures": ["f1", "mcc"]}},
    )
    for row, run in zip(rows, runs, strict=True):
        for m in ("f1", "mcc"):
            Estimate.objects.create(snapshot=snapshot, run=run, metric=m, level=0.95, **row[m])
    return task


def test_the_board_shows_the_task_measures(client, pool_board):
    html = client.get(reverse("task_board", args=["cp"])).content.decode()
    assert 'data-metric="mcc"' in html and 'data-metric="f1"' in html
    assert 'data-metric="precision"' not in html
    assert ">MCC" in html and ">Precision" not in html
    assert "[-0.500, -0.200]" in html  # the low run's MCC interval, below zero
    assert "rests on 120 labels" in html


def test_sorting_by_a_measure_of_the_task_and_only_those(client, pool_board):
    url = reverse("task_board", args=["cp"])
    by_mcc = client.get(url + "?sort=mcc")
    assert by_mcc.status_code == 200
    html = by_mcc.content.decode()
    assert html.index(">high<") < html.index(">low<")
    assert "lb-interval-plot" not in html  # its [0, 1] axis cannot show an MCC below 0
    assert "lb-interval-plot" in client.get(url + "?sort=f1").content.decode()
    assert client.get(url + "?sort=precision").status_code == 400


def test_the_csv_has_every_measure(client, pool_board):
    response = client.get(reverse("snapshot_csv", args=["cp", 1]))
    rows = list(
        csv.reader(
            io.StringIO(
                b"".join(response.streaming_content).decode()
                if hasattr(response, "streaming_content")
                else response.content.decode()
            )
        )
    )
    header = rows[0]
    assert "mcc_value" in header and "f1_low" in header and "precision_value" not in header
    assert "mcc_rank_best" in header
    assert rows[1][header.index("mcc_value")] == "-0.3"


def test_a_run_page_shows_the_task_measures(client, pool_board):
    client.force_login(get_user_model().objects.create_superuser("root", password="x"))
    run = Run.objects.get(task=pool_board, name="low")
    html = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "MCC" in html and "[-0.500, -0.200]" in html


def test_the_api_board_sorts_by_the_task_measures(client, pool_board):
    body = client.get("/api/tasks/cp/board/?sort=mcc").json()
    assert [row["name"] for row in body["rows"]] == ["high", "low"]
    assert body["rows"][1]["mcc"]["value"] == -0.3
    assert client.get("/api/tasks/cp/board/?sort=precision").status_code == 400


def test_the_submit_page_states_the_closed_pool_format(client, pool_board):
    member = get_user_model().objects.create_user("member")
    create_team(name="M", members=[member])
    client.force_login(member)
    html = client.get(reverse("submit_run", args=["cp"])).content.decode()
    assert "key&lt;TAB&gt;score&lt;TAB&gt;label" in html
