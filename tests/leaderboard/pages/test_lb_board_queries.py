"""The board, a snapshot permalink and the run page read a constant number of rows whatever the
number of runs: the query count at 5 runs and at 50 runs is the same (and small)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from leaderboard.models import Task

from pipeline_support import add_items, add_run, make_task, make_team

pytestmark = pytest.mark.django_db


def build(n_runs: int, snapshots, slug: str):
    task = make_task(slug=slug, title=slug, state=Task.State.OPEN)
    add_items(task, 3)
    team = make_team(f"team-{slug}")
    runs = [add_run(task, team, [0, 1], name=f"run-{i}") for i in range(n_runs)]
    entries = [
        (
            run,
            {
                "precision": (0.5 + i / 200, 0.4, 0.9),
                "recall": (0.5, 0.4, 0.6),
                "f1": (0.5 - i / 200, 0.3, 0.6),
            },
            {"precision": (1, i + 1), "recall": (1, n_runs), "f1": (i + 1, n_runs)},
        )
        for i, run in enumerate(runs)
    ]
    for version in (1, 2, 3):
        snapshots.write(task, entries, version=version)
    return task, runs


def count(client, url) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return len(ctx.captured_queries)


@pytest.mark.parametrize("view", ["board", "snapshot", "snapshots"])
def test_board_queries_do_not_grow_with_runs(
    client, snapshots, django_assert_max_num_queries, view
):
    small, _ = build(5, snapshots, "small")
    large, _ = build(50, snapshots, "large")

    def url(task):
        return {
            "board": reverse("task_board", args=[task.slug]) + "?sort=precision",
            "snapshot": reverse("snapshot_detail", args=[task.slug, 2]),
            "snapshots": reverse("task_snapshots", args=[task.slug]),
        }[view]

    n_small = count(client, url(small))
    with django_assert_max_num_queries(n_small):
        client.get(url(large))
    assert n_small <= 8


def test_run_page_and_my_runs_queries_do_not_grow_with_history(
    client, snapshots, django_assert_max_num_queries, people
):
    small, small_runs = build(5, snapshots, "small")
    large, large_runs = build(50, snapshots, "large")
    for task in (small, large):
        task.runs.first().team.members.add(people["alice"])
    client.force_login(people["alice"])
    n_run = count(client, reverse("run_detail", args=[small_runs[0].pk]))
    with django_assert_max_num_queries(n_run):
        client.get(reverse("run_detail", args=[large_runs[0].pk]))
    n_runs = count(client, reverse("task_runs", args=["small"]))
    with django_assert_max_num_queries(n_runs):
        client.get(reverse("task_runs", args=["large"]))
