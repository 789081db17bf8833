"""A closed-pool run's page draws its stored precision-recall curve for its team and the task's
organizers only, from the snapshot its scores come from (a held one: organizers only); the
board, the "my runs" list and the API sort by every measure the task shows, F-beta included
(named by its beta)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from leaderboard.models import Estimate, LeaderboardSnapshot, Run, RunCurve, Task
from leaderboard.services.tasks import create_task
from leaderboard.services.teams import create_team

from pipeline_support import open_unchecked
from worlds import stored_snapshot

pytestmark = pytest.mark.django_db

MEASURES = ["precision", "recall", "f1", "accuracy", "balanced_accuracy", "mcc", "fbeta"]
# Per run, per measure: the orders differ from measure to measure.
VALUES = {
    "mine": dict(zip(MEASURES, (0.9, 0.2, 0.33, 0.5, 0.6, -0.1, 0.7), strict=True)),
    "theirs": dict(zip(MEASURES, (0.3, 0.8, 0.44, 0.7, 0.4, 0.2, 0.35), strict=True)),
}


def cell(value):
    return {
        "value": value,
        "low": value - 0.05,
        "high": value + 0.05,
        "labels_used": 120,
        "method": "cell-posterior",
    }


def curve(marker: float) -> dict:
    """A stored curve whose first threshold is ``marker`` (what the page's titles show)."""
    return {
        "thresholds": [marker, 0.5, 0.9],
        "recall": [1.0, 0.6, 0.1],
        "recall_low": [0.9, 0.5, 0.05],
        "recall_high": [1.0, 0.7, 0.2],
        "precision": [0.1, 0.5, None],
        "precision_low": [0.05, 0.4, 0.0],
        "precision_high": [0.15, 0.6, 1.0],
        "level": 0.95,
        "method": "pointwise/cell-posterior/clopper-pearson",
        "labels_used": 120,
        "operating_point": 1,
    }


def snapshot(task, runs, version: int, *, published: bool, marker: float):
    rows = [
        {
            "run": run.pk,
            "name": run.name,
            "team": run.team.name,
            "state": "scored",
            "provisional": False,
            **{m: cell(VALUES[run.name][m]) for m in MEASURES},
            "rank": dict.fromkeys(MEASURES),
        }
        for run in runs
    ]
    snap = stored_snapshot(
        task,
        rows,
        version=version,
        published=published,
        engine_version="e",
        design="adaptive",
        labels_version=version,
        n_labels=120,
        details={"closed_pool": {"measures": MEASURES, "f_beta": 0.5}},
    )
    for row, run in zip(rows, runs, strict=True):
        for m in MEASURES:
            Estimate.objects.create(snapshot=snap, run=run, metric=m, level=0.95, **row[m])
        # Each run's curve says whose it is and which snapshot it comes from.
        RunCurve.objects.create(
            snapshot=snap, run=run, data=curve(marker + (0.01 if run.name == "theirs" else 0))
        )
    return snap


@pytest.fixture
def world():
    users = get_user_model().objects
    organizer, me, other = (users.create_user(n) for n in ("org", "me", "other"))
    task = open_unchecked(
        create_task(
            slug="cp",
            title="CP",
            kind=Task.Kind.CLOSED_POOL,
            measures=MEASURES,
            f_beta=0.5,
            organizers=[organizer],
        )
    )
    teams = [create_team(name="Mine", members=[me]), create_team(name="Theirs", members=[other])]
    runs = [
        Run.objects.create(task=task, team=team, name=name, state=Run.State.SCORED)
        for team, name in zip(teams, ("mine", "theirs"), strict=True)
    ]
    snapshot(task, runs, 1, published=True, marker=0.111)
    return {"task": task, "organizer": organizer, "me": me, "other": other, "runs": runs}


def page(client, user, run):
    client.force_login(user)
    return client.get(reverse("run_detail", args=[run.pk]))


def test_the_run_page_draws_its_own_curve(client, world):
    mine = world["runs"][0]
    html = page(client, world["me"], mine).content.decode()
    assert 'id="pr-curve"' in html and "lb-pr-curve" in html
    assert "threshold 0.111" in html and "threshold 0.121" not in html
    assert "lb-operating" in html  # the run's own threshold
    assert "over 2 thresholds" in html  # the third has no precision: not drawn
    assert ">F0.5<" in html  # F-beta named by the task's beta


def test_another_team_sees_the_public_page_with_the_published_curve_only(client, world):
    """A run on the public board has a public page: another team sees its published curve (a
    published estimate, as its scores are), never a held one."""
    mine = world["runs"][0]
    snapshot(world["task"], world["runs"], 2, published=False, marker=0.222)
    response = page(client, world["other"], mine)
    html = response.content.decode()
    assert response.status_code == 200 and 'id="public-note"' in html
    assert "threshold 0.111" in html and "threshold 0.222" not in html
    # Their own page draws their own curve, not this one.
    html = page(client, world["other"], world["runs"][1]).content.decode()
    assert "threshold 0.121" in html and "threshold 0.111" not in html


def test_a_held_snapshots_curve_is_for_organizers_only(client, world):
    snapshot(world["task"], world["runs"], 2, published=False, marker=0.222)
    mine = world["runs"][0]
    html = page(client, world["me"], mine).content.decode()
    assert "threshold 0.111" in html and "threshold 0.222" not in html
    html = page(client, world["organizer"], mine).content.decode()
    assert "threshold 0.222" in html and "threshold 0.111" not in html and "held" in html


def test_no_published_snapshot_no_curve(client, world):
    LeaderboardSnapshot.objects.filter(task=world["task"]).update(published=False)
    html = page(client, world["me"], world["runs"][0]).content.decode()
    assert "No published scores yet" in html
    assert "pr-curve" not in html and "threshold 0.111" not in html


def test_an_open_tasks_run_page_draws_no_curve(client, world):
    Task.objects.filter(pk=world["task"].pk).update(kind=Task.Kind.OPEN)
    html = page(client, world["me"], world["runs"][0]).content.decode()
    assert "pr-curve" not in html


def expected(measure: str) -> list[str]:
    return sorted(VALUES, key=lambda name: -VALUES[name][measure])


@pytest.mark.parametrize("measure", MEASURES)
def test_the_board_sorts_by_every_measure(client, world, measure):
    response = client.get(reverse("task_board", args=["cp"]) + f"?sort={measure}")
    assert response.status_code == 200
    html = response.content.decode()
    first, second = expected(measure)
    assert html.index(f">{first}<") < html.index(f">{second}<"), measure
    assert f'data-sort="{measure}"' in html and ">F0.5" in html


@pytest.mark.parametrize("measure", MEASURES)
def test_the_api_board_sorts_by_every_measure(client, world, measure):
    body = client.get(f"/api/tasks/cp/board/?sort={measure}").json()
    assert [row["name"] for row in body["rows"]] == expected(measure)
    ascending = client.get(f"/api/tasks/cp/board/?sort={measure}&order=asc").json()
    assert [row["name"] for row in ascending["rows"]] == expected(measure)[::-1]


def test_the_openapi_sort_enum_names_every_measure(client):
    schema = client.get("/api/schema/?format=json").json()
    board = schema["paths"]["/api/tasks/{slug}/board/"]["get"]["parameters"]
    (sort,) = [p for p in board if p["name"] == "sort"]
    assert set(MEASURES) <= set(sort["schema"]["enum"])


@pytest.mark.parametrize("measure", MEASURES)
def test_my_runs_sort_by_every_measure(client, world, measure):
    client.force_login(world["organizer"])
    response = client.get(reverse("task_runs", args=["cp"]) + f"?sort={measure}")
    assert response.status_code == 200
    html = response.content.decode()
    first, second = expected(measure)
    assert html.index(f">{first}</a>") < html.index(f">{second}</a>"), measure
    assert 'aria-sort="descending"' in html and f'data-metric="{measure}"' in html


def test_my_runs_show_the_tasks_measures_and_refuse_others(client, world):
    client.force_login(world["me"])
    url = reverse("task_runs", args=["cp"])
    html = client.get(url).content.decode()
    assert ">F0.5" in html and ">MCC" in html and ">Balanced accuracy" in html
    assert ">mine</a>" in html and ">theirs</a>" not in html
    assert "[-0.150, -0.050]" in html  # its MCC interval: every measure has its cell
    assert client.get(url + "?sort=auc").status_code == 400
    Task.objects.filter(pk=world["task"].pk).update(measures=["f1", "mcc"])
    assert client.get(url + "?sort=precision").status_code == 400
    assert client.get(url + "?sort=mcc").status_code == 200
