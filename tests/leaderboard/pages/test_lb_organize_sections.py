"""The organize pages: one page per section with the sections' navigation (the current one
marked for assistive technology), each holding its own part and no other's; the checklist's
links lead to the section and element where each need is done; every refused action is shown
again on its section's page with one banner at the very top of the body (what was refused, why,
a link to the field or element to correct, which is on that page), the input kept, and no other
error box."""

from __future__ import annotations

import html
import re
import sys

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.forms.models import model_to_dict

from leaderboard.forms import PHASE_FIELDS, SETTING_GROUPS, TASK_SETTING_FIELDS
from leaderboard.models import Run, Task
from leaderboard.services.tasks import create_task

from organizer_uploads import load_received
from pipeline_support import add_items, add_run, make_team, open_unchecked

pytestmark = pytest.mark.django_db

SECTIONS = {
    # section: (path under /tasks/t/organize/, its label, what only it holds)
    "overview": ("", "Overview", 'id="readiness"'),
    "settings": ("settings/", "Settings", 'id="settings-form"'),
    "data": ("data/", "Data", 'id="upload-gold"'),
    "people": ("people/", "People", 'id="invite-by-mail"'),
    "task_page": ("page/", "Task page", 'id="upload-task-file"'),
    "phases": ("phases/", "Phases", 'id="phases-form"'),
    "board": ("board/", "Board", 'id="budget-spent"'),
}


@pytest.fixture
def task(organizer):
    task = create_task(slug="t", title="T", organizers=[organizer])
    add_items(task, 3)  # k0 k1 k2
    return task


@pytest.fixture
def org_client(client, organizer):
    client.force_login(organizer)
    return client


def nav_links(page: str) -> list[tuple[str, bool, str]]:
    """The sections' navigation: (href, current, label) of each link."""
    nav = re.search(r'<nav class="subnav" aria-label="Organize T">(.*?)</nav>', page, re.S)
    links = re.findall(r'<a href="([^"]+)"([^>]*)>([^<]+)</a>', nav.group(1))
    return [(href, 'aria-current="page"' in rest, label) for href, rest, label in links]


@pytest.mark.parametrize("key", list(SECTIONS))
def test_each_section_is_a_page_with_the_navigation(org_client, task, key):
    path, label, marker = SECTIONS[key]
    response = org_client.get(f"/tasks/t/organize/{path}")
    assert response.status_code == 200
    page = response.content.decode()
    assert f"<title>{label} · Organize · T" in page
    links = nav_links(page)
    assert [(href, label) for href, _, label in links] == [
        (f"/tasks/t/organize/{p}", name) for p, name, _ in SECTIONS.values()
    ]
    assert [label for _, current, label in links if current] == [label]
    assert marker in page
    for other, (_, _, elsewhere) in SECTIONS.items():
        if other != key:
            assert elsewhere not in page, f"{other}'s {elsewhere} is on the {key} page"
    assert 'role="alert"' not in page


def test_every_setting_is_in_one_group_of_one_section():
    grouped = [name for _, names in SETTING_GROUPS for name in names]
    assert sorted(grouped) == sorted(TASK_SETTING_FIELDS)
    assert set(PHASE_FIELDS) < set(TASK_SETTING_FIELDS)


def test_the_settings_are_shown_in_groups_without_the_dates(org_client, task):
    page = org_client.get("/tasks/t/organize/settings/").content.decode()
    legends = re.findall(r"<legend>([^<]+)</legend>", page)
    assert legends == [legend for legend, _ in SETTING_GROUPS if legend != "Phases"]
    assert 'name="label_budget"' in page and 'name="reveal_at"' not in page
    phases = org_client.get("/tasks/t/organize/phases/").content.decode()
    assert 'name="reveal_at"' in phases and 'name="label_budget"' not in phases
    assert "none set: runs are accepted from opening until the task is closed" in phases


def test_the_overview_says_what_waits_for_the_organizer(org_client, task, organizer):
    page = org_client.get("/tasks/t/organize/").content.decode()
    assert 'id="nothing-waiting"' in page
    team = make_team("Held team")
    run = add_run(task, team, [0, 1], name="junk")
    Run.objects.filter(pk=run.pk).update(state=Run.State.HELD, reason="glued scores")
    from leaderboard.models import TeamApproval

    TeamApproval.objects.create(task=task, team=make_team("Waiting team"), requested_by=organizer)
    page = org_client.get("/tasks/t/organize/").content.decode()
    assert 'id="nothing-waiting"' not in page
    assert f'id="held-run-{run.pk}"' in page and "glued scores" in page
    assert '<tr data-team="Waiting team">' in page
    assert 'name="next" value="organize:overview"' in page
    # Approving from the overview comes back to it; from People, to People.
    response = org_client.post(
        f"/tasks/t/teams/{TeamApproval.objects.get().team_id}/approve/",
        {"next": "organize:overview"},
    )
    assert response["Location"] == "/tasks/t/organize/"
    assert (
        '<tr data-team="Waiting team">' not in org_client.get("/tasks/t/organize/").content.decode()
    )


@pytest.mark.parametrize("kind", [Task.Kind.OPEN, Task.Kind.CLOSED_POOL])
def test_the_checklist_links_lead_to_the_element_where_each_need_is_done(
    org_client, organizer, kind
):
    create_task(slug="c", title="C", organizers=[organizer], kind=kind)
    page = org_client.get("/tasks/c/organize/").content.decode()
    links = re.findall(
        r'<li class="check [^"]*" data-check="(\w+)">.*?<a href="([^"]+)">', page, re.S
    )
    assert len(links) == 4
    for key, link in links:
        path, anchor = link.split("#")
        assert path.startswith("/tasks/c/organize/") and path != "/tasks/c/organize/", key
        target = org_client.get(path)
        assert target.status_code == 200
        assert f'id="{anchor}"' in target.content.decode(), (key, link)


@pytest.mark.parametrize(
    ("kind", "theirs", "not_theirs"),
    [
        (Task.Kind.OPEN, ("glance-reference", "upload-reference", "reference-sample"), ("pool",)),
        (Task.Kind.CLOSED_POOL, ("glance-pool", "upload-pool"), ("reference",)),
    ],
)
def test_the_overview_and_data_show_what_the_tasks_kind_is_supplied_with(
    org_client, organizer, kind, theirs, not_theirs
):
    create_task(slug="c", title="C", organizers=[organizer], kind=kind)
    pages = [org_client.get(f"/tasks/c/organize/{path}").content.decode() for path in ("", "data/")]
    ids = set(re.findall(r'id="([\w-]+)"', "".join(pages)))
    assert set(theirs) <= ids and 'id="upload-gold"' in pages[1]
    assert not [i for i in ids if any(word in i for word in not_theirs)]


# -- refusals: one banner, at the top, linking to what to correct, the input kept ---------------


def settings_data(task, **changes):
    data = {
        k: ("" if v is None else v)
        for k, v in model_to_dict(task, fields=TASK_SETTING_FIELDS).items()
        if k not in PHASE_FIELDS
    }
    return {**data, **changes}


def upload(body: bytes, name: str = "f.tsv"):
    return SimpleUploadedFile(name, body)


def held_run(task):
    return add_run(task, make_team("A team"), [0], name="not held")


def over_the_limit(task):
    Task.objects.filter(pk=task.pk).update(max_upload_bytes=1024)
    return "/annotate/t/gold/", {"file": upload(b"k0\tcorrect\n" * 200_000)}


# Each refused action: how to refuse it, the status, the section it shows, what the banner says
# was refused and why, the element it links to, and what of the input is kept.
REFUSALS = {
    "settings": (
        lambda task: (
            "/tasks/t/organize/settings/",
            settings_data(task, confidence="2", title="Kept title"),
        ),
        400,
        "settings",
        "The settings were not saved",
        "1 field needs correcting.</p>",
        "id_confidence",
        'value="Kept title"',
    ),
    "settings with a design option the engine refuses": (
        lambda task: (
            "/tasks/t/organize/settings/",
            settings_data(task, design_options='{"growth": 1}', title="Kept title"),
        ),
        400,
        "settings",
        "The settings were not saved",
        "growth > 1",
        "id_design_options",
        "{&quot;growth&quot;: 1}",
    ),
    "settings with design options nested too deeply to decode": (
        lambda task: (
            "/tasks/t/organize/settings/",
            settings_data(task, design_options="[" * 5000 + "]" * 5000, title="Kept title"),
        ),
        400,
        "settings",
        "The settings were not saved",
        "is nested too deeply",
        "id_design_options",
        'value="Kept title"',
    ),
    "settings opening a task that is not ready": (
        lambda task: (
            "/tasks/t/organize/settings/",
            settings_data(task, state="open", title="Kept title"),
        ),
        409,
        "settings",
        "The task was not opened, and nothing else was saved",
        "3 of its checklist's needs are missing; nothing was changed",
        "id_state",
        'value="Kept title"',
    ),
    "the whole settings form, as before sections": (
        lambda task: (
            "/tasks/t/organize/",
            {**settings_data(task, title="Kept title"), "reveal_at": "soon"},
        ),
        400,
        "settings",
        "The settings were not saved",
        "field needs correcting",
        "id_reveal_at",
        'value="soon"',
    ),
    "phases": (
        lambda task: ("/tasks/t/organize/phases/", {"reveal_at": "soon"}),
        400,
        "phases",
        "The dates were not saved",
        "field needs correcting",
        "id_reveal_at",
        'value="soon"',
    ),
    "page text": (
        lambda task: (
            "/tasks/t/organize/page/",
            {"description": "# Kept overview", "data_access": "everyone"},
        ),
        400,
        "task_page",
        "The task page was not saved",
        "field needs correcting",
        "id_data_access",
        "# Kept overview</textarea>",
    ),
    "data file": (
        lambda task: ("/tasks/t/organize/files/", {"kind": "starter", "title": "Kept title"}),
        400,
        "task_page",
        "Your data file was not accepted",
        "field needs correcting",
        "id_task_file_file",
        'value="Kept title"',
    ),
    "reference sample": (
        # Refused as it is received (the wrong format); a file with problems by line is
        # received and rejected by the worker (test_lb_organize_uploads.py).
        lambda task: ("/tasks/t/organize/reference/", {"file": upload(b"key\tgroup\nk0\tdoc1\n")}),
        400,
        "data",
        "Your reference sample was not accepted",
        "",
        "id_reference_file",
        '<span class="line">line 1</span>',
    ),
    "gold file": (
        lambda task: ("/annotate/t/gold/", {"file": upload(b"k0,correct\nk1,incorrect\n")}),
        400,
        "data",
        "Your gold file was not accepted",
        "",
        "id_gold_file",
        '<span class="line">line 1</span>',
    ),
    "gold file over the task's limit": (
        over_the_limit,
        413,
        "data",
        "Your gold file was not accepted",
        "over the limit of 1 KiB for this task; nothing was stored",
        "id_gold_file",
        "",
    ),
    "candidates": (
        lambda task: (
            "/tasks/t/organize/reference-candidates/",
            {"file": upload(b"k0,doc1\nk1,doc2\n"), "confirm": "on"},
        ),
        400,
        "data",
        "Your reference candidates file was not accepted",
        "",
        "id_candidates_file",
        'id="id_candidates_confirm" checked',
    ),
    "draw": (
        lambda task: ("/annotate/t/reference-sample/draw/", {"size": "7", "seed": "4"}),
        400,
        "data",
        "The reference sample draw was not made",
        "",
        "id_draw_size",
        'name="seed" value="4"',
    ),
    "draw form": (
        lambda task: ("/annotate/t/reference-sample/draw/", {"size": "none", "seed": "4"}),
        400,
        "data",
        "The reference sample draw was not made",
        "field needs correcting",
        "id_draw_size",
        'name="seed" value="4"',
    ),
    "cancel": (
        lambda task: ("/annotate/t/reference-sample/cancel/", {}),
        409,
        "data",
        "The draw was not cancelled",
        "",
        "reference-sample",
        "",
    ),
    "opening": (
        lambda task: ("/tasks/t/organize/state/", {"state": "open"}),
        409,
        "overview",
        "The task was not opened",
        "3 of its checklist's needs are missing; nothing was changed",
        "readiness",
        "",
    ),
    "release": (
        lambda task: (f"/tasks/t/organize/runs/{held_run(task).pk}/release/", {}),
        409,
        "overview",
        "The held run was not released",
        "",
        "attention",
        "",
    ),
    "reject": (
        lambda task: (f"/tasks/t/organize/runs/{held_run(task).pk}/reject/", {}),
        409,
        "overview",
        "The held run was not rejected",
        "",
        "attention",
        "",
    ),
    "invitation link": (
        lambda task: ("/tasks/t/organize/invite/", {"role": "bogus"}),
        400,
        "people",
        "No invitation link was made",
        "",
        "invitation-role",
        "",
    ),
    "invitations by mail": (
        lambda task: (
            "/tasks/t/organize/invite/mail/",
            {"role": "organizer", "addresses": "ok@example.org, x@"},
        ),
        400,
        "people",
        "No invitation was sent",
        "",
        "id_addresses",
        ">ok@example.org, x@</textarea>",
    ),
    "the last organizer": (
        lambda task: (f"/tasks/t/organize/organizers/{task.organizers.get().pk}/remove/", {}),
        409,
        "people",
        "The organizer was not removed",
        "",
        "organizers",
        "",
    ),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_a_refusal_is_one_banner_at_the_top_linking_to_what_to_correct(
    org_client, task, media_root, case
):
    make, status, section, what, reason, anchor, kept = REFUSALS[case]
    if case.startswith(("draw", "cancel")):
        candidates = {"file": upload(b"k0\td1\nk1\td2\n")}
        org_client.post("/tasks/t/organize/reference-candidates/", candidates, follow=True)
        load_received(task)
    path, data = make(task)
    response = org_client.post(path, data)
    assert response.status_code == status
    page = response.content.decode()
    # The banner is the body's first content: before the task's header and its navigation.
    assert re.search(r'<main class="content">\s*<div class="error-box refusal" role="alert"', page)
    assert page.count("error-box") == 1, "one way to show a refusal"
    banner = re.search(r'<div class="error-box refusal".*?\n</div>', page, re.S).group(0)
    assert f'<h2 id="refusal-title">{what}</h2>' in banner
    assert reason in html.unescape(banner), banner
    assert f'href="#{anchor}"' in banner and f'id="{anchor}"' in page
    assert kept in page
    assert ("choose it again" in banner) == anchor.endswith("_file")
    assert "<title>Refused: " in page
    label = SECTIONS[section][1]
    assert [name for _, current, name in nav_links(page) if current] == [label]


def test_a_refused_change_of_a_data_file_keeps_its_form_open_as_sent(org_client, task, media_root):
    org_client.post(
        "/tasks/t/organize/files/", {"file": upload(b"print(1)\n", "s.py"), "kind": "starter"}
    )
    file_id = task.files.get().pk
    response = org_client.post(
        f"/tasks/t/organize/files/{file_id}/", {"kind": "bogus", "title": "Kept title"}
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert f'href="#id_file{file_id}_kind"' in page
    assert f'id="id_file{file_id}_kind"' in page and 'value="Kept title"' in page
    assert "<details open>" in page


def test_a_refused_approval_is_shown_on_the_people_section(
    org_client, task, organizer, monkeypatch
):
    """The team's request vanished between the page and the service (its only refusal)."""
    from leaderboard.models import TeamApproval
    from leaderboard.services.teams import TeamError

    team_views = sys.modules["leaderboard.views.teams"]

    team = make_team("Waiting team")
    TeamApproval.objects.create(task=task, team=team, requested_by=organizer)

    def vanished(**kwargs):
        raise TeamError(
            "team 'Waiting team' has not asked to take part in 't'", code="no_approval_request"
        )

    monkeypatch.setattr(team_views, "approve_team", vanished)
    response = org_client.post(f"/tasks/t/teams/{team.pk}/approve/")
    assert response.status_code == 404
    page = response.content.decode()
    assert "The team was not approved" in page and 'href="#teams"' in page and 'id="teams"' in page


def test_successes_return_to_their_section_with_the_message(org_client, task):
    cases = [
        ("/tasks/t/organize/settings/", settings_data(task, title="New"), "organize/settings/"),
        ("/tasks/t/organize/phases/", {"reveal_at": "2099-01-01 00:00"}, "organize/phases/"),
        (
            "/tasks/t/organize/page/",
            {"description": "# Hi", "data_access": "public"},
            "organize/page/",
        ),
        ("/annotate/t/gold/", {"file": upload(b"k0\tcorrect\n")}, "organize/data/"),
        ("/tasks/t/board/hold/", {"next": "organize:board"}, "organize/board/"),
        ("/tasks/t/board/publish/", {"next": "organize"}, "organize/"),  # the one page's value
        ("/tasks/t/board/hold/", {"next": "board"}, ""),  # the public board's own buttons
        ("/tasks/t/board/publish/", {"next": "organize:elsewhere"}, ""),
    ]
    for path, data, back in cases:
        response = org_client.post(path, data)
        assert response.status_code == 302, (path, response.content[:300])
        assert response["Location"] == f"/tasks/t/{back}", path
    page = org_client.get("/tasks/t/organize/data/").content.decode()
    assert "Received your gold items file f.tsv" in page


def test_an_invitation_link_and_mailed_links_are_shown_once_at_the_top_of_people(
    org_client, task, sent_jobs
):
    response = org_client.post("/tasks/t/organize/invite/", {"role": "annotator"})
    assert response.status_code == 200
    page = response.content.decode()
    assert page.index('id="new-invitation"') < page.index('id="people"')
    assert re.search(
        r'<code class="invitation-link">http://testserver/invitations/\S+</code>', page
    )
    response = org_client.post(
        "/tasks/t/organize/invite/mail/", {"role": "organizer", "addresses": "co@example.org"}
    )
    page = response.content.decode()
    assert response.status_code == 200 and page.index('id="invitations-mailed"') < page.index(
        'id="people"'
    )
    assert 'action="/tasks/t/organize/invite/mail/"' in page  # no fragment: the top shows first
    # Its GET is the People section's form.
    response = org_client.get("/tasks/t/organize/invite/mail/")
    assert response["Location"] == "/tasks/t/organize/people/#invite-by-mail"


def test_an_open_task_that_falls_short_is_not_a_refusal(org_client, task):
    open_unchecked(task)
    page = org_client.get("/tasks/t/organize/").content.decode()
    assert "although its checklist falls short" in page and "error-box" not in page


# -- the design, chosen on the Settings section like every other setting ------------------------


def design_choices(page: str) -> list[str]:
    select = re.search(r'<select name="design"[^>]*>(.*?)</select>', page, re.S)
    return re.findall(r'<option value="([^"]*)"', select.group(1))


def test_the_settings_offer_the_designs_of_the_tasks_kind(org_client, task, organizer):
    page = org_client.get("/tasks/t/organize/settings/").content.decode()
    assert design_choices(page) == ["default"]
    assert 'name="design_options"' in page and 'name="f_beta"' not in page
    create_task(slug="p", title="P", kind=Task.Kind.CLOSED_POOL, organizers=[organizer])
    page = org_client.get("/tasks/p/organize/settings/").content.decode()
    assert design_choices(page) == ["adaptive", "default"]
    assert 'name="f_beta"' in page


def test_a_closed_pools_design_and_options_are_saved_from_the_settings(org_client, organizer):
    pool = create_task(slug="p", title="P", kind=Task.Kind.CLOSED_POOL, organizers=[organizer])
    data = {
        **settings_data(pool),
        "design": "adaptive",
        "design_options": '{"round_size": 20}',
        "f_beta": "2",
    }
    response = org_client.post("/tasks/p/organize/settings/", data, follow=True)
    assert "Settings saved: design, design_options, f_beta" in response.content.decode()
    pool.refresh_from_db()
    assert (pool.design, pool.design_options, pool.f_beta) == ("adaptive", {"round_size": 20}, 2)


def test_the_design_is_shown_fixed_once_the_task_has_runs(org_client, task):
    add_run(task, make_team("A team"), [0])
    page = org_client.get("/tasks/t/organize/settings/").content.decode()
    assert re.search(r'<select name="design"[^>]*disabled', page)
    assert "Fixed: the task has runs." in page
    data = settings_data(task, design="published", design_options='{"growth": 3}')
    response = org_client.post("/tasks/t/organize/settings/", data, follow=True)
    assert "Nothing changed." in response.content.decode()
    task.refresh_from_db()
    assert (task.design, task.design_options) == ("default", {})
