"""The task page from the pages: the overview with rules, terms and data (Markdown rendered,
hostile text inert), a team accepting the terms on the submit page (and a run refused before),
downloads under the task's rule, and the organize page's parts: the page's text with its
preview, the acceptances, the data files (added, changed, replaced, deleted, refused)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from hostile_markup import HOSTILE, Elements, assert_inert

from leaderboard.models import Run, Task, TaskFile, TermsAcceptance
from leaderboard.page_text import text_digest
from leaderboard.services.task_files import add_task_file
from leaderboard.services.tasks import update_task
from leaderboard.services.terms import accept_terms

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media_root")]

TERMS = "Runs are **published** under the team's name."


@pytest.fixture
def page(task):
    return update_task(
        task=task,
        description="# About\n\nFind the **matches**.",
        rules="1. One account per person",
        terms=TERMS,
    )


def text(response) -> str:
    return response.content.decode()


def assert_page_inert(html: str) -> None:
    """The whole page, parsed: scripts only from the site's static files, no event attribute,
    no link or form to a javascript: or data: URL (refused links stay text)."""
    for tag, attrs in Elements(html).elements:
        if tag == "script":
            assert (attrs.get("src") or "").startswith("/static/"), attrs
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, attrs)
            if name in ("href", "src", "action", "formaction"):
                assert not (value or "").strip().lower().startswith(("javascript:", "data:"))


def page_text_of(html: str) -> str:
    """The rendered Markdown blocks of a page."""
    blocks = html.split('<div class="page-text')[1:]
    return "".join(block.split("</div>")[0].split(">", 1)[1] for block in blocks)


# -- the overview -------------------------------------------------------------------------------
def test_the_overview_shows_the_page_in_sections(client, page):
    html = text(client.get(f"/tasks/{page.slug}/overview/"))
    for anchor in ('id="overview"', 'id="rules"', 'id="terms"', 'id="data"'):
        assert anchor in html
    assert "<h3>About</h3>" in html and "<strong>matches</strong>" in html
    assert "<li>One account per person</li>" in html
    assert text_digest(TERMS)[:12] in html
    assert 'href="/tasks/linkage/overview/" class="active"' in html  # the header's first tab


def test_the_other_tabs_no_longer_carry_the_overview(client, page):
    assert "matches" not in text(client.get(f"/tasks/{page.slug}/"))


def test_an_empty_page_says_so(client, task):
    html = text(client.get(f"/tasks/{task.slug}/overview/"))
    assert "have not written an overview yet" in html and 'id="rules"' not in html
    assert "have not shared any files yet" in html


@pytest.mark.parametrize("field", ["description", "rules", "terms"])
def test_hostile_page_text_is_inert_on_the_overview(client, task, field):
    Task.objects.filter(pk=task.pk).update(**{field: "\n\n".join(HOSTILE)})
    html = text(client.get(f"/tasks/{task.slug}/overview/"))
    assert_inert(page_text_of(html))
    assert_page_inert(html)


# -- terms on the submit page -------------------------------------------------------------------
def test_a_team_accepts_the_terms_on_the_submit_page_then_submits(
    client, page, team, participant, sent_jobs
):
    client.force_login(participant)
    html = text(client.get(f"/tasks/{page.slug}/submit/"))
    assert "<strong>published</strong>" in html and "Accept the terms for Alpha" in html
    refused = client.post(
        f"/tasks/{page.slug}/submit/", {"file": SimpleUploadedFile("r.tsv", b"a\t0.5\n")}
    )
    assert refused.status_code == 403
    assert "has not accepted the current terms" in text(refused)
    assert not Run.objects.exists()
    accepted = client.post(
        f"/tasks/{page.slug}/terms/accept/",
        {"team": team.pk, "digest": text_digest(TERMS), "next": "submit"},
    )
    assert accepted.status_code == 302 and accepted["Location"] == f"/tasks/{page.slug}/submit/"
    acceptance = TermsAcceptance.objects.get()
    assert (acceptance.team, acceptance.accepted_by) == (team, participant)
    html = text(client.get(f"/tasks/{page.slug}/submit/"))
    assert "Accept the terms" not in html and "accepted</span> by pat" in html
    submitted = client.post(
        f"/tasks/{page.slug}/submit/", {"file": SimpleUploadedFile("r.tsv", b"a\t0.5\n")}
    )
    assert submitted.status_code == 302


def test_accepting_terms_that_changed_since_the_page_was_read_is_refused(
    client, page, team, participant
):
    client.force_login(participant)
    response = client.post(
        f"/tasks/{page.slug}/terms/accept/",
        {"team": team.pk, "digest": text_digest("older terms"), "next": "overview"},
    )
    assert response.status_code == 409
    assert "changed since the version you read" in text(response)
    assert not TermsAcceptance.objects.exists()


def test_a_changed_text_asks_the_team_again(client, page, team, participant):
    accept_terms(task=page, team=team, user=participant)
    update_task(task=page, terms=TERMS + " And cite us.")
    client.force_login(participant)
    html = text(client.get(f"/tasks/{page.slug}/submit/"))
    assert "the terms changed since your team accepted them" in html
    assert "Accept the terms for Alpha" in html


# -- downloads ---------------------------------------------------------------------------------
def test_downloads_follow_the_tasks_rule(client, page, team, participant, organizer):
    added = add_task_file(
        task=page,
        user=organizer,
        upload=SimpleUploadedFile("pairs.jsonl", b'{"key": "a"}\n'),
        title="Record pairs",
    )
    url = f"/tasks/{page.slug}/files/{added.pk}/"
    overview = text(client.get(f"/tasks/{page.slug}/overview/"))
    assert "Record pairs" in overview and added.sha256[:16] in overview
    assert url not in overview and "Sign in" in overview
    anonymous = client.get(url)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/accounts/login/")
    client.force_login(participant)
    refused = client.get(url)
    assert refused.status_code == 403
    assert "accept them for your team" in text(refused)
    accept_terms(task=page, team=team, user=participant)
    assert url in text(client.get(f"/tasks/{page.slug}/overview/"))
    download = client.get(url)
    assert download.status_code == 200 and b"".join(download.streaming_content) == b'{"key": "a"}\n'
    assert download["Content-Disposition"] == 'attachment; filename="pairs.jsonl"'


def test_a_download_while_the_object_store_is_down_is_503_on_the_overview(
    client, task, organizer, request
):
    added = add_task_file(
        task=task, user=organizer, upload=SimpleUploadedFile("pairs.jsonl", b"{}\n")
    )
    request.getfixturevalue("unreachable_object_store")  # the store goes down
    client.force_login(organizer)
    response = client.get(f"/tasks/{task.slug}/files/{added.pk}/")
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert "the file storage is unavailable; retry the download shortly" in text(response)


# -- the organize pages' Task page section -------------------------------------------------------
def page_body(**fields):
    return {"description": "", "rules": "", "terms": "", "data_access": "terms_accepted", **fields}


def test_organizers_edit_the_page_text(client, task, organizer):
    client.force_login(organizer)
    html = text(client.get(f"/tasks/{task.slug}/organize/page/"))
    assert 'action="/tasks/linkage/organize/page/"' in html
    assert 'data-preview-url="/tasks/new/page-preview/"' in html
    assert "page_text_preview.js" in html
    saved = client.post(
        f"/tasks/{task.slug}/organize/page/", page_body(rules="No sharing.", terms=TERMS)
    )
    assert saved.status_code == 302
    task.refresh_from_db()
    assert (task.rules, task.terms) == ("No sharing.", TERMS)
    assert saved["Location"] == "/tasks/linkage/organize/page/"
    messages = text(client.get(f"/tasks/{task.slug}/organize/page/"))
    assert "Task page saved: rules, terms" in messages
    assert "No team has accepted the terms yet." in messages


def test_a_refused_page_text_keeps_what_was_typed(client, task, organizer):
    client.force_login(organizer)
    response = client.post(
        f"/tasks/{task.slug}/organize/page/",
        page_body(rules="Keep me", terms="x" * 100_001),
    )
    assert response.status_code == 400
    html = text(response)
    assert "at most 100,000 characters" in html and "Keep me" in html
    task.refresh_from_db()
    assert task.rules == "" and task.terms == ""


def test_the_preview_renders_markdown_as_the_page_will(client, organizer, task):
    client.force_login(organizer)
    response = client.post("/tasks/new/page-preview/", {"text": "# Rules\n\n<script>x</script>"})
    assert response.status_code == 200
    assert "<" not in response.content.decode()  # markup characters escaped in the JSON
    html = json.loads(response.content)["html"]
    assert html.startswith("<h3>Rules</h3>") and "&lt;script&gt;" in html


def test_organizers_see_which_teams_accepted(client, page, team, participant, organizer):
    accept_terms(task=page, team=team, user=participant)
    client.force_login(organizer)
    html = text(client.get(f"/tasks/{page.slug}/organize/page/"))
    row = html.split('<tr data-team="Alpha">')[1].split("</tr>")[0]
    assert "pat" in row and "(current)" in row


def test_organizers_add_change_replace_and_delete_data_files(client, task, organizer):
    client.force_login(organizer)
    added = client.post(
        f"/tasks/{task.slug}/organize/files/",
        {
            "file": SimpleUploadedFile("sample.tsv", b"a\t0.5\n"),
            "kind": "sample_run",
            "title": "Sample run",
            "description": "",
        },
    )
    assert added.status_code == 302
    stored = TaskFile.objects.get()
    assert (stored.title, stored.kind, stored.size) == ("Sample run", "sample_run", 6)
    assert added["Location"] == "/tasks/linkage/organize/page/"
    html = text(client.get(f"/tasks/{task.slug}/organize/page/"))
    assert "Data file added: Sample run (sample.tsv)." in html
    assert f'action="/tasks/linkage/organize/files/{stored.pk}/"' in html
    changed = client.post(
        f"/tasks/{task.slug}/organize/files/{stored.pk}/",
        {
            "kind": "other",
            "title": "Sample",
            "description": "two lines",
            "file": SimpleUploadedFile("sample2.tsv", b"a\t0.5\nb\t0.1\n"),
        },
    )
    assert changed.status_code == 302
    stored.refresh_from_db()
    assert (stored.title, stored.file_name, stored.size) == ("Sample", "sample2.tsv", 12)
    deleted = client.post(f"/tasks/{task.slug}/organize/files/{stored.pk}/delete/")
    assert deleted.status_code == 302 and not TaskFile.objects.exists()


def test_a_refused_data_file_is_shown_with_its_reason(client, task, organizer, settings):
    settings.TASK_FILE_MAX_BYTES = 4
    client.force_login(organizer)
    response = client.post(
        f"/tasks/{task.slug}/organize/files/",
        {"file": SimpleUploadedFile("big.tsv", b"12345"), "kind": "input_data"},
    )
    assert response.status_code == 413
    html = text(response)
    assert "Your data file was not accepted" in html and "over the limit of 4 bytes" in html
    assert not TaskFile.objects.exists()


def test_a_data_file_needs_no_smaller_limit_than_the_tasks_runs(client, task, organizer):
    # A task's runs may be limited to a few bytes; its data files have their own limit.
    update_task(task=task, max_upload_bytes=1)
    client.force_login(organizer)
    body = b"x" * (2 * 1024 * 1024)  # over the runs' limit and the request slack
    response = client.post(
        f"/tasks/{task.slug}/organize/files/",
        {"file": SimpleUploadedFile("big.bin", body), "kind": "input_data"},
    )
    assert response.status_code == 302 and TaskFile.objects.get().size == len(body)


def test_a_stranger_cannot_reach_the_files_of_a_draft(client, organizer):
    from leaderboard.services.tasks import create_task

    draft = create_task(slug="draft", title="D", organizers=[organizer], state="draft")
    added = add_task_file(task=draft, user=organizer, upload=SimpleUploadedFile("a.tsv", b"a\n"))
    stranger = get_user_model().objects.create_user("stranger")
    client.force_login(stranger)
    assert client.get("/tasks/draft/overview/").status_code == 404
    assert client.get(f"/tasks/draft/files/{added.pk}/").status_code == 404
