"""The pages' permission matrix: every page URL and page POST x every role, each cell asserted.

Roles (as in the REST API matrix, ``tests/leaderboard/api/test_lb_api_permissions.py``):
anonymous, participant A (team A, one run), participant B (team B, one run), an annotator of the
task, the task's organizer, an organizer of another task, a staff organizer of another task
(with the demo organizer's admin permissions), an admin. The world is the API
matrix's ``build_world`` (gold items, a reference sample, snapshot 1 published, snapshot 2 held
with a distinctive value, a draft task) plus display payloads and open verification requests.

Besides each cell's status, every page or download a participant, annotator or the public gets
is searched for what they must never see: gold item keys, reference keys, the held snapshot's
values (as the pages format them: ``0.314``), other teams' run files and descriptions, anything of
another annotator (name, notes, estimated error rates, items' posteriors); an annotator's pages
and annotation API answers are searched for run names, team names and scores.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import Permission
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.forms.models import model_to_dict
from django.test import Client
from shared_world import copied_world, session_client, shared_world, signed_in

from leaderboard.forms import PHASE_FIELDS, TASK_SETTING_FIELDS
from leaderboard.models import Item, Task

from pipeline_support import without_clock_times
from role_world import build_page_world, matrix_cells

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "pa", "pb", "annotator", "org", "other_org", "staff_org", "admin", "creator")
HELD_TEXTS = ("0.314", "0.264", "0.364", "0.31415926")


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()
    yield
    cache.clear()


def build_signed_in_page_world():
    world = build_page_world()
    world.sessions = signed_in(world.users)
    return world


built_page_world = shared_world(build_signed_in_page_world)


@pytest.fixture
def world(db, sent_jobs, built_page_world):
    return copied_world(built_page_world)


def organize_body(world):
    data = {
        k: ("" if v is None else v)
        for k, v in model_to_dict(world.task, fields=TASK_SETTING_FIELDS).items()
    }
    data["title"] = "Main task, renamed"
    return data


def settings_body(world):
    """The Settings section's form (the dates are the Phases section's)."""
    return {k: v for k, v in organize_body(world).items() if k not in PHASE_FIELDS}


def phases_body(world):
    return {"submissions_close_at": "2099-01-01 10:00", "accept_late_runs": "on"}


def submit_body(world):
    return {
        "file": SimpleUploadedFile("page-run.tsv", b"k1\t0.9\nfresh-key\t0.4\n"),
        "name": "page run",
        "description": "",
    }


def run_edit_body(world):
    return {"name": "run-A renamed", "description": "better", "link": "https://example.org/a"}


def signup_body(world):
    return {
        "email": "newcomer@example.org",
        "username": "newcomer",
        "password1": "a long new secret 42",
        "password2": "a long new secret 42",
    }


def new_task_body(world):
    return {
        "slug": "made-here",
        "title": "Made on the page",
        "kind": "open",
        "question": "Correct?",
        "target_half_width": "0.05",
        "confidence": "0.95",
        "judgments_per_item": "1",
        "max_runs_per_team": "5",
        "max_runs_per_team_per_day": "2",
    }


def preview_body(world):
    return {"display_template": '{"layout": "table"}', "sample": '{"name": "x"}'}


def reference_body(world):
    return {"file": SimpleUploadedFile("ref.tsv", b"REFSECRET-0\tdoc\nREFSECRET-1\tdoc\n")}


def candidates_body(world):
    return {"file": SimpleUploadedFile("c.tsv", b"CAND-0\tdoc-1\nCAND-1\tdoc-2\n")}


def bad_candidates_body(world):
    # Refused as it is received (the wrong format): a file with problems by line is received
    # and rejected by the worker (tests/leaderboard/pages/test_lb_organize_uploads.py).
    return {"file": SimpleUploadedFile("c.tsv", b"CAND-0,doc-1\nCAND-1,doc-2\n")}


def gold_body(world):
    return {"file": SimpleUploadedFile("gold.tsv", b"GOLDKEY-0\tcorrect\n")}


def pool_body(world):
    return {"file": SimpleUploadedFile("pool.tsv", b"p1\np2\n")}


def other_gold_body(world):
    # Task "other" has no items: its organizers' file is received, then rejected by the worker
    # (the key is unknown).
    return {"file": SimpleUploadedFile("gold.tsv", b"other-key\tcorrect\n")}


def bad_gold_body(world):
    return {"file": SimpleUploadedFile("gold.tsv", b"GOLDKEY-0,correct\nGOLDKEY-1,correct\n")}


def accept_terms_body(world):
    return {"team": world.teams["A"].pk, "digest": "0" * 64, "next": "overview"}


def page_text_body(world):
    return {"description": "# Overview", "rules": "", "terms": "", "data_access": "public"}


def data_file_body(world):
    return {"file": SimpleUploadedFile("starter.py", b"print(1)\n"), "kind": "starter"}


def unpause_body(world):
    return {"username": "annotator"}


LOGIN = "login"  # 302 to the sign-in page (login_required)
ADMIN_LOGIN = "admin-login"  # 302 to the admin's own sign-in page
REDIRECT = "redirect"  # 302 somewhere else (a successful POST)

# (method, path, body) -> expected outcome per role, in ROLES order.
# "{a}" is team A's run id. A 403 for an annotator on the annotate page is its own page.
MATRIX = [
    # method, path, body,                             anon pa   pb   ann  org  oorg sorg admin cre
    ("GET", "/", None, (200, 200, 200, 200, 200, 200, 200, 200, 200)),
    ("GET", "/tasks/main/", None, (200, 200, 200, 200, 200, 200, 200, 200, 200)),
    # Creating a task: the task creator role (staff or leaderboard.add_task; staff_org has it).
    ("GET", "/tasks/new/", None, (LOGIN, 403, 403, 403, 403, 403, 200, 200, 200)),
    (
        "POST",
        "/tasks/new/",
        new_task_body,
        (LOGIN, 403, 403, 403, 403, 403, REDIRECT, REDIRECT, REDIRECT),
    ),
    (
        "POST",
        "/tasks/new/",
        {"slug": "main", "title": "Taken"},
        (LOGIN, 403, 403, 403, 403, 403, 400, 400, 400),
    ),
    ("POST", "/tasks/new/preview/", preview_body, (LOGIN, 403, 403, 403, 200, 200, 200, 200, 200)),
    ("GET", "/tasks/new/preview/", None, (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405)),
    ("GET", "/tasks/main/?sort=f1", None, (200, 200, 200, 200, 200, 200, 200, 200, 200)),
    ("GET", "/tasks/main/?sort=bogus", None, (400, 400, 400, 400, 400, 400, 400, 400, 400)),
    ("POST", "/tasks/main/", None, (405, 405, 405, 405, 405, 405, 405, 405, 405)),
    ("GET", "/tasks/hidden-draft/", None, (404, 404, 404, 404, 200, 404, 404, 200, 404)),
    ("GET", "/tasks/nope/", None, (404, 404, 404, 404, 404, 404, 404, 404, 404)),
    ("GET", "/tasks/main/snapshots/", None, (200, 200, 200, 200, 200, 200, 200, 200, 200)),
    ("GET", "/tasks/main/snapshots/1/", None, (200, 200, 200, 200, 200, 200, 200, 200, 200)),
    ("GET", "/tasks/main/snapshots/2/", None, (404, 404, 404, 404, 200, 404, 404, 200, 404)),
    ("GET", "/tasks/main/snapshots/1.csv", None, (200, 200, 200, 200, 200, 200, 200, 200, 200)),
    ("GET", "/tasks/main/snapshots/2.csv", None, (404, 404, 404, 404, 200, 404, 404, 200, 404)),
    ("GET", "/tasks/main/snapshots/1.json", None, (200, 200, 200, 200, 200, 200, 200, 200, 200)),
    ("GET", "/tasks/main/snapshots/2.json", None, (404, 404, 404, 404, 200, 404, 404, 200, 404)),
    ("GET", "/tasks/main/snapshots/9/", None, (404, 404, 404, 404, 404, 404, 404, 404, 404)),
    (
        "POST",
        "/tasks/main/board/hold/",
        None,
        (LOGIN, 403, 403, 403, REDIRECT, 403, 403, REDIRECT, 403),
    ),
    ("GET", "/tasks/main/board/hold/", None, (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405)),
    (
        "POST",
        "/tasks/main/board/publish/",
        None,
        (LOGIN, 403, 403, 403, REDIRECT, 403, 403, REDIRECT, 403),
    ),
    ("GET", "/tasks/main/board/publish/", None, (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405)),
    (
        "POST",
        "/tasks/hidden-draft/board/hold/",
        None,
        (LOGIN, 404, 404, 404, REDIRECT, 404, 404, REDIRECT, 404),
    ),
    ("GET", "/tasks/main/organize/", None, (LOGIN, 403, 403, 403, 200, 403, 403, 200, 403)),
    ("GET", "/tasks/other/organize/", None, (LOGIN, 403, 403, 403, 403, 200, 200, 200, 403)),
    ("GET", "/tasks/hidden-draft/organize/", None, (LOGIN, 404, 404, 404, 200, 404, 404, 200, 404)),
    (
        "POST",
        "/tasks/main/organize/",
        organize_body,
        (LOGIN, 403, 403, 403, REDIRECT, 403, 403, REDIRECT, 403),
    ),
    (
        "POST",
        "/tasks/main/organize/",
        {"confidence": "x"},
        (LOGIN, 403, 403, 403, 400, 403, 403, 400, 403),
    ),
    # The organize pages' sections: settings and phases take their forms; data, people and
    # board only show (their forms post elsewhere); the task page section is below.
    (
        "GET",
        "/tasks/main/organize/settings/",
        None,
        (LOGIN, 403, 403, 403, 200, 403, 403, 200, 403),
    ),
    (
        "GET",
        "/tasks/hidden-draft/organize/settings/",
        None,
        (LOGIN, 404, 404, 404, 200, 404, 404, 200, 404),
    ),
    (
        "POST",
        "/tasks/main/organize/settings/",
        settings_body,
        (LOGIN, 403, 403, 403, REDIRECT, 403, 403, REDIRECT, 403),
    ),
    (
        "POST",
        "/tasks/main/organize/settings/",
        {"confidence": "x"},
        (LOGIN, 403, 403, 403, 400, 403, 403, 400, 403),
    ),
    ("GET", "/tasks/main/organize/phases/", None, (LOGIN, 403, 403, 403, 200, 403, 403, 200, 403)),
    (
        "POST",
        "/tasks/main/organize/phases/",
        phases_body,
        (LOGIN, 403, 403, 403, REDIRECT, 403, 403, REDIRECT, 403),
    ),
    (
        "POST",
        "/tasks/other/organize/phases/",
        phases_body,
        (LOGIN, 403, 403, 403, 403, REDIRECT, REDIRECT, REDIRECT, 403),
    ),
    (
        "POST",
        "/tasks/main/organize/phases/",
        {"reveal_at": "soon"},
        (LOGIN, 403, 403, 403, 400, 403, 403, 400, 403),
    ),
    ("GET", "/tasks/main/organize/data/", None, (LOGIN, 403, 403, 403, 200, 403, 403, 200, 403)),
    (
        "GET",
        "/tasks/hidden-draft/organize/data/",
        None,
        (LOGIN, 404, 404, 404, 200, 404, 404, 200, 404),
    ),
    ("POST", "/tasks/main/organize/data/", None, (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405)),
    ("GET", "/tasks/main/organize/people/", None, (LOGIN, 403, 403, 403, 200, 403, 403, 200, 403)),
    ("GET", "/tasks/other/organize/people/", None, (LOGIN, 403, 403, 403, 403, 200, 200, 200, 403)),
    ("POST", "/tasks/main/organize/people/", None, (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405)),
    ("GET", "/tasks/main/organize/board/", None, (LOGIN, 403, 403, 403, 200, 403, 403, 200, 403)),
    ("POST", "/tasks/main/organize/board/", None, (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405)),
    # The checklist's buttons: "main" is open, so closing it works; the draft is not ready to
    # open (409, the checklist saying what is missing); anything else is refused (400).
    (
        "POST",
        "/tasks/main/organize/state/",
        {"state": "closed"},
        (LOGIN, 403, 403, 403, REDIRECT, 403, 403, REDIRECT, 403),
    ),
    (
        "POST",
        "/tasks/hidden-draft/organize/state/",
        {"state": "open"},
        (LOGIN, 404, 404, 404, 409, 404, 404, 409, 404),
    ),
    (
        "POST",
        "/tasks/main/organize/state/",
        {"state": "draft"},
        (LOGIN, 403, 403, 403, 400, 403, 403, 400, 403),
    ),
    ("GET", "/tasks/main/organize/state/", None, (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405)),
    (
        "GET",
        "/tasks/main/organize/verified-items.csv",
        None,
        (LOGIN, 403, 403, 403, 200, 403, 403, 200, 403),
    ),
    # The organize page's uploads (the gold upload is the annotation app's).
    (
        "POST",
        "/tasks/main/organize/reference/",
        reference_body,
        (LOGIN, 403, 403, 403, REDIRECT, 403, 403, REDIRECT, 403),
    ),
    (
        "POST",
        "/tasks/other/organize/reference/",
        reference_body,
        (LOGIN, 403, 403, 403, 403, REDIRECT, REDIRECT, REDIRECT, 403),
    ),
    (
        "POST",
        "/tasks/hidden-draft/organize/reference/",
        reference_body,
        (LOGIN, 404, 404, 404, REDIRECT, 404, 404, REDIRECT, 404),
    ),
    (
        "POST",
        "/tasks/main/organize/reference/",
        {},
        (LOGIN, 403, 403, 403, 400, 403, 403, 400, 403),
    ),
    (
        "GET",
        "/tasks/main/organize/reference/",
        None,
        (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    # "main" is an open task: its organizers are told it has no pool (409).
    (
        "POST",
        "/tasks/main/organize/pool/",
        pool_body,
        (LOGIN, 403, 403, 403, 409, 403, 403, 409, 403),
    ),
    ("GET", "/tasks/main/organize/pool/", None, (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405)),
    (
        "POST",
        "/annotate/main/gold/",
        gold_body,
        (LOGIN, 403, 403, 403, REDIRECT, 403, 403, REDIRECT, 403),
    ),
    (
        "POST",
        "/annotate/main/gold/",
        bad_gold_body,
        (LOGIN, 403, 403, 403, 400, 403, 403, 400, 403),
    ),
    (
        "POST",
        "/annotate/other/gold/",
        other_gold_body,
        (LOGIN, 403, 403, 403, 403, REDIRECT, REDIRECT, REDIRECT, 403),
    ),
    ("GET", "/annotate/main/gold/", None, (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405)),
    # The reference sample built from documents: candidates (here), the draw (the annotation
    # app's: it queues requests). This world has no candidates: a draw is told so (409).
    (
        "POST",
        "/tasks/main/organize/reference-candidates/",
        candidates_body,
        (LOGIN, 403, 403, 403, REDIRECT, 403, 403, REDIRECT, 403),
    ),
    (
        "POST",
        "/tasks/main/organize/reference-candidates/",
        bad_candidates_body,
        (LOGIN, 403, 403, 403, 400, 403, 403, 400, 403),
    ),
    (
        "POST",
        "/tasks/hidden-draft/organize/reference-candidates/",
        candidates_body,
        (LOGIN, 404, 404, 404, REDIRECT, 404, 404, REDIRECT, 404),
    ),
    (
        "GET",
        "/tasks/main/organize/reference-candidates/",
        None,
        (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    (
        "POST",
        "/annotate/main/reference-sample/draw/",
        {"size": "1", "seed": "1"},
        (LOGIN, 403, 403, 403, 409, 403, 403, 409, 403),
    ),
    (
        "POST",
        "/annotate/main/reference-sample/draw/",
        {"size": "zero"},
        (LOGIN, 403, 403, 403, 400, 403, 403, 400, 403),
    ),
    (
        "GET",
        "/annotate/main/reference-sample/draw/",
        None,
        (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    # Nothing drawn in this world: an organizer's cancel is told so (409).
    (
        "POST",
        "/annotate/main/reference-sample/cancel/",
        {},
        (LOGIN, 403, 403, 403, 409, 403, 403, 409, 403),
    ),
    (
        "POST",
        "/annotate/hidden-draft/reference-sample/cancel/",
        {},
        (LOGIN, 404, 404, 404, 409, 404, 404, 409, 404),
    ),
    (
        "GET",
        "/annotate/main/reference-sample/cancel/",
        None,
        (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    # Nothing drawn: an organizer's request to settle stuck candidates is told so (409).
    (
        "POST",
        "/annotate/main/reference-sample/settle/",
        {},
        (LOGIN, 403, 403, 403, 409, 403, 403, 409, 403),
    ),
    (
        "POST",
        "/annotate/hidden-draft/reference-sample/settle/",
        {},
        (LOGIN, 404, 404, 404, 409, 404, 404, 409, 404),
    ),
    (
        "GET",
        "/annotate/main/reference-sample/settle/",
        None,
        (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    # A held run's release and rejection: the task's organizers (run A is not held: 409).
    (
        "POST",
        "/tasks/main/organize/runs/{a}/release/",
        None,
        (LOGIN, 403, 403, 403, 409, 403, 403, 409, 403),
    ),
    (
        "POST",
        "/tasks/main/organize/runs/{a}/reject/",
        None,
        (LOGIN, 403, 403, 403, 409, 403, 403, 409, 403),
    ),
    # Run A is not a run of task "other": its organizers are told so (404).
    (
        "POST",
        "/tasks/other/organize/runs/{a}/release/",
        None,
        (LOGIN, 403, 403, 403, 403, 404, 404, 404, 403),
    ),
    (
        "GET",
        "/tasks/main/organize/runs/{a}/reject/",
        None,
        (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    # The task page: overview, terms ("main" has none: accepting them is refused, 409, and
    # only team A's members reach team A), data files ({f}: any signed-in person downloads it).
    ("GET", "/tasks/main/overview/", None, (200, 200, 200, 200, 200, 200, 200, 200, 200)),
    ("GET", "/tasks/hidden-draft/overview/", None, (404, 404, 404, 404, 200, 404, 404, 200, 404)),
    (
        "POST",
        "/tasks/main/terms/accept/",
        accept_terms_body,
        (LOGIN, 409, 404, 404, 404, 404, 404, 404, 404),
    ),
    ("GET", "/tasks/main/terms/accept/", None, (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405)),
    ("GET", "/tasks/main/files/{f}/", None, (LOGIN, 200, 200, 200, 200, 200, 200, 200, 200)),
    ("GET", "/tasks/other/files/{f}/", None, (404, 404, 404, 404, 404, 404, 404, 404, 404)),
    (
        "POST",
        "/tasks/main/organize/page/",
        page_text_body,
        (LOGIN, 403, 403, 403, REDIRECT, 403, 403, REDIRECT, 403),
    ),
    (
        "POST",
        "/tasks/main/organize/page/",
        {"data_access": "everyone"},
        (LOGIN, 403, 403, 403, 400, 403, 403, 400, 403),
    ),
    # The task page section (its POST, above, saves the page's text).
    ("GET", "/tasks/main/organize/page/", None, (LOGIN, 403, 403, 403, 200, 403, 403, 200, 403)),
    (
        "GET",
        "/tasks/hidden-draft/organize/page/",
        None,
        (LOGIN, 404, 404, 404, 200, 404, 404, 200, 404),
    ),
    (
        "POST",
        "/tasks/main/organize/files/",
        data_file_body,
        (LOGIN, 403, 403, 403, REDIRECT, 403, 403, REDIRECT, 403),
    ),
    (
        "POST",
        "/tasks/main/organize/files/",
        {"kind": "starter"},
        (LOGIN, 403, 403, 403, 400, 403, 403, 400, 403),
    ),
    ("GET", "/tasks/main/organize/files/", None, (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405)),
    (
        "POST",
        "/tasks/main/organize/files/{f}/",
        {"kind": "other", "title": "Renamed"},
        (LOGIN, 403, 403, 403, REDIRECT, 403, 403, REDIRECT, 403),
    ),
    (
        "POST",
        "/tasks/other/organize/files/{f}/",
        {"kind": "other", "title": "Renamed"},
        (LOGIN, 403, 403, 403, 403, 404, 404, 404, 403),
    ),
    (
        "GET",
        "/tasks/main/organize/files/{f}/",
        None,
        (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    (
        "POST",
        "/tasks/main/organize/files/{f}/delete/",
        None,
        (LOGIN, 403, 403, 403, REDIRECT, 403, 403, REDIRECT, 403),
    ),
    (
        "GET",
        "/tasks/main/organize/files/{f}/delete/",
        None,
        (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    (
        "POST",
        "/tasks/new/page-preview/",
        {"text": "# Rules"},
        (LOGIN, 403, 403, 403, 200, 200, 200, 200, 200),
    ),
    ("GET", "/tasks/new/page-preview/", None, (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405)),
    ("GET", "/tasks/main/submit/", None, (LOGIN, 200, 200, 403, 403, 403, 403, 403, 403)),
    (
        "POST",
        "/tasks/main/submit/",
        submit_body,
        (LOGIN, REDIRECT, REDIRECT, 403, 403, 403, 403, 403, 403),
    ),
    (
        "POST",
        "/tasks/main/submit/",
        {"name": "no file"},
        (LOGIN, 400, 400, 403, 403, 403, 403, 403, 403),
    ),
    (
        "POST",
        "/tasks/hidden-draft/submit/",
        submit_body,
        (LOGIN, 404, 404, 404, 403, 404, 404, 403, 404),
    ),
    ("GET", "/tasks/main/runs/", None, (LOGIN, 200, 200, 200, 200, 200, 200, 200, 200)),
    # Run A is on the published snapshot 1: everyone who may see the task gets its public page
    # (its team and the task's organizers get all of it).
    ("GET", "/runs/{a}/", None, (200, 200, 200, 200, 200, 200, 200, 200, 200)),
    # Withdrawing: the run's team and the task's organizers; a baseline: organizers only.
    (
        "POST",
        "/runs/{a}/withdraw/",
        None,
        (LOGIN, REDIRECT, 404, 404, REDIRECT, 404, 404, REDIRECT, 404),
    ),
    ("GET", "/runs/{a}/withdraw/", None, (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405)),
    (
        "POST",
        "/runs/{a}/baseline/",
        {"baseline": "1"},
        (LOGIN, 403, 404, 404, REDIRECT, 404, 404, REDIRECT, 404),
    ),
    (
        "POST",
        "/runs/{a}/baseline/",
        {"baseline": "maybe"},
        (LOGIN, 400, 404, 404, 400, 404, 404, 400, 404),
    ),
    ("GET", "/runs/{a}/baseline/", None, (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405)),
    (
        "POST",
        "/runs/{a}/",
        run_edit_body,
        (LOGIN, REDIRECT, 404, 404, 403, 404, 404, REDIRECT, 404),
    ),
    ("POST", "/runs/{a}/", {"name": ""}, (LOGIN, 400, 404, 404, 403, 404, 404, 400, 404)),
    # Taking part in a task that needs approval: a member asks, an organizer approves.
    (
        "POST",
        "/tasks/main/teams/{ta}/request/",
        None,
        (LOGIN, REDIRECT, 404, 404, 404, 404, 404, 404, 404),
    ),
    (
        "GET",
        "/tasks/main/teams/{ta}/request/",
        None,
        (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    (
        "POST",
        "/tasks/main/teams/{ta}/approve/",
        None,
        (LOGIN, 403, 403, 403, REDIRECT, 403, 403, REDIRECT, 403),
    ),
    (
        "POST",
        "/tasks/main/teams/{tb}/approve/",
        None,
        (LOGIN, 403, 403, 403, 404, 403, 403, 404, 403),
    ),
    (
        "GET",
        "/tasks/main/teams/{ta}/approve/",
        None,
        (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    ("GET", "/runs/999999/", None, (LOGIN, 404, 404, 404, 404, 404, 404, 404, 404)),
    ("GET", "/annotate/", None, (LOGIN, 200, 200, 200, 200, 200, 200, 200, 200)),
    ("POST", "/annotate/", None, (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405)),
    ("GET", "/annotate/main/", None, (LOGIN, 403, 403, 200, 403, 403, 403, 403, 403)),
    ("GET", "/annotate/nope/", None, (LOGIN, 404, 404, 404, 404, 404, 404, 404, 404)),
    ("GET", "/annotate/hidden-draft/", None, (LOGIN, 404, 404, 404, 403, 404, 404, 403, 404)),
    ("GET", "/annotate/hidden-draft/queue/", None, (LOGIN, 404, 404, 404, 200, 404, 404, 200, 404)),
    ("GET", "/annotate/main/queue/", None, (LOGIN, 403, 403, 403, 200, 403, 403, 200, 403)),
    ("GET", "/annotate/other/queue/", None, (LOGIN, 403, 403, 403, 403, 200, 200, 200, 403)),
    (
        "POST",
        "/annotate/main/queue/unpause",
        unpause_body,
        (LOGIN, 403, 403, 403, REDIRECT, 403, 403, REDIRECT, 403),
    ),
    ("GET", "/annotate/main/queue/unpause", None, (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405)),
    (
        "GET",
        "/annotate/main/queue/answers.csv",
        None,
        (LOGIN, 403, 403, 403, 200, 403, 403, 200, 403),
    ),
    # Teams: only members reach a team (404 for everyone else, as for no team at all).
    ("GET", "/teams/", None, (LOGIN, 200, 200, 200, 200, 200, 200, 200, 200)),
    ("POST", "/teams/", {"name": "team-new"}, (LOGIN,) + (REDIRECT,) * 8),
    ("POST", "/teams/", {"name": "team-B"}, (LOGIN, 409, 409, 409, 409, 409, 409, 409, 409)),
    ("POST", "/teams/", {"name": " "}, (LOGIN, 400, 400, 400, 400, 400, 400, 400, 400)),
    ("GET", "/teams/{ta}/", None, (LOGIN, 200, 404, 404, 404, 404, 404, 404, 404)),
    ("GET", "/teams/888888/", None, (LOGIN, 404, 404, 404, 404, 404, 404, 404, 404)),
    ("POST", "/teams/{ta}/", None, (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405)),
    ("POST", "/teams/{ta}/invite/", None, (LOGIN, 200, 404, 404, 404, 404, 404, 404, 404)),
    ("GET", "/teams/{ta}/invite/", None, (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405)),
    (
        "POST",
        "/teams/{ta}/invite/mail/",
        {"addresses": "newcomer@example.org, second@example.org"},
        (LOGIN, 200, 404, 404, 404, 404, 404, 404, 404),
    ),
    (
        "POST",
        "/teams/{ta}/invite/mail/",
        {"addresses": "not-an-address"},
        (LOGIN, 400, 404, 404, 404, 404, 404, 404, 404),
    ),
    ("GET", "/teams/{ta}/invite/mail/", None, (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405)),
    ("POST", "/teams/{ta}/leave/", None, (LOGIN, REDIRECT, 404, 404, 404, 404, 404, 404, 404)),
    ("GET", "/teams/{ta}/leave/", None, (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405)),
    # Team A's links: any member revokes one; a member is removed by the team's creator (pa, who
    # may not remove herself: she leaves).
    (
        "POST",
        "/teams/{ta}/invitations/{tainv}/revoke/",
        None,
        (LOGIN, REDIRECT, 404, 404, 404, 404, 404, 404, 404),
    ),
    (
        "GET",
        "/teams/{ta}/invitations/{tainv}/revoke/",
        None,
        (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    (
        "POST",
        "/teams/{tb}/invitations/{tainv}/revoke/",
        None,
        (LOGIN, 404, 404, 404, 404, 404, 404, 404, 404),
    ),
    (
        "POST",
        "/teams/{ta}/members/{upa}/remove/",
        None,
        (LOGIN, 409, 404, 404, 404, 404, 404, 404, 404),
    ),
    (
        "GET",
        "/teams/{ta}/members/{upa}/remove/",
        None,
        (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    # Invitations to team A: pa is a member already; pb, a member of another team, may join; the
    # annotator of ``main`` may not (team A has runs on it).
    ("GET", "/teams/join/{valid}/", None, (200, 409, 200, 409, 200, 200, 200, 200, 200)),
    ("POST", "/teams/join/{valid}/", None, (LOGIN, 409, REDIRECT, 409) + (REDIRECT,) * 5),
    ("GET", "/teams/join/{used}/", None, (410,) * 9),
    ("POST", "/teams/join/{used}/", None, (LOGIN,) + (410,) * 8),
    ("GET", "/teams/join/{expired}/", None, (410,) * 9),
    ("POST", "/teams/join/{expired}/", None, (LOGIN,) + (410,) * 8),
    ("GET", "/teams/join/forged-key/", None, (404,) * 9),
    ("POST", "/teams/join/forged-key/", None, (LOGIN,) + (404,) * 8),
    # A task's people: invitation links (made, revoked), removing annotators and organizers.
    (
        "POST",
        "/tasks/main/organize/invite/",
        {"role": "annotator"},
        (LOGIN, 403, 403, 403, 200, 403, 403, 200, 403),
    ),
    (
        "POST",
        "/tasks/main/organize/invite/",
        {"role": "bogus"},
        (LOGIN, 403, 403, 403, 400, 403, 403, 400, 403),
    ),
    (
        "POST",
        "/tasks/hidden-draft/organize/invite/",
        {"role": "organizer"},
        (LOGIN, 404, 404, 404, 200, 404, 404, 200, 404),
    ),
    ("GET", "/tasks/main/organize/invite/", None, (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405)),
    # Invitations by mail: the People section's form (a GET goes there; a refused list kept).
    (
        "GET",
        "/tasks/main/organize/invite/mail/",
        None,
        (LOGIN, 403, 403, 403, REDIRECT, 403, 403, REDIRECT, 403),
    ),
    (
        "POST",
        "/tasks/main/organize/invite/mail/",
        {"role": "annotator", "addresses": "newcomer@example.org"},
        (LOGIN, 403, 403, 403, 200, 403, 403, 200, 403),
    ),
    (
        "POST",
        "/tasks/main/organize/invite/mail/",
        {"role": "annotator", "addresses": "newcomer@"},
        (LOGIN, 403, 403, 403, 400, 403, 403, 400, 403),
    ),
    (
        "POST",
        "/tasks/hidden-draft/organize/invite/mail/",
        {"role": "organizer", "addresses": "newcomer@example.org"},
        (LOGIN, 404, 404, 404, 200, 404, 404, 200, 404),
    ),
    (
        "POST",
        "/tasks/main/organize/invitations/{tinv}/revoke/",
        None,
        (LOGIN, 403, 403, 403, REDIRECT, 403, 403, REDIRECT, 403),
    ),
    # Another task's organizers reach no invitation of ``main`` through their own task.
    (
        "POST",
        "/tasks/other/organize/invitations/{tinv}/revoke/",
        None,
        (LOGIN, 403, 403, 403, 403, 404, 404, 404, 403),
    ),
    (
        "GET",
        "/tasks/main/organize/invitations/{tinv}/revoke/",
        None,
        (LOGIN, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    (
        "POST",
        "/tasks/main/organize/annotators/{uann}/remove/",
        None,
        (LOGIN, 403, 403, 403, REDIRECT, 403, 403, REDIRECT, 403),
    ),
    (
        "POST",
        "/tasks/main/organize/annotators/{uorg}/remove/",
        None,
        (LOGIN, 403, 403, 403, 404, 403, 403, 404, 403),
    ),
    (
        "POST",
        "/tasks/main/organize/organizers/{uorg}/remove/",
        None,
        (LOGIN, 403, 403, 403, 409, 403, 403, 409, 403),
    ),
    # Accepting a role: pa and pb are in teams with runs on ``main`` (may not annotate it), the
    # annotator annotates it already, org organizes it already.
    ("GET", "/invitations/{tann}/", None, (200, 409, 409, 409, 200, 200, 200, 200, 200)),
    ("POST", "/invitations/{tann}/", None, (LOGIN, 409, 409, 409) + (REDIRECT,) * 5),
    ("GET", "/invitations/{torg}/", None, (200, 200, 200, 200, 409, 200, 200, 200, 200)),
    (
        "POST",
        "/invitations/{torg}/",
        None,
        (LOGIN, REDIRECT, REDIRECT, REDIRECT, 409, REDIRECT, REDIRECT, REDIRECT, REDIRECT),
    ),
    ("GET", "/invitations/{tused}/", None, (410,) * 9),
    ("POST", "/invitations/{tused}/", None, (LOGIN,) + (410,) * 8),
    ("GET", "/invitations/{texpired}/", None, (410,) * 9),
    ("POST", "/invitations/{texpired}/", None, (LOGIN,) + (410,) * 8),
    ("GET", "/invitations/{trevoked}/", None, (410,) * 9),
    ("POST", "/invitations/{trevoked}/", None, (LOGIN,) + (410,) * 8),
    ("GET", "/invitations/forged-key/", None, (404,) * 9),
    ("POST", "/invitations/forged-key/", None, (LOGIN,) + (404,) * 8),
    (
        "GET",
        "/admin/",
        None,
        (
            ADMIN_LOGIN,
            ADMIN_LOGIN,
            ADMIN_LOGIN,
            ADMIN_LOGIN,
            ADMIN_LOGIN,
            ADMIN_LOGIN,
            200,
            200,
            ADMIN_LOGIN,
        ),
    ),
    (
        "GET",
        "/admin/leaderboard/item/",
        None,
        (
            ADMIN_LOGIN,
            ADMIN_LOGIN,
            ADMIN_LOGIN,
            ADMIN_LOGIN,
            ADMIN_LOGIN,
            ADMIN_LOGIN,
            200,
            200,
            ADMIN_LOGIN,
        ),
    ),
    (
        "GET",
        "/admin/leaderboard/run/",
        None,
        (
            ADMIN_LOGIN,
            ADMIN_LOGIN,
            ADMIN_LOGIN,
            ADMIN_LOGIN,
            ADMIN_LOGIN,
            ADMIN_LOGIN,
            200,
            200,
            ADMIN_LOGIN,
        ),
    ),
    ("GET", "/admin/login/", None, (200, 200, 200, 200, 200, 200, REDIRECT, REDIRECT, 200)),
    (
        "POST",
        "/admin/login/",
        {"username": "pa", "password": "wrong"},
        (200, 200, 200, 200, 200, 200, 200, 200, 200),
    ),
    ("GET", "/accounts/login/", None, (200, 200, 200, 200, 200, 200, 200, 200, 200)),
    (
        "POST",
        "/accounts/login/",
        {"username": "pa", "password": "wrong"},
        (200, 200, 200, 200, 200, 200, 200, 200, 200),
    ),
    ("POST", "/accounts/logout/", None, (REDIRECT,) * 9),
    # allauth's sign-out page asks for a POST (its form); signed out, there is nothing to ask.
    ("GET", "/accounts/logout/", None, (REDIRECT, 200, 200, 200, 200, 200, 200, 200, 200)),
    ("GET", "/accounts/password/change/", None, (LOGIN, 200, 200, 200, 200, 200, 200, 200, 200)),
    ("GET", "/accounts/email/", None, (LOGIN,) + (200,) * 8),
    # Each person's own mail settings.
    ("GET", "/accounts/notifications/", None, (LOGIN,) + (200,) * 8),
    ("POST", "/accounts/notifications/", {"on": "run_finished"}, (LOGIN,) + (REDIRECT,) * 8),
    ("GET", "/accounts/password/reset/", None, (200, 200, 200, 200, 200, 200, 200, 200, 200)),
    ("POST", "/accounts/password/reset/", {"email": "pa@example.org"}, (REDIRECT,) * 9),
    # Sign-up is for the signed out (a signed-in user is sent home).
    (
        "GET",
        "/accounts/signup/",
        None,
        (200, REDIRECT, REDIRECT, REDIRECT, REDIRECT, REDIRECT, REDIRECT, REDIRECT, REDIRECT),
    ),
    ("POST", "/accounts/signup/", signup_body, (REDIRECT,) * 9),
    (
        "POST",
        "/accounts/signup/",
        {"email": "not an address", "username": "x"},
        (200, REDIRECT, REDIRECT, REDIRECT, REDIRECT, REDIRECT, REDIRECT, REDIRECT, REDIRECT),
    ),
]
CELLS = matrix_cells(MATRIX, ROLES)


def forbidden_for(world, role: str, path: str) -> list[str]:
    """Text that must not appear in any page or download ``role`` gets."""
    if role in ("org", "admin"):
        return []
    never = [
        world.gold_key,
        world.reference_key,
        *HELD_TEXTS,
        "DRAFTTITLE",
        *world.annotator_secrets,
    ]
    others = {"pa": ["B"], "pb": ["A"]}.get(role, ["A", "B"])
    # A run's description is one of its public details: its public page shows it.
    public_page = path == f"/runs/{world.runs['A'].pk}/"
    for team in others:
        never.append(world.secret_file[team])
        if not (public_page and team == "A"):
            never.append(world.secret_description[team])
    if role == "annotator" and path.startswith("/annotate/"):
        never += annotator_never(world)
    return never


def annotator_never(world) -> list[str]:
    """What the annotation pages must not tell an annotator: runs, teams, scores."""
    return ["run-A", "run-B", "team-A", "team-B", "0.618", "0.314", "precision", "recall"]


def client_for(world, role: str) -> Client:
    client = Client()
    if role != "anonymous":
        client.force_login(world.users[role])
    return client


def text_of(response) -> str:
    """The response's text, its times of day without fractional seconds (a timestamp whose
    seconds spell a held score is no leak)."""
    if getattr(response, "streaming", False):
        return without_clock_times(b"".join(response.streaming_content).decode())
    return without_clock_times(response.content.decode())


def check_status(response, expected, path: str, text: str) -> None:
    if expected in (LOGIN, ADMIN_LOGIN, REDIRECT):
        assert response.status_code == 302, (response.status_code, text[:300])
        target = urlsplit(response["Location"]).path
        if expected == LOGIN:
            assert target == "/accounts/login/"
            assert f"next={path.split('?')[0]}" in response["Location"].replace("%2F", "/")
        elif expected == ADMIN_LOGIN:
            assert target == "/admin/login/"
        else:
            assert target not in ("/accounts/login/", "/admin/login/")
    else:
        assert response.status_code == expected, text[:500]


@pytest.mark.parametrize(("method", "path", "body", "role", "expected"), CELLS)
def test_page_matrix(world, method, path, body, role, expected):
    teams = {"ta": world.teams["A"].pk, "tb": world.teams["B"].pk}
    path = path.format(
        a=world.runs["A"].pk,
        **teams,
        **world.invitations,
        **world.task_invitations,
        **world.team_refs,
        **world.files,
    )
    client = session_client(world.sessions.get(role))
    data = body(world) if callable(body) else body
    response = client.get(path) if method == "GET" else client.post(path, data or {})
    text = text_of(response)
    check_status(response, expected, path, text)
    for secret in forbidden_for(world, role, path):
        assert secret not in text, f"{secret!r} leaked to {role} on {method} {path}"


def _page_routes(patterns, prefix=""):
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if hasattr(pattern, "url_patterns"):
            if route in ("api/", "annotate/api/", "admin/", "accounts/"):
                continue
            yield from _page_routes(pattern.url_patterns, route)
        else:
            yield route


def test_matrix_covers_every_page_route():
    from django.urls import get_resolver

    routes = set(_page_routes(get_resolver().url_patterns))
    covered = set()
    for _, path, _, _ in MATRIX:
        route = path.split("?")[0].lstrip("/")
        for slug in ("main", "other", "hidden-draft", "nope"):
            route = route.replace(f"tasks/{slug}/", "tasks/<slug:slug>/")
            route = route.replace(f"annotate/{slug}/", "annotate/<slug:slug>/")
        route = route.replace("{a}", "<int:run_id>").replace("999999", "<int:run_id>")
        for team in ("{ta}", "{tb}", "888888"):
            route = route.replace(team, "<int:team_id>")
        for key in ("{valid}", "{used}", "{expired}", "forged-key"):
            route = route.replace(f"teams/join/{key}/", "teams/join/<str:key>/")
        for key in ("{tann}", "{torg}", "{tused}", "{texpired}", "{trevoked}", "forged-key"):
            route = route.replace(f"invitations/{key}/", "invitations/<str:key>/")
        route = route.replace("{tinv}", "<int:invitation_id>").replace("{f}", "<int:file_id>")
        route = route.replace("{tainv}", "<int:invitation_id>")
        for person in ("{uann}", "{uorg}", "{upa}"):
            route = route.replace(person, "<int:user_id>")
        for version in ("1", "2", "9"):
            route = route.replace(f"snapshots/{version}/", "snapshots/<int:version>/")
            route = route.replace(f"snapshots/{version}.", "snapshots/<int:version>.")
        covered.add(route)
    assert routes <= covered, sorted(routes - covered)


# -- what the cells did -------------------------------------------------------------------------
def test_successful_posts_changed_what_they_say(world):
    org = client_for(world, "org")
    assert org.post("/tasks/main/board/publish/").status_code == 302
    world.task.refresh_from_db()
    assert world.task.board_held is False
    assert org.post("/tasks/main/board/hold/").status_code == 302
    world.task.refresh_from_db()
    assert world.task.board_held is True
    assert org.post("/tasks/main/organize/", organize_body(world)).status_code == 302
    world.task.refresh_from_db()
    assert world.task.title == "Main task, renamed"
    pa = client_for(world, "pa")
    assert pa.post(f"/runs/{world.runs['A'].pk}/", run_edit_body(world)).status_code == 302
    world.runs["A"].refresh_from_db()
    assert world.runs["A"].name == "run-A renamed"
    staff = client_for(world, "staff_org")
    assert staff.post("/tasks/new/", new_task_body(world)).status_code == 302
    made = Task.objects.get(slug="made-here")
    assert list(made.organizers.all()) == [world.users["staff_org"]]
    assert made.state == Task.State.DRAFT


def test_refused_posts_change_nothing(world):
    from annotation.models import AnnotatorPause, GoldItem
    from annotation.services import pause_annotator
    from leaderboard.models import ReferenceItem, Run

    task, run = world.task, world.runs["A"]
    pause_annotator(task=task, annotator=world.users["annotator"], reason="gold accuracy")
    n_runs = Run.objects.count()
    for role in ("anonymous", "pa", "pb", "annotator", "other_org", "staff_org", "creator"):
        client = client_for(world, role)
        client.post("/tasks/main/board/publish/")
        client.post("/tasks/main/organize/", organize_body(world))
        client.post("/annotate/main/queue/unpause", unpause_body(world))
    for role in ("anonymous", "pa", "pb", "annotator", "org", "other_org"):
        client_for(world, role).post("/tasks/new/", new_task_body(world))
    reference = set(ReferenceItem.objects.filter(task=task).values_list("item__key", "group"))
    gold = set(GoldItem.objects.filter(task=task).values_list("item__key", "answer"))
    for role in ("anonymous", "pa", "pb", "annotator", "other_org", "staff_org", "creator"):
        client = client_for(world, role)
        client.post(
            "/tasks/main/organize/reference/", {"file": SimpleUploadedFile("r.tsv", b"x\n")}
        )
        client.post(
            "/annotate/main/gold/", {"file": SimpleUploadedFile("g.tsv", b"GOLDKEY-5\tincorrect\n")}
        )
    client_for(world, "org").post("/annotate/main/gold/", bad_gold_body(world))
    assert (
        set(ReferenceItem.objects.filter(task=task).values_list("item__key", "group")) == reference
    )
    assert set(GoldItem.objects.filter(task=task).values_list("item__key", "answer")) == gold
    for role in ("anonymous", "annotator", "org", "other_org", "staff_org", "admin", "creator"):
        client_for(world, role).post("/tasks/main/submit/", submit_body(world))
    for role in ("anonymous", "pa", "annotator", "other_org", "staff_org", "creator"):
        client_for(world, role).post("/tasks/hidden-draft/board/hold/")
    for role in ("anonymous", "pb", "annotator", "org", "other_org", "staff_org", "creator"):
        client_for(world, role).post(f"/runs/{run.pk}/", run_edit_body(world))
    task.refresh_from_db()
    run.refresh_from_db()
    assert task.board_held is True and task.title == "Main task"
    assert run.name == "run-A" and run.link == ""
    assert Run.objects.count() == n_runs
    assert Task.objects.get(slug="hidden-draft").board_held is False
    assert not Task.objects.filter(slug="made-here").exists()
    assert AnnotatorPause.objects.filter(task=task, lifted_at=None).count() == 1


def test_team_cells_changed_what_they_say_and_refusals_nothing(world):
    team, run = world.teams["A"], world.runs["A"]
    keys = world.invitations
    for key in ("used", "expired"):
        client_for(world, "pb").post(f"/teams/join/{keys[key]}/")
    client_for(world, "pb").post(f"/teams/{team.pk}/leave/")
    client_for(world, "pb").post(f"/teams/{team.pk}/invite/")
    assert list(team.members.values_list("username", flat=True)) == ["pa"]
    assert team.invitations.count() == 3
    assert client_for(world, "pb").post(f"/teams/join/{keys['valid']}/").status_code == 302
    assert set(team.members.values_list("username", flat=True)) == {"pa", "pb"}
    assert client_for(world, "pa").post(f"/teams/{team.pk}/leave/").status_code == 302
    assert list(team.members.values_list("username", flat=True)) == ["pb"]
    run.refresh_from_db()
    assert run.team == team and run.submitted_by == world.users["pa"]


def test_participant_pages_show_published_values_never_held_ones(world):
    for role in ("anonymous", "pa", "pb"):
        client = client_for(world, role)
        board = text_of(client.get("/tasks/main/"))
        assert "0.618" in board
        for held in HELD_TEXTS:
            assert held not in board
    assert "0.314" in text_of(client_for(world, "org").get("/tasks/main/snapshots/2/"))


def test_run_page_shows_own_team_only(world):
    text = text_of(client_for(world, "pa").get("/tasks/main/runs/"))
    assert "run-A" in text and "run-B" not in text
    detail = text_of(client_for(world, "pa").get(f"/runs/{world.runs['A'].pk}/"))
    assert world.secret_description["A"] in detail
    for held in HELD_TEXTS:
        assert held not in detail


def test_annotator_learns_nothing_about_runs_from_the_api(world):
    client = client_for(world, "annotator")
    page = text_of(client.get("/annotate/main/"))
    claim = client.post(
        "/annotate/api/tasks/main/claim", json.dumps({"count": 3}), content_type="application/json"
    )
    assert claim.status_code == 200, claim.content
    body = claim.json()
    assert len(body["assignments"]) == 3
    assert all(set(a) == {"token", "expires_at", "display"} for a in body["assignments"])
    text = page + without_clock_times(claim.content.decode())
    assert "Left " in text  # the payload is there ...
    for secret in [*annotator_never(world), world.gold_key, *HELD_TEXTS]:
        assert secret not in text  # ... and nothing about who predicted it
    progress = client.get("/annotate/api/tasks/main/progress").content.decode()
    for secret in annotator_never(world):
        assert secret not in progress


# -- CSV downloads are inert in a spreadsheet ----------------------------------------------------
HOSTILE_CELLS = {
    "name": "+SUM(1)|cmd",
    "team": '=HYPERLINK("http://evil.example")',
    "key": "@evil-key",
    "tab": "\t=1+1",
    "justification": "-2+3 looks right",
}


def csv_rows(response) -> list[list[str]]:
    import csv

    return list(csv.reader(text_of(response).splitlines()))


def test_csv_downloads_neutralise_formula_cells(world):
    import uuid

    from django.utils import timezone

    from annotation.services import answer_assignment, claim_assignments

    snapshot = world.snapshots[0]
    snapshot.rows = [
        {**row, "name": HOSTILE_CELLS["name"], "team": HOSTILE_CELLS["team"]}
        for row in snapshot.rows
    ]
    snapshot.save(update_fields=["rows"])
    n = world.task.n_items
    Item.objects.bulk_create(
        [
            Item(task=world.task, key=HOSTILE_CELLS["key"], index=n, verified_at=timezone.now()),
            Item(task=world.task, key="-17", index=n + 1, verified_at=timezone.now()),
            Item(
                task=world.task, key=HOSTILE_CELLS["tab"], index=n + 2, verified_at=timezone.now()
            ),
        ]
    )
    ann = world.users["annotator"]
    (lease,) = claim_assignments(task=world.task, annotator=ann, count=1).assignments
    answer_assignment(
        annotator=ann,
        token=lease.token,
        client_id=uuid.uuid4(),
        answer="correct",
        justification=HOSTILE_CELLS["justification"],
    )

    org = client_for(world, "org")
    for path in (
        "/tasks/main/snapshots/1.csv",
        "/api/tasks/main/snapshots/1/?format=csv",
        "/api/tasks/main/board/?format=csv",
    ):
        cells = [cell for row in csv_rows(org.get(path)) for cell in row]
        assert "'" + HOSTILE_CELLS["name"] in cells and "'" + HOSTILE_CELLS["team"] in cells
        assert not any(cell.startswith(("=", "+", "@")) for cell in cells), path
    items = csv_rows(org.get("/tasks/main/organize/verified-items.csv"))
    keys = [row[0] for row in items]
    assert "'" + HOSTILE_CELLS["key"] in keys and "'" + HOSTILE_CELLS["tab"] in keys
    assert "-17" in keys  # a plain number is not a formula: left as it is
    answers = [
        cell for row in csv_rows(org.get("/annotate/main/queue/answers.csv")) for cell in row
    ]
    assert "'" + HOSTILE_CELLS["justification"] in answers
    # The JSON download keeps the text exactly (JSON is not opened by spreadsheets).
    data = json.loads(text_of(org.get("/tasks/main/snapshots/1.json")))
    assert {row["team"] for row in data["rows"]} == {HOSTILE_CELLS["team"]}


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("=1+1", "'=1+1"),
        ("+1", "+1"),
        ("-0.05", "-0.05"),
        ("-1e-3", "-1e-3"),
        ("-x", "'-x"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\rcmd", "'\rcmd"),
        ("safe", "safe"),
        ("", ""),
        ("a=b", "a=b"),
        ("+ 1", "'+ 1"),
    ],
)
def test_formula_neutralisation_of_one_cell(text, written):
    from site_platform.downloads import neutralize_formula

    assert neutralize_formula(text) == written


# -- upload ceilings on the submit page ----------------------------------------------------------
def test_the_submit_page_refuses_a_body_over_the_tasks_limit_before_reading_it(world):
    from leaderboard.models import Run

    world.task.max_upload_bytes = 1024
    world.task.save(update_fields=["max_upload_bytes"])
    runs = Run.objects.count()
    big = SimpleUploadedFile("big.tsv", b"k1\t0.5\n" * 200_000)  # 1.4 MB > 1 KiB + 1 MiB slack
    response = client_for(world, "pa").post("/tasks/main/submit/", {"file": big, "name": "big"})
    assert response.status_code == 413
    assert "over the limit of 1 KiB" in response.content.decode()
    assert Run.objects.count() == runs


def test_the_site_ceiling_stops_reading_an_upload_and_stores_nothing(world, settings):
    from leaderboard.models import Run

    settings.UPLOAD_MAX_BYTES = 64 * 1024
    runs = Run.objects.count()
    big = SimpleUploadedFile("big.tsv", b"k1\t0.5\n" * 20_000)  # 140 KB: under the slack
    response = client_for(world, "pa").post("/tasks/main/submit/", {"file": big, "name": "big"})
    assert response.status_code == 413
    assert "nothing was stored" in response.content.decode()
    assert Run.objects.count() == runs


def test_the_ceiling_handler_stops_at_the_limit(settings):
    from django.core.files.uploadhandler import StopUpload
    from django.test import RequestFactory

    from leaderboard.views.uploads import UploadCeilingHandler, upload_too_large

    settings.UPLOAD_MAX_BYTES = 10
    request = RequestFactory().post("/")
    handler = UploadCeilingHandler(request)
    assert handler.receive_data_chunk(b"12345", 0) == b"12345"
    assert handler.receive_data_chunk(b"67890", 5) == b"67890"
    assert not upload_too_large(request)
    with pytest.raises(StopUpload):
        handler.receive_data_chunk(b"x", 10)
    assert upload_too_large(request)


# -- one rule for organizer rights: the admin, the pages and the API agree ----------------------
@pytest.mark.parametrize("role", ["org", "other_org", "staff_org", "admin", "creator"])
def test_the_admin_the_pages_and_the_api_agree_on_who_organizes_what(world, role):
    from rest_framework.test import APIClient

    from leaderboard.admin import TaskAdmin
    from leaderboard.selectors import organized_tasks

    user = world.users[role]
    request = type("Request", (), {"user": user})()
    in_admin = set(TaskAdmin(Task, None).get_queryset(request).values_list("slug", flat=True))
    client, api = client_for(world, role), APIClient()
    api.force_authenticate(user)
    by_pages = {
        slug
        for slug in Task.objects.values_list("slug", flat=True)
        if client.get(f"/tasks/{slug}/organize/").status_code == 200
    }
    by_api = {
        slug
        for slug in Task.objects.values_list("slug", flat=True)
        if api.get(f"/api/tasks/{slug}/spend/").status_code == 200
    }
    expected = {
        "org": {"main", "hidden-draft"},
        "other_org": {"other"},
        "staff_org": {"other"},
        "admin": {"main", "hidden-draft", "other"},
        "creator": set(),  # may create tasks, organizes none yet
    }[role]
    assert in_admin == by_pages == by_api == expected
    assert set(organized_tasks(user).values_list("slug", flat=True)) == expected


def test_a_task_creator_organizes_the_task_they_create_on_the_page_and_no_other(world):
    creator = world.users["creator"]
    assert not creator.is_staff and not creator.teams.exists()
    client = client_for(world, "creator")
    new_page = text_of(client.get("/tasks/new/"))
    assert "DRAFTTITLE" not in new_page and world.gold_key not in new_page
    response = client.post("/tasks/new/", new_task_body(world))
    assert response.status_code == 302
    assert urlsplit(response["Location"]).path == "/tasks/made-here/organize/"
    made = Task.objects.get(slug="made-here")
    assert list(made.organizers.all()) == [creator] and made.state == Task.State.DRAFT
    assert client.get("/tasks/made-here/organize/").status_code == 200
    assert client.get("/tasks/made-here/").status_code == 200  # their own draft
    assert client_for(world, "other_org").get("/tasks/made-here/").status_code == 404
    for slug in ("main", "other"):
        assert client.get(f"/tasks/{slug}/organize/").status_code == 403
    assert client.get("/tasks/hidden-draft/organize/").status_code == 404
    assert client.post("/tasks/main/board/publish/").status_code == 403
    world.task.refresh_from_db()
    assert world.task.board_held is True


def test_a_staff_organizer_sees_only_their_tasks_rows_in_the_admin(world):
    client = client_for(world, "staff_org")
    for path in (
        "/admin/leaderboard/run/",
        "/admin/leaderboard/item/",
        "/admin/leaderboard/leaderboardsnapshot/",
        "/admin/annotation/judgment/",
    ):
        response = client.get(path)
        assert response.status_code == 200, path
        text = text_of(response)
        for secret in ("run-A", "run-B", world.gold_key, world.judge.username):
            assert secret not in text, (secret, path)


def test_a_staff_organizer_sees_only_the_teams_of_their_tasks_in_the_admin(world):
    # Teams belong to no task; the team admin listed every team and its members.
    text = text_of(client_for(world, "staff_org").get("/admin/leaderboard/team/"))
    assert "team-A" not in text and "team-B" not in text
    response = client_for(world, "staff_org").get(
        f"/admin/leaderboard/team/{world.teams['A'].pk}/change/"
    )
    assert response.status_code == 302  # not found in their queryset: back to the index
    # The organizer of ``main``, given the same admin access, sees its two teams.
    org = world.users["org"]
    org.is_staff = True
    org.save(update_fields=["is_staff"])
    org.user_permissions.add(Permission.objects.get(codename="view_team"))
    listed = text_of(client_for(world, "org").get("/admin/leaderboard/team/"))
    assert "team-A" in listed and "team-B" in listed


def test_only_superusers_see_team_invitations_in_the_admin(world):
    staff = client_for(world, "staff_org").get("/admin/leaderboard/teaminvitation/")
    assert staff.status_code == 403 and "team-A" not in text_of(staff)
    admin_text = text_of(client_for(world, "admin").get("/admin/leaderboard/teaminvitation/"))
    assert "team-A" in admin_text
    for key in world.invitations.values():
        assert key not in admin_text


def test_task_invitations_in_the_admin_are_their_tasks_organizers_only(world):
    path = "/admin/leaderboard/taskinvitation/"
    row = f"{path}{world.task_invitations['tinv']}/change/"
    staff = client_for(world, "staff_org").get(path)
    assert staff.status_code == 200 and row not in text_of(staff)
    admin_text = text_of(client_for(world, "admin").get(path))
    assert row in admin_text
    for name in ("tann", "torg", "tused", "texpired", "trevoked"):
        assert str(world.task_invitations[name]) not in admin_text
