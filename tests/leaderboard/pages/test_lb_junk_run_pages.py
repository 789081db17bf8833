"""Junk runs on the pages: the submit page shows a file in the wrong format refused with its hint
at the top of the form; the organize page lists runs held for the organizers with their actions,
and the run page tells the team why its run is held."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from leaderboard.models import Run
from leaderboard.services.ingest import ingest_run
from leaderboard.services.reference import upload_reference

pytestmark = pytest.mark.django_db

CSV = b"key,score\nrec-1|rec-2,0.9000\nrec-3|rec-4,0.2500\n"


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_submit_page_shows_the_hint_above_the_form(task, team, participant, sent_jobs):
    response = signed_in(participant).post(
        "/tasks/linkage/submit/", {"file": SimpleUploadedFile("run.csv", CSV), "name": "excel"}
    )
    assert response.status_code == 400
    page = response.content.decode()
    hint = (
        "line 1: this looks like CSV (comma-separated): separate key and score with a tab, and "
        "remove the header line"
    )
    assert f"<strong>Your run was not accepted:</strong> {hint}" in page
    assert page.index(hint) < page.index('<form method="post" enctype="multipart/form-data"')
    assert page.count("this looks like CSV") == 1  # the hint once, not again as a problem list
    run = Run.objects.get(name="excel")
    assert run.state == Run.State.REJECTED and sent_jobs == []
    assert f'href="/runs/{run.pk}/"' in page  # "See the rejected run"


# -- runs held for the organizers --------------------------------------------------------------
TRUTH = (Path(__file__).resolve().parents[2] / "data" / "febrl4_slice" / "truth.tsv").read_text()
JUNK = "".join(
    json.dumps({"key": f"{key},0.9000", "score": 0.5}) + "\n" for key in TRUTH.split()[100:160]
).encode()


@pytest.fixture
def held_run(task, team, participant, organizer, sent_jobs, settings, tmp_path) -> Run:
    settings.MEDIA_ROOT = tmp_path
    reference = "".join(f"{key}\tdoc\n" for key in TRUTH.split()[:30])
    upload_reference(task=task, user=organizer, upload=io.BytesIO(reference.encode()))
    response = signed_in(participant).post(
        "/tasks/linkage/submit/", {"file": SimpleUploadedFile("run.jsonl", JUNK), "name": "junk"}
    )
    assert response.status_code == 302
    run = Run.objects.get(name="junk")
    assert ingest_run(run.pk) == Run.State.HELD
    return run


def test_the_organize_page_lists_held_runs_with_their_actions(held_run, organizer):
    page = signed_in(organizer).get("/tasks/linkage/organize/").content.decode()
    section = page[page.index('<section class="held-runs" id="held-runs">') :]
    section = section[: section.index("</section>")]
    assert f'href="/runs/{held_run.pk}/">junk</a>' in section and "Alpha" in section
    assert "60 of its 60 keys match no item of the task and look malformed" in section
    assert f'action="/tasks/linkage/organize/runs/{held_run.pk}/release/"' in section
    assert f'action="/tasks/linkage/organize/runs/{held_run.pk}/reject/"' in section


def test_no_held_runs_no_section(task, organizer):
    page = signed_in(organizer).get("/tasks/linkage/organize/").content.decode()
    assert 'id="held-runs"' not in page


def test_release_from_the_page(held_run, organizer, sent_jobs, django_capture_on_commit_callbacks):
    client = signed_in(organizer)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/tasks/linkage/organize/runs/{held_run.pk}/release/")
    assert response.status_code == 302 and response["Location"] == "/tasks/linkage/organize/"
    page = client.get("/tasks/linkage/organize/").content.decode()
    assert (
        "Run &#x27;junk&#x27; of team Alpha released: it is validated again, then evaluated."
        in page
    )
    assert 'id="held-runs"' not in page
    held_run.refresh_from_db()
    assert held_run.state == Run.State.RECEIVED
    assert ("evaluation.ingest_run", [held_run.pk]) in sent_jobs


def test_reject_from_the_page_then_a_refused_second_action(held_run, organizer):
    client = signed_in(organizer)
    response = client.post(f"/tasks/linkage/organize/runs/{held_run.pk}/reject/", follow=True)
    assert (
        "Run &#x27;junk&#x27; of team Alpha rejected: it uses no quota."
        in response.content.decode()
    )
    held_run.refresh_from_db()
    assert held_run.state == Run.State.REJECTED
    response = client.post(f"/tasks/linkage/organize/runs/{held_run.pk}/release/")
    assert response.status_code == 409
    page = response.content.decode()
    assert '<h2 id="refusal-title">The held run was not released</h2>' in page
    assert f"Run {held_run.pk} is rejected, not held" in page


def test_the_run_page_tells_the_team_why_and_gives_the_organizers_the_actions(
    held_run, participant, organizer
):
    team_page = signed_in(participant).get(f"/runs/{held_run.pk}/").content.decode()
    assert "held for the organizers</span>" in team_page
    assert "60 of its 60 keys match no item of the task and look malformed" in team_page
    assert "held for the organizers: not evaluated unless they release it" in team_page
    assert '<span class="line">line 1</span>' in team_page  # the first malformed key
    assert 'id="held-run-actions"' not in team_page and "/release/" not in team_page
    organizer_page = signed_in(organizer).get(f"/runs/{held_run.pk}/").content.decode()
    assert 'id="held-run-actions"' in organizer_page
    assert f'action="/tasks/linkage/organize/runs/{held_run.pk}/release/"' in organizer_page
