"""Participant pages: my runs with progress, published scores and quotas; the run page with its
scores, rank, history charts and timeline; editing a run's public details."""

import re

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from leaderboard.models import Run, RunEvent

pytestmark = pytest.mark.django_db


def test_my_runs_shows_progress_bar_published_scores_and_quota(client, board_world, snapshots):
    task = board_world["task"]
    task.max_runs_per_team, task.max_runs_per_team_per_day = 10, 3
    task.save()
    a1 = board_world["runs"]["a1"]
    Run.objects.filter(pk=a1.pk).update(n_requested=480, n_verified=312)
    Run.objects.filter(pk=board_world["runs"]["a2"].pk).update(state="failed", quota_refunded=True)
    snapshots.standard(board_world)
    client.force_login(board_world["alice"])
    html = client.get(reverse("task_runs", args=["ner"])).content.decode()
    assert "312 of 480 items verified" in html and 'role="progressbar"' in html
    assert 'aria-valuenow="312"' in html and '<rect width="65"' in html
    assert "0.900" in html  # a1's published precision
    # a1 counts (created now); the failed a2 is refunded: 1 used of 3 today, 1 of 10 in total
    assert "<strong>2</strong> of 3 submissions left today" in html
    assert "<strong>9</strong> of 10 in total" in html
    assert "1 refunded so far" in html
    assert "b-one" not in html


def test_my_runs_never_shows_held_scores(client, board_world, snapshots):
    snapshots.standard(board_world, published=False)
    client.force_login(board_world["alice"])
    html = client.get(reverse("task_runs", args=["ner"])).content.decode()
    assert "not published yet" in html and "0.900" not in html


def test_run_page_scores_rank_and_history_for_the_team(client, board_world, snapshots):
    run = board_world["runs"]["a1"]
    snapshots.standard(board_world, version=1)
    snapshots.standard(board_world, version=2)
    snapshots.write(
        board_world["task"],
        [
            (
                run,
                {
                    "precision": (0.777, 0.7, 0.8),
                    "recall": (0.1, 0.05, 0.2),
                    "f1": (0.11, 0.05, 0.2),
                },
                None,
            )
        ],
        version=3,
        published=False,
    )
    RunEvent.objects.create(run=run, state="queued", reason="3 predictions", at=timezone.now())
    client.force_login(board_world["alice"])
    html = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "Snapshot v2" in html and "0.777" not in html
    assert "[0.850, 0.940]" in html and "\u22120.050" in html
    ranks = re.findall(r'<td><span title="[^"]*">([^<]+)</span></td>', html)
    assert ranks == ["1", "2\u20133", "1\u20132"]  # one notation: the range, as on the board
    assert html.count("<svg") == 3 and "2 snapshots" in html
    assert "3 predictions" in html
    # organizers see the held snapshot, marked as held
    client.force_login(board_world["org"])
    html = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "Snapshot v3" in html and "held-badge" in html and "0.777" in html
    assert "rank not computed" in html
    assert "Edit the run" not in html  # organizers do not edit a team's run


def test_team_edits_name_description_and_link(client, board_world):
    run = board_world["runs"]["a1"]
    client.force_login(board_world["alice"])
    url = reverse("run_detail", args=[run.pk])
    assert "Edit the run" in client.get(url).content.decode()
    response = client.post(
        url,
        {"name": "better name", "description": "BERT + rules", "link": "https://example.org/code"},
    )
    assert response.status_code == 302
    run.refresh_from_db()
    assert (run.name, run.description, run.link) == (
        "better name",
        "BERT + rules",
        "https://example.org/code",
    )
    html = client.get(url).content.decode()
    assert 'href="https://example.org/code" rel="nofollow noopener noreferrer"' in html


@pytest.mark.parametrize(
    "data, field, message",
    [
        ({"name": "", "link": ""}, "name", "This field is required"),
        ({"name": "ok", "link": "javascript:alert(1)"}, "link", "must be an http or https URL"),
        ({"name": "ok", "link": "ftp://example.org/x"}, "link", "must be an http or https URL"),
        ({"name": "x" * 121, "link": ""}, "name", "at most 120 characters"),
    ],
)
def test_bad_run_details_are_400_with_field_errors(client, board_world, data, field, message):
    run = board_world["runs"]["a1"]
    client.force_login(board_world["alice"])
    response = client.post(reverse("run_detail", args=[run.pk]), data)
    assert response.status_code == 400
    html = response.content.decode()
    assert 'class="field has-error"' in html and message in html
    run.refresh_from_db()
    assert run.name == "a-one" and run.link == ""


def test_only_the_team_edits_and_only_with_csrf(client, board_world):
    run = board_world["runs"]["a1"]
    url = reverse("run_detail", args=[run.pk])
    client.force_login(board_world["org"])
    assert client.post(url, {"name": "hijack"}).status_code == 403
    client.force_login(board_world["bob"])
    assert client.post(url, {"name": "hijack"}).status_code == 404
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(board_world["alice"])
    assert strict.post(url, {"name": "hijack"}).status_code == 403
    run.refresh_from_db()
    assert run.name == "a-one"
