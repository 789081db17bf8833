"""User-supplied text is escaped on every page: script tags, attribute breakouts and
``javascript:`` links put into every field a user can fill come back as inert text.

Fields: task title, description and question; team name; run name, description, link, file
name, reason and rejection problems; run events; snapshot rows (copies of run and team names).
Downloads are served as attachments with data content types, never as HTML.
"""

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from leaderboard.models import Run, RunEvent, Task, Team
from leaderboard.services.ingest import ingest_run

from organizer_uploads import load_received

pytestmark = pytest.mark.django_db

SCRIPT = "<script>window.__xss=1</script>"
BREAKOUT = '"><img src=x onerror="window.__xss=1">'
JS_LINK = "javascript:window.__xss=1"
RAW_MARKERS = ("<script>window", "<img src=x", 'onerror="window')
# A javascript: URL is harmless as text or as a form field's value; it must never be a link.
JS_URL_ATTRIBUTE = re.compile(r"""(href|src|action|formaction)\s*=\s*["']?\s*javascript:""", re.I)


@pytest.fixture
def hostile(board_world, snapshots):
    """Every user-writable field of the world holds a payload."""
    task = board_world["task"]
    Task.objects.filter(pk=task.pk).update(
        title=SCRIPT + " title", description=BREAKOUT, question=SCRIPT
    )
    Team.objects.filter(pk=board_world["team_a"].pk).update(name=BREAKOUT + " team")
    a1, b1 = board_world["runs"]["a1"], board_world["runs"]["b1"]
    Run.objects.filter(pk=a1.pk).update(
        name=SCRIPT,
        description=BREAKOUT + "\n" + SCRIPT,
        link=JS_LINK,
        file_name=SCRIPT + ".tsv",
        reason=BREAKOUT,
        n_requested=10,
        n_verified=3,
        errors=[{"line": 2, "message": f"bad key {SCRIPT}"}],
        error_count=1,
    )
    Run.objects.filter(pk=b1.pk).update(name=BREAKOUT, link="JaVaScRiPt:window.__xss=1")
    RunEvent.objects.create(run=a1, state="queued", reason=SCRIPT)
    for key in board_world["runs"]:
        board_world["runs"][key].refresh_from_db()
    snapshots.standard(board_world, version=1)
    snapshots.standard(board_world, version=2, published=False)
    return board_world


def assert_inert(response, status=200):
    assert response.status_code == status, response.status_code
    html = response.content.decode()
    for marker in RAW_MARKERS:
        assert marker.lower() not in html.lower(), f"unescaped {marker!r}"
    assert not JS_URL_ATTRIBUTE.search(html), "a javascript: link was rendered"
    return html


def page_urls(world):
    a1 = world["runs"]["a1"]
    return [
        reverse("home"),
        reverse("task_board", args=["ner"]),
        *(reverse("task_board", args=["ner"]) + f"?sort={m}" for m in ("precision", "recall")),
        reverse("task_snapshots", args=["ner"]),
        reverse("snapshot_detail", args=["ner", 1]),
        reverse("task_runs", args=["ner"]),
        reverse("run_detail", args=[a1.pk]),
        reverse("submit_run", args=["ner"]),
    ]


# Every page of the organize pages' sections.
ORGANIZE_SECTIONS = (
    "task_organize",
    "organize_settings",
    "organize_data",
    "organize_people",
    "organize_page_text",
    "organize_phases",
    "organize_board",
)


@pytest.mark.parametrize("who", [None, "alice", "org"])
def test_every_page_escapes_every_field(client, hostile, who):
    if who:
        client.force_login(hostile[who])
    urls = [
        reverse("home"),
        reverse("task_board", args=["ner"]),
        reverse("task_snapshots", args=["ner"]),
        reverse("snapshot_detail", args=["ner", 1]),
    ]
    if who:
        urls = (
            page_urls(hostile)
            if who == "alice"
            else [
                *page_urls(hostile)[:-1],
                reverse("snapshot_detail", args=["ner", 2]),
                *(reverse(section, args=["ner"]) for section in ORGANIZE_SECTIONS),
            ]
        )
    seen = ""
    for url in urls:
        seen += assert_inert(client.get(url))
    # the payloads are there, as text
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in seen
    assert "&quot;&gt;&lt;img src=x onerror=&quot;window.__xss=1&quot;&gt;" in seen


def test_rejected_upload_echoing_a_payload_is_escaped(client, hostile):
    client.force_login(hostile["bob"])
    upload = SimpleUploadedFile(SCRIPT + ".tsv", f"k0\t0.9\n{SCRIPT}\tnan-ish\n".encode())
    response = client.post(
        reverse("submit_run", args=["ner"]),
        {"file": upload, "name": BREAKOUT, "description": SCRIPT},
    )
    assert response.status_code == 302
    run = Run.objects.filter(team=hostile["team_b"], state="received").get()
    ingest_run(run.pk)
    run = Run.objects.filter(team=hostile["team_b"], state="rejected").get()
    assert_inert(client.get(reverse("run_detail", args=[run.pk])))


def test_edit_form_round_trips_payloads_escaped(client, hostile):
    client.force_login(hostile["alice"])
    url = reverse("run_detail", args=[hostile["runs"]["a2"].pk])
    response = client.post(url, {"name": BREAKOUT, "description": SCRIPT, "link": JS_LINK})
    html = assert_inert(response, 400)  # the javascript: link is refused, with a field error
    assert "must be an http or https URL" in html
    response = client.post(
        url, {"name": BREAKOUT, "description": SCRIPT, "link": 'https://example.org/?q="><script>'}
    )
    assert response.status_code in (302, 400)
    assert_inert(client.get(url))


@pytest.mark.parametrize("who", [None, "org"])
def test_downloads_are_attachments_with_data_content_types(client, hostile, who):
    if who:
        client.force_login(hostile[who])
    response = client.get(reverse("snapshot_csv", args=["ner", 1]))
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith("attachment;")
    assert response["X-Content-Type-Options"] == "nosniff"
    body = b"".join(response.streaming_content).decode()
    assert SCRIPT in body  # data is exported as it is, for a spreadsheet, not for a browser
    response = client.get(reverse("snapshot_json", args=["ner", 1]))
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response["Content-Disposition"].startswith("attachment;")
    assert response["X-Content-Type-Options"] == "nosniff"
    if who:
        response = client.get(reverse("verified_items_csv", args=["ner"]))
        assert response["Content-Type"] == "text/csv; charset=utf-8"


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/tasks/ner/organize/reference/", f"k0\tdoc\n{SCRIPT}\t{BREAKOUT}\textra\n"),
        ("/annotate/ner/gold/", f"k0\tcorrect\n{SCRIPT}\t{BREAKOUT}\n{BREAKOUT}\tcorrect\n"),
    ],
)
def test_a_refused_organizer_upload_echoing_its_lines_is_escaped(client, hostile, path, body):
    client.force_login(hostile["org"])
    upload = SimpleUploadedFile(SCRIPT + ".tsv", body.encode())
    response = client.post(path, {"file": upload})
    assert response.status_code == 302
    load_received()  # the worker rejects it; the Data section lists its problems (and name)
    html = assert_inert(client.get(response["Location"]))
    assert 'data-state="rejected"' in html
    assert "&lt;script&gt;" in html or "&quot;&gt;&lt;img" in html
    assert 'class="line">line 2</span>' in html
