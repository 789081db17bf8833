"""The task page through the API: the page's fields on a task, its terms (read, accepted for a
team, who accepted for organizers), a run refused until the terms are accepted, and its data
files (listed, added, changed, replaced, deleted, downloaded under the task's rule)."""

from __future__ import annotations

import hashlib

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard.models import Run, Task, TaskFile, TermsAcceptance
from leaderboard.page_text import text_digest
from leaderboard.services.task_files import add_task_file
from leaderboard.services.tasks import update_task

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media_root")]

TERMS = "Runs are **published**."


def error(response) -> dict:
    return response.json()["error"]


def named(response) -> set[str]:
    """The fields an error names (in ``fields``, or its problems ``"<field>: ..."``)."""
    body = error(response)
    return set(body.get("fields", {})) | {p["message"].split(":")[0] for p in body["problems"]}


# -- the page's fields ----------------------------------------------------------------------------
def test_organizers_write_the_page_and_everyone_reads_it(api, task, organizer):
    changed = api(organizer).patch(
        f"/api/tasks/{task.slug}/",
        {"description": "# About", "rules": "1. Be fair", "terms": TERMS, "data_access": "public"},
        format="json",
    )
    assert changed.status_code == 200, changed.json()
    data = api().get(f"/api/tasks/{task.slug}/").json()
    assert (data["description"], data["rules"], data["terms"]) == ("# About", "1. Be fair", TERMS)
    assert data["data_access"] == "public" and data["terms_digest"] == text_digest(TERMS)
    assert data["terms_url"].endswith(f"/api/tasks/{task.slug}/terms/")
    assert data["files_url"].endswith(f"/api/tasks/{task.slug}/files/")
    assert data["url"] == f"http://testserver/api/tasks/{task.slug}/"
    assert data["runs_url"] == f"http://testserver/api/tasks/{task.slug}/runs/"


@pytest.mark.parametrize(
    ("body", "field"),
    [({"data_access": "everyone"}, "data_access"), ({"terms": "x" * 100_001}, "terms")],
)
def test_invalid_page_fields_are_refused_by_name(api, task, organizer, body, field):
    response = api(organizer).patch(f"/api/tasks/{task.slug}/", body, format="json")
    assert response.status_code == 400 and error(response)["code"] == "invalid"
    assert field in named(response)


# -- terms ----------------------------------------------------------------------------------------
def test_terms_are_read_and_accepted_for_the_callers_team(api, with_terms, team, participant):
    url = f"/api/tasks/{with_terms.slug}/terms/"
    anonymous = api().get(url).json()
    assert anonymous == {
        "task": with_terms.slug,
        "terms": with_terms.terms,
        "digest": text_digest(with_terms.terms),
        "must_accept": True,
        "teams": [],
    }
    client = api(participant)
    (mine,) = client.get(url).json()["teams"]
    assert mine["team"] == team.name and mine["accepted"] is False and mine["accepted_at"] is None
    accepted = client.post(url, {"digest": text_digest(with_terms.terms)}, format="json")
    assert accepted.status_code == 201
    body = accepted.json()
    assert (body["team"], body["accepted_by"], body["current"]) == (team.name, "pat", True)
    assert client.post(url, {}, format="json").status_code == 200  # idempotent
    (mine,) = client.get(url).json()["teams"]
    assert mine["accepted"] is True and mine["accepted_by"] == "pat"
    assert TermsAcceptance.objects.count() == 1


def test_stale_terms_and_other_refusals(api, with_terms, team, participant, task):
    url = f"/api/tasks/{with_terms.slug}/terms/"
    stale = api(participant).post(url, {"digest": "0" * 64}, format="json")
    assert stale.status_code == 409 and error(stale)["code"] == "terms_changed"
    assert error(stale)["digest"] == text_digest(with_terms.terms)
    unknown = api(participant).post(url, {"team": "Nope"}, format="json")
    assert unknown.status_code == 400 and error(unknown)["code"] == "invalid"
    field = api(participant).post(url, {"version": 1}, format="json")
    assert field.status_code == 400 and "version" in named(field)
    loner = get_user_model().objects.create_user("loner")
    assert api(loner).post(url, {}, format="json").status_code == 403
    assert api().post(url, {}, format="json").status_code == 401
    assert not TermsAcceptance.objects.exists()


def test_a_run_is_refused_until_the_team_accepts(api, with_terms, team, participant, sent_jobs):
    runs = f"/api/tasks/{with_terms.slug}/runs/"

    def upload():
        return {"file": SimpleUploadedFile("run.tsv", b"a\t0.5\n")}

    refused = api(participant).post(runs, upload(), format="multipart")
    assert refused.status_code == 403 and error(refused)["code"] == "terms_not_accepted"
    assert "/terms/" in error(refused)["message"] and not Run.objects.exists()
    api(participant).post(f"/api/tasks/{with_terms.slug}/terms/", {}, format="json")
    assert api(participant).post(runs, upload(), format="multipart").status_code == 202


def test_organizers_see_every_acceptance_with_the_current_one_marked(
    api, with_terms, team, participant, organizer
):
    client = api(participant)
    client.post(f"/api/tasks/{with_terms.slug}/terms/", {}, format="json")
    update_task(task=with_terms, terms="New terms.")
    client.post(f"/api/tasks/{with_terms.slug}/terms/", {}, format="json")
    url = f"/api/tasks/{with_terms.slug}/terms/acceptances/"
    listed = api(organizer).get(url).json()
    assert [(a["team"], a["current"]) for a in listed] == [(team.name, True), (team.name, False)]
    assert api(participant).get(url).status_code == 403


# -- data files ----------------------------------------------------------------------------------
def add(task, organizer, body=b"k\t1\n", name="sample.tsv"):
    return add_task_file(task=task, user=organizer, upload=SimpleUploadedFile(name, body))


def test_files_are_listed_with_their_digest_and_whether_the_caller_may_download(
    api, with_terms, organizer, participant, team
):
    added = add(with_terms, organizer)
    url = f"/api/tasks/{with_terms.slug}/files/"
    listing = api(participant).get(url).json()
    assert listing["data_access"] == "terms_accepted" and listing["may_download"] is False
    assert "accept" in listing["reason"]
    (listed,) = listing["files"]
    assert listed["sha256"] == hashlib.sha256(b"k\t1\n").hexdigest() and listed["size"] == 4
    assert listed["download_url"].endswith(f"/files/{added.pk}/download/")
    download = api(participant).get(f"{url}{added.pk}/download/")
    assert download.status_code == 403 and "accept" in error(download)["message"]
    assert api().get(f"{url}{added.pk}/download/").status_code == 401
    api(participant).post(f"/api/tasks/{with_terms.slug}/terms/", {}, format="json")
    assert api(participant).get(url).json()["may_download"] is True
    download = api(participant).get(f"{url}{added.pk}/download/")
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == b"k\t1\n"
    assert download["Content-Type"] == "text/tab-separated-values"
    assert download["Content-Disposition"] == 'attachment; filename="sample.tsv"'


@pytest.mark.parametrize(
    ("name", "content_type"),
    [("page.html", "application/octet-stream"), ("x.svg", "application/octet-stream")],
)
def test_a_file_a_browser_would_run_is_served_as_bytes(api, task, organizer, name, content_type):
    update_task(task=task, data_access=Task.DataAccess.PUBLIC)
    added = add(task, organizer, body=b"<script>alert(1)</script>", name=name)
    response = api().get(f"/api/tasks/{task.slug}/files/{added.pk}/download/")
    assert response["Content-Type"] == content_type
    assert response["Content-Disposition"].startswith("attachment;")


def test_a_download_while_the_object_store_is_down_is_503(api, task, organizer, request):
    added = add(task, organizer)
    request.getfixturevalue("unreachable_object_store")  # the store goes down
    response = api(organizer).get(f"/api/tasks/{task.slug}/files/{added.pk}/download/")
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert error(response)["code"] == "unavailable"


def test_organizers_add_change_replace_and_delete_files(api, task, organizer, participant):
    client = api(organizer)
    url = f"/api/tasks/{task.slug}/files/"
    created = client.post(
        url,
        {"file": SimpleUploadedFile("starter.py", b"print(1)\n"), "kind": "starter"},
        format="multipart",
    )
    assert created.status_code == 201, created.json()
    file_url = f"{url}{created.json()['id']}/"
    assert (created.json()["title"], created.json()["kind"]) == ("starter.py", "starter")
    retitled = client.patch(file_url, {"title": "Starter script"}, format="json")
    assert retitled.status_code == 200 and retitled.json()["title"] == "Starter script"
    replaced = client.patch(
        file_url, {"file": SimpleUploadedFile("starter-v2.py", b"print(2)\n")}, format="multipart"
    )
    assert replaced.status_code == 200
    assert replaced.json()["file_name"] == "starter-v2.py"
    assert replaced.json()["sha256"] == hashlib.sha256(b"print(2)\n").hexdigest()
    assert replaced.json()["id"] == created.json()["id"]
    assert api(participant).patch(file_url, {"title": "x"}, format="json").status_code == 403
    assert api(participant).delete(file_url).status_code == 403
    assert client.delete(file_url).status_code == 204
    assert client.get(file_url).status_code == 404
    assert not TaskFile.objects.exists()


def test_file_refusals_have_the_error_body(api, task, organizer, settings):
    client = api(organizer)
    url = f"/api/tasks/{task.slug}/files/"
    missing = client.post(url, {"kind": "starter"}, format="multipart")
    assert missing.status_code == 400 and error(missing)["code"] == "missing_file"
    unknown = client.post(
        url, {"file": SimpleUploadedFile("a.txt", b"a"), "colour": "red"}, format="multipart"
    )
    assert unknown.status_code == 400 and "colour" in named(unknown)
    bad_kind = client.post(
        url, {"file": SimpleUploadedFile("a.txt", b"a"), "kind": "video"}, format="multipart"
    )
    assert bad_kind.status_code == 400 and "kind" in named(bad_kind)
    settings.TASK_FILE_MAX_BYTES = 10
    large = client.post(url, {"file": SimpleUploadedFile("a.txt", b"a" * 11)}, format="multipart")
    assert large.status_code == 413 and error(large)["code"] == "too_large"
    empty = client.post(url, {"file": SimpleUploadedFile("a.txt", b"")}, format="multipart")
    assert empty.status_code == 400
    assert not TaskFile.objects.exists()


def test_a_drafts_files_and_terms_are_invisible(api, organizer, participant):
    from leaderboard.services.tasks import create_task

    draft = create_task(slug="draft", title="D", organizers=[organizer], state="draft", terms="T")
    added = add(draft, organizer)
    for path in ("terms/", "files/", f"files/{added.pk}/", f"files/{added.pk}/download/"):
        assert api(participant).get(f"/api/tasks/draft/{path}").status_code == 404, path
        assert api(organizer).get(f"/api/tasks/draft/{path}").status_code == 200, path
