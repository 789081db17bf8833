"""The organize overview's checklist: at the top, each need with its state and a link to the
section where it is done; opening refused (409) with what is missing in the banner at the top,
by the button and by the settings form (the form keeps what was typed); open and close once
ready."""

from __future__ import annotations

import re

import pytest
from django.forms.models import model_to_dict

from leaderboard.forms import TASK_SETTING_FIELDS
from leaderboard.models import Run, Task
from leaderboard.services.tasks import create_task

from pipeline_support import open_unchecked, satisfy_checklist

pytestmark = pytest.mark.django_db

ORGANIZE, STATE = "/tasks/t/organize/", "/tasks/t/organize/state/"


@pytest.fixture
def draft(organizer):
    return create_task(slug="t", title="T", organizers=[organizer])


@pytest.fixture
def org_client(client, organizer):
    client.force_login(organizer)
    return client


def text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html)).strip()


def checklist(page: str) -> dict[str, tuple[str, str, str]]:
    """Each check of the page's list: (its mark, its link, its text)."""
    rows = re.findall(r'<li class="check [^"]*" data-check="(\w+)">(.*?)</li>', page, re.S)
    found = {}
    for key, row in rows:
        mark = re.search(r'<span class="mark">(\w+)</span>', row).group(1)
        link = re.search(r'<a href="([^"]+)">', row).group(1)
        found[key] = (mark, link, text(row))
    return found


def test_the_checklist_opens_the_organize_page(org_client, draft):
    page = org_client.get(ORGANIZE).content.decode()
    assert page.index('id="readiness"') < page.index('id="attention"')
    rows = checklist(page)
    assert list(rows) == ["annotators", "reference_sample", "gold", "phases"]
    assert rows["annotators"][:2] == ("missing", "/tasks/t/organize/people/#annotators")
    assert rows["reference_sample"][:2] == ("missing", "/tasks/t/organize/data/#reference-sample")
    assert rows["gold"][:2] == ("missing", "/tasks/t/organize/data/#upload-gold")
    assert rows["phases"][:2] == ("done", "/tasks/t/organize/phases/#phases-form")
    assert rows["reference_sample"][2].startswith(
        "missing Reference sample: 0 items in 0 documents (version 0); recall needs at least 30"
    )
    # Every link leads to an element of its section's page.
    for _, link, _ in rows.values():
        path, anchor = link.split("#")
        assert f'id="{anchor}"' in org_client.get(path).content.decode()
    verdict = text(re.search(r'<p id="readiness-verdict">(.*?)</p>', page, re.S).group(1))
    assert verdict == (
        "Not ready to open yet: 3 needs below are missing. The task stays a draft, which "
        "participants do not see."
    )
    button = re.search(r"<button[^>]*>Open the task</button>", page).group(0)
    assert "disabled" in button


def test_the_open_button_is_refused_with_what_is_missing_at_the_top(org_client, draft):
    response = org_client.post(STATE, {"state": "open"})
    assert response.status_code == 409
    page = response.content.decode()
    box = re.search(r'<div class="error-box refusal" role="alert".*?\n</div>', page, re.S)
    assert box is not None and page.index('id="refusal"') < page.index('id="readiness"')
    said = text(box.group(0))
    assert said.startswith(
        "The task was not opened 3 of its checklist&#x27;s needs are missing; nothing was changed."
    )
    assert "Annotators: 0 of the 2 annotators needed" in said
    assert '<a href="/tasks/t/organize/data/#upload-gold">Gold items</a>' in box.group(0)
    assert Task.objects.get(pk=draft.pk).state == Task.State.DRAFT


def test_opening_by_the_settings_form_is_refused_at_the_top_and_keeps_the_input(org_client, draft):
    data = {
        k: ("" if v is None else v)
        for k, v in model_to_dict(draft, fields=TASK_SETTING_FIELDS).items()
    }
    data.update(state="open", title="Renamed while opening")
    response = org_client.post(ORGANIZE, data)
    assert response.status_code == 409
    page = response.content.decode()
    assert "The task was not opened, and nothing else was saved" in page
    assert 'value="Renamed while opening"' in page  # what was typed is kept
    assert "not ready to open: Annotators:" in page  # under the state field too
    draft.refresh_from_db()
    assert (draft.state, draft.title) == (Task.State.DRAFT, "T")


def test_a_ready_task_opens_and_closes_from_its_checklist(org_client, draft):
    satisfy_checklist(draft)
    page = org_client.get(ORGANIZE).content.decode()
    assert "Ready to open: nothing below is missing." in page
    assert {mark for mark, _, _ in checklist(page).values()} == {"done"}
    button = re.search(r"<button[^>]*>Open the task</button>", page).group(0)
    assert "disabled" not in button
    response = org_client.post(STATE, {"state": "open"}, follow=True)
    assert response.redirect_chain == [(ORGANIZE, 302)]
    page = response.content.decode()
    assert "Task t opened: it takes runs." in page and "The task is open." in page
    assert Task.objects.get(pk=draft.pk).state == Task.State.OPEN
    response = org_client.post(STATE, {"state": "closed"}, follow=True)
    assert "Task t closed." in response.content.decode()
    assert Task.objects.get(pk=draft.pk).state == Task.State.CLOSED


def test_a_button_asking_for_another_state_is_refused(org_client, draft):
    response = org_client.post(STATE, {"state": "draft"})
    assert response.status_code == 400
    assert (
        "These buttons open or close the task, not &#x27;draft&#x27;" in response.content.decode()
    )


def test_a_closed_pool_lists_its_pool_and_says_runs_wait_for_it(org_client, organizer):
    create_task(slug="cp", title="CP", organizers=[organizer], kind=Task.Kind.CLOSED_POOL)
    page = org_client.get("/tasks/cp/organize/").content.decode()
    rows = checklist(page)
    assert list(rows) == ["pool", "gold", "annotators", "phases"]
    assert rows["pool"][:2] == ("missing", "/tasks/cp/organize/data/#upload-pool")
    page = org_client.get("/tasks/cp/organize/data/").content.decode()
    assert "Runs are refused until it is here." in page


def test_the_submit_page_refuses_a_run_before_the_pool(
    client, organizer, participant, team, make_upload
):
    """A closed pool opened before its pool, when that was allowed (no task can open so now)."""

    task = open_unchecked(
        create_task(slug="cp", title="CP", organizers=[organizer], kind=Task.Kind.CLOSED_POOL)
    )
    client.force_login(participant)
    response = client.post("/tasks/cp/submit/", {"file": make_upload("a\t0.5\t1\n"), "name": "x"})
    assert response.status_code == 409
    assert (
        "task &#x27;cp&#x27; has no pool yet: its organizers upload it before runs are accepted; "
        "nothing was stored or counted"
    ) in response.content.decode()
    assert not Run.objects.filter(task=task).exists()
