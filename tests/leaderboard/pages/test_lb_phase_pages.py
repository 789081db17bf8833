"""Phases on the pages: the window in every task header (UTC, localized by a static script), a
refused early upload, runs after the deadline marked on the board and the runs pages, and the hold
from the deadline on before the job records it (dates are set on the organize page: its tests)."""

from __future__ import annotations

import re
from datetime import UTC, timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from leaderboard.models import Run, Task

pytestmark = pytest.mark.django_db

HOUR = timedelta(hours=1)


def dated(task: Task, **fields) -> Task:
    Task.objects.filter(pk=task.pk).update(**fields)
    task.refresh_from_db()
    return task


def html_of(client, user, url: str, status: int = 200) -> str:
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == status
    return response.content.decode()


def test_the_header_shows_the_window_in_utc_for_the_script_to_localize(client, board_world):
    opens = timezone.now().replace(microsecond=0) + 2 * HOUR
    dated(board_world["task"], submissions_open_at=opens, submissions_close_at=opens + 24 * HOUR)
    html = html_of(client, board_world["alice"], reverse("task_board", args=["ner"]))
    header = re.search(r'<p class="phases" id="task-phases">(.*?)</p>', html, re.S).group(1)
    assert "not open yet" in header
    iso = opens.astimezone(UTC).isoformat().replace("+00:00", "Z")
    text = f"{opens:%Y-%m-%d %H:%M} UTC"
    assert f'<time class="local-time" datetime="{iso}" title="{text}">{text}</time>' in header
    assert "marked “after the deadline”" in header
    assert '<script src="/static/leaderboard/local_time.js" defer></script>' in html
    assert "<script>" not in html  # the CSP allows no inline script


def test_the_task_list_shows_each_deadline(client, board_world):
    close = timezone.now().replace(microsecond=0) + 24 * HOUR
    dated(board_world["task"], submissions_close_at=close)
    html = client.get(reverse("home")).content.decode()
    row = re.search(r"<tr>\s*<td><a href=\"/tasks/ner/\">.*?</tr>", html, re.S).group(0)
    assert f">{close:%Y-%m-%d %H:%M} UTC</time>" in row


def test_a_task_without_dates_shows_no_window(client, board_world):
    html = html_of(client, board_world["alice"], reverse("task_board", args=["ner"]))
    assert 'id="task-phases"' not in html


def test_an_upload_before_the_window_is_refused_on_the_page(client, board_world):
    dated(board_world["task"], submissions_open_at=timezone.now() + HOUR)
    client.force_login(board_world["alice"])
    response = client.post(
        reverse("submit_run", args=["ner"]),
        {"file": SimpleUploadedFile("p.tsv", b"k0\t0.9\n"), "name": "early"},
    )
    assert response.status_code == 409
    html = response.content.decode()
    assert "Your run was not accepted:" in html and "accepts runs from" in html
    assert not Run.objects.filter(name="early").exists()


def test_runs_after_the_deadline_are_marked_on_the_board_and_runs_pages(
    client, board_world, snapshots
):
    late = board_world["runs"]["b1"]
    Run.objects.filter(pk=late.pk).update(after_deadline=True)
    snapshots.standard(board_world)
    board = html_of(client, board_world["stranger"], reverse("task_board", args=["ner"]))
    rows = dict(re.findall(r'<tr class="run-row[^"]*" data-run="(\d+)">(.*?)</tr>', board, re.S))
    assert "after the deadline" in rows[str(late.pk)]
    assert not any("after the deadline" in rows[str(r.pk)] for r in (board_world["runs"]["a1"],))
    assert f'class="run-row provisional late" data-run="{late.pk}"' in board
    runs = html_of(client, board_world["bob"], reverse("task_runs", args=["ner"]))
    assert "after the deadline" in runs
    detail = html_of(client, board_world["bob"], reverse("run_detail", args=[late.pk]))
    assert 'id="after-deadline"' in detail
    own = html_of(client, board_world["alice"], reverse("task_runs", args=["ner"]))
    assert "after the deadline" not in own


def test_a_passed_deadline_holds_the_public_board_before_the_job_runs(
    client, board_world, snapshots
):
    snapshots.standard(board_world, version=1)
    dated(board_world["task"], submissions_close_at=timezone.now() - HOUR)
    assert board_world["task"].board_held is False  # nothing recorded the hold
    html = html_of(client, board_world["stranger"], reverse("task_board", args=["ner"]))
    assert "Results are being held by the organizers; last published: version 1" in html
    organizer = html_of(client, board_world["org"], reverse("organize_board", args=["ner"]))
    assert "The public board is held." in organizer
    assert 'id="dated-publication"' in organizer and "publish it by hand" in organizer
