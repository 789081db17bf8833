"""Junk runs on the pages: the submit page shows a file in the wrong format refused with its hint
at the top of the form."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from leaderboard.models import Run

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
