"""Run pages beyond the team's: the public page of a run on the board (published, held and draft
boards), withdrawing a run and marking a baseline from its page, the board without withdrawn
runs and with baselines, and the limits on the submit page."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from leaderboard.models import Run, Task

pytestmark = pytest.mark.django_db

HELD = {"precision": (0.314, 0.25, 0.38), "recall": (0.2, 0.1, 0.3), "f1": (0.25, 0.2, 0.3)}


def run_url(run) -> str:
    return reverse("run_detail", args=[run.pk])


@pytest.fixture
def published(board_world, snapshots):
    """Snapshot 1 published; a1 described, linked, submitted by alice, with a file name."""
    a1 = board_world["runs"]["a1"]
    Run.objects.filter(pk=a1.pk).update(
        description="BM25 then a cross-encoder",
        link="https://example.org/paper",
        file_name="SECRET-FILE.tsv",
        reason="round 3: 40 items sent for verification",
        submitted_by=board_world["alice"],
    )
    snapshots.standard(board_world, version=1)
    return board_world


def test_anyone_opens_the_public_page_of_a_run_on_the_board(client, published):
    a1 = published["runs"]["a1"]
    for user in (None, published["bob"], published["stranger"]):
        client.logout()
        if user is not None:
            client.force_login(user)
        response = client.get(run_url(a1))
        assert response.status_code == 200
        html = response.content.decode()
        assert 'id="public-note"' in html
        assert "BM25 then a cross-encoder" in html and "https://example.org/paper" in html
        assert "0.900" in html  # its published precision
        # Nothing of what only its team sees: file, reason, timeline, edit or withdraw forms.
        for private in ("SECRET-FILE", "round 3:", "Timeline", "withdraw", "run-details", "alice"):
            assert private not in html, private
    # The board links the run's name to it, for the public too.
    client.logout()
    board = client.get(reverse("task_board", args=["ner"])).content.decode()
    assert f'href="{run_url(a1)}"' in board


def test_a_held_board_shows_the_public_only_the_published_scores(client, published, snapshots):
    task, a1 = published["task"], published["runs"]["a1"]
    snapshots.write(task, [(a1, HELD, None)], version=2, published=False)
    task.board_held = True
    task.save()
    html = client.get(run_url(a1)).content.decode()
    assert "0.900" in html and "0.314" not in html
    # A run only a held snapshot lists has no public page yet: sign in (or 404 when signed in).
    late = Run.objects.create(task=task, team=published["team_b"], name="late", state="scored")
    snapshots.write(task, [(late, HELD, None)], version=3, published=False)
    response = client.get(run_url(late))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    client.force_login(published["alice"])
    assert client.get(run_url(late)).status_code == 404


def test_runs_of_a_draft_task_have_no_public_page(client, published):
    Task.objects.filter(pk=published["task"].pk).update(state=Task.State.DRAFT)
    client.force_login(published["stranger"])
    assert client.get(run_url(published["runs"]["a1"])).status_code == 404
    client.force_login(published["org"])
    assert client.get(run_url(published["runs"]["a1"])).status_code == 200


def test_a_team_withdraws_its_run_from_its_page(client, published, sent_jobs):
    a1 = published["runs"]["a1"]
    client.force_login(published["alice"])
    html = client.get(run_url(a1)).content.decode()
    assert 'id="withdraw"' in html and "It will still count against your team's quota" in html
    response = client.post(reverse("run_withdraw", args=[a1.pk]))
    assert response.status_code == 302 and response["Location"] == run_url(a1)
    page = client.get(run_url(a1)).content.decode()
    assert "Run withdrawn: withdrawn by its team (alice)" in page
    assert 'id="withdraw"' not in page
    a1.refresh_from_db()
    assert a1.state == Run.State.WITHDRAWN
    # It leaves every board page at once, and its public page.
    client.logout()
    board = client.get(reverse("task_board", args=["ner"])).content.decode()
    assert "a-one" not in board and 'id="withdrawn-note"' in board
    assert client.get(run_url(a1)).status_code == 302  # the sign-in page: no public page


def test_a_fresh_run_says_its_slot_comes_back(client, published, sent_jobs):
    a2 = published["runs"]["a2"]
    Run.objects.filter(pk=a2.pk).update(state=Run.State.QUEUED)
    from leaderboard.models import Estimate

    Estimate.objects.filter(run=a2).delete()
    client.force_login(published["alice"])
    html = client.get(run_url(a2)).content.decode()
    assert "its submission will no longer count against your team" in html


def test_a_refused_withdrawal_is_shown_at_the_top_of_the_run_page(client, published):
    a2 = published["runs"]["a2"]
    Run.objects.filter(pk=a2.pk).update(state=Run.State.REJECTED)
    client.force_login(published["alice"])
    response = client.post(reverse("run_withdraw", args=[a2.pk]))
    assert response.status_code == 409
    html = response.content.decode()
    assert 'id="action-error"' in html and "there is nothing to withdraw" in html
    assert html.index('id="action-error"') < html.index("<h1>")


def test_organizers_mark_a_baseline_from_its_page_and_the_board_shows_it(
    client, published, snapshots, sent_jobs
):
    task, b1 = published["task"], published["runs"]["b1"]
    client.force_login(published["bob"])
    assert 'id="baseline-form"' not in client.get(run_url(b1)).content.decode()
    assert client.post(reverse("run_baseline", args=[b1.pk]), {"baseline": "1"}).status_code == 403
    client.force_login(published["org"])
    assert 'id="baseline-form"' in client.get(run_url(b1)).content.decode()
    response = client.post(reverse("run_baseline", args=[b1.pk]), {"baseline": "1"})
    assert response.status_code == 302
    b1.refresh_from_db()
    assert b1.baseline
    assert 'id="baseline"' in client.get(run_url(b1)).content.decode()
    # The next snapshot lists it as a baseline, without a rank.
    rows = [(r, *snapshots.STANDARD[k]) for k, r in published["runs"].items()]
    snapshot = snapshots.write(task, rows, version=2)
    snapshot.rows = [
        {**row, "baseline": True, "rank": dict.fromkeys(row["rank"])}
        if row["run"] == b1.pk
        else row
        for row in snapshot.rows
    ]
    snapshot.save()
    client.logout()
    board = client.get(reverse("task_board", args=["ner"])).content.decode()
    row = board[board.index(f'data-run="{b1.pk}"') :]
    row = row[: row.index("</tr>")]
    assert "baseline-badge" in row and "b-one" in row


def test_the_submit_page_gives_the_limits_and_checks_the_size_in_the_browser(
    client, published, settings
):
    task = published["task"]
    settings.UPLOAD_MAX_BYTES = 3 * 2**20
    task.max_upload_bytes, task.max_predictions_per_run = 10 * 2**20, 12345
    task.max_runs_per_team, task.max_runs_per_team_per_day = 10, 3
    task.save()
    client.force_login(published["alice"])
    html = client.get(reverse("submit_run", args=["ner"])).content.decode()
    assert 'data-max-bytes="3145728"' in html and "<strong>3 MiB</strong>" in html
    assert "<strong>12345</strong> predictions" in html
    assert "<strong>1</strong> of 3 submissions left today" in html  # a1 and a2 count
    assert 'src="/static/leaderboard/upload_limit.js"' in html and 'id="size-error"' in html


def test_a_run_uploaded_without_a_name_is_named_after_its_file(
    client, published, settings, tmp_path
):
    settings.MEDIA_ROOT = tmp_path
    task = published["task"]
    task.max_runs_per_team = task.max_runs_per_team_per_day = 10
    task.save()
    client.force_login(published["alice"])
    response = client.post(
        reverse("submit_run", args=["ner"]),
        {"file": SimpleUploadedFile("cross encoder.tsv", b"k0\t0.9\n"), "name": ""},
    )
    assert response.status_code == 302
    assert Run.objects.latest("id").name == "cross encoder"
