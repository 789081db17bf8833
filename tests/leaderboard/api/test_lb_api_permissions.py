"""The leaderboard API's permission matrix: every endpoint x every role, each cell asserted.

Roles: anonymous, participant A (team A, has a run), participant B (team B, has a run), an
annotator of the task, the task's organizer, an organizer of another task, a staff user who
organizes another task (staff status grants no organizer rights), an admin. The world
(``build_world``) has verified gold items, a reference sample, snapshot 1 published and snapshot 2
held with a distinctive value. Besides the status of each cell, every successful response a
participant or the public can get is searched for what they must never see: gold item keys,
reference keys, the held snapshot's scores, other teams' run files and descriptions, and anything
of the annotators (who they are, their notes, their estimated error rates, items' posteriors).
"""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard.models import ApiToken, Run, Task

from pipeline_support import without_clock_times
from role_world import matrix_cells

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "pa", "pb", "annotator", "org", "other_org", "staff_org", "admin", "creator")
ERROR_KEYS = {"code", "message", "problems", "total", "run"}


def upload_body():
    return {"file": SimpleUploadedFile("run.tsv", b"k1\t0.9\nnew-key\t0.4\n"), "name": "fresh"}


def reference_body():
    return {"file": SimpleUploadedFile("ref.tsv", b"k1\tdoc\nk2\tdoc\n")}


def gold_body():
    return {"file": SimpleUploadedFile("gold.tsv", b"GOLDKEY-0\tincorrect\n")}


def candidates_body():
    return {"file": SimpleUploadedFile("candidates.tsv", b"k1\tdoc1\nk2\tdoc2\n")}


def pool_body():
    return {"file": SimpleUploadedFile("pool.tsv", b"k1\nk2\n")}


def data_file_body():
    return {"file": SimpleUploadedFile("starter.py", b"print('hello')\n"), "kind": "starter"}


# (method, path, body) -> expected status per role, in ROLES order.
# "{a}" is the id of team A's run. Bodies are JSON unless they hold a file (multipart).
MATRIX = [
    # method, path, body,                             anon pa   pb   ann  org  oorg sorg admin cre
    ("GET", "/api/tasks/", None, (200, 200, 200, 200, 200, 200, 200, 200, 200)),
    (
        "POST",
        "/api/tasks/",
        {"slug": "new-task", "title": "N"},
        (401, 403, 403, 403, 403, 403, 201, 201, 201),
    ),
    ("GET", "/api/tasks/main/", None, (200, 200, 200, 200, 200, 200, 200, 200, 200)),
    (
        "PATCH",
        "/api/tasks/main/",
        {"title": "Renamed"},
        (401, 403, 403, 403, 200, 403, 403, 200, 403),
    ),
    (
        "PATCH",
        "/api/tasks/other/",
        {"title": "Renamed"},
        (401, 403, 403, 403, 403, 200, 200, 200, 403),
    ),
    ("GET", "/api/tasks/hidden-draft/", None, (404, 404, 404, 404, 200, 404, 404, 200, 404)),
    (
        "PATCH",
        "/api/tasks/hidden-draft/",
        {"title": "Renamed"},
        (404, 404, 404, 404, 200, 404, 404, 200, 404),
    ),
    ("GET", "/api/tasks/main/runs/", None, (401, 200, 200, 200, 200, 200, 200, 200, 200)),
    (
        "GET",
        "/api/tasks/main/runs/?state=scored&team=team-A",
        None,
        (401, 200, 200, 200, 200, 200, 200, 200, 200),
    ),
    ("POST", "/api/tasks/main/runs/", upload_body, (401, 202, 202, 403, 403, 403, 403, 403, 403)),
    # Organizers' uploads are received (202) for a worker to load; {up}: a loaded gold upload.
    (
        "POST",
        "/api/tasks/main/reference/",
        reference_body,
        (401, 403, 403, 403, 202, 403, 403, 202, 403),
    ),
    ("POST", "/api/tasks/main/gold/", gold_body, (401, 403, 403, 403, 202, 403, 403, 202, 403)),
    (
        "POST",
        "/api/tasks/hidden-draft/gold/",
        gold_body,
        (401, 404, 404, 404, 202, 404, 404, 202, 404),
    ),
    ("GET", "/api/tasks/main/uploads/", None, (401, 403, 403, 403, 200, 403, 403, 200, 403)),
    (
        "GET",
        "/api/tasks/hidden-draft/uploads/",
        None,
        (401, 404, 404, 404, 200, 404, 404, 200, 404),
    ),
    (
        "GET",
        "/api/tasks/main/uploads/{up}/",
        None,
        (401, 403, 403, 403, 200, 403, 403, 200, 403),
    ),
    (
        "GET",
        "/api/tasks/other/uploads/{up}/",
        None,
        (401, 403, 403, 403, 403, 404, 404, 404, 403),
    ),
    ("GET", "/api/tasks/main/gold/", None, (401, 405, 405, 405, 405, 405, 405, 405, 405)),
    # The reference sample built in the product: status, candidates, draw (no candidates yet in
    # this world: an organizer's draw is told so, 409).
    (
        "GET",
        "/api/tasks/main/reference-sample/",
        None,
        (401, 403, 403, 403, 200, 403, 403, 200, 403),
    ),
    (
        "GET",
        "/api/tasks/hidden-draft/reference-sample/",
        None,
        (401, 404, 404, 404, 200, 404, 404, 200, 404),
    ),
    (
        "POST",
        "/api/tasks/main/reference-sample/candidates/",
        candidates_body,
        (401, 403, 403, 403, 202, 403, 403, 202, 403),
    ),
    (
        "POST",
        "/api/tasks/main/reference-sample/draw/",
        {"size": 1, "seed": 1},
        (401, 403, 403, 403, 409, 403, 403, 409, 403),
    ),
    (
        "GET",
        "/api/tasks/main/reference-sample/draw/",
        None,
        (401, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    # Nothing drawn in this world: an organizer's cancel is told so (409).
    (
        "POST",
        "/api/tasks/main/reference-sample/cancel/",
        None,
        (401, 403, 403, 403, 409, 403, 403, 409, 403),
    ),
    (
        "POST",
        "/api/tasks/hidden-draft/reference-sample/cancel/",
        None,
        (401, 404, 404, 404, 409, 404, 404, 409, 404),
    ),
    (
        "GET",
        "/api/tasks/main/reference-sample/cancel/",
        None,
        (401, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    # Nothing drawn: an organizer's request to settle stuck candidates is told so (409).
    (
        "POST",
        "/api/tasks/main/reference-sample/settle/",
        None,
        (401, 403, 403, 403, 409, 403, 403, 409, 403),
    ),
    (
        "POST",
        "/api/tasks/hidden-draft/reference-sample/settle/",
        None,
        (401, 404, 404, 404, 409, 404, 404, 409, 404),
    ),
    (
        "GET",
        "/api/tasks/main/reference-sample/settle/",
        None,
        (401, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    # "main" is an open task: its organizers are told it has no pool (409).
    ("POST", "/api/tasks/main/pool/", pool_body, (401, 403, 403, 403, 409, 403, 403, 409, 403)),
    # The task page: terms ("main" has none: a member is told so, 409; someone in no team, 403)
    # and data files ("main" has one, {f}; no terms: any signed-in person downloads it).
    ("GET", "/api/tasks/main/terms/", None, (200, 200, 200, 200, 200, 200, 200, 200, 200)),
    ("GET", "/api/tasks/hidden-draft/terms/", None, (404, 404, 404, 404, 200, 404, 404, 200, 404)),
    ("POST", "/api/tasks/main/terms/", {}, (401, 409, 409, 403, 403, 403, 403, 403, 403)),
    (
        "GET",
        "/api/tasks/main/terms/acceptances/",
        None,
        (401, 403, 403, 403, 200, 403, 403, 200, 403),
    ),
    ("GET", "/api/tasks/main/files/", None, (200, 200, 200, 200, 200, 200, 200, 200, 200)),
    ("GET", "/api/tasks/hidden-draft/files/", None, (404, 404, 404, 404, 200, 404, 404, 200, 404)),
    (
        "POST",
        "/api/tasks/main/files/",
        data_file_body,
        (401, 403, 403, 403, 201, 403, 403, 201, 403),
    ),
    ("GET", "/api/tasks/main/files/{f}/", None, (200, 200, 200, 200, 200, 200, 200, 200, 200)),
    ("GET", "/api/tasks/other/files/{f}/", None, (404, 404, 404, 404, 404, 404, 404, 404, 404)),
    (
        "PATCH",
        "/api/tasks/main/files/{f}/",
        {"title": "Renamed"},
        (401, 403, 403, 403, 200, 403, 403, 200, 403),
    ),
    (
        "DELETE",
        "/api/tasks/main/files/{f}/",
        None,
        (401, 403, 403, 403, 204, 403, 403, 204, 403),
    ),
    (
        "GET",
        "/api/tasks/main/files/{f}/download/",
        None,
        (401, 200, 200, 200, 200, 200, 200, 200, 200),
    ),
    ("GET", "/api/tasks/main/board/", None, (200, 200, 200, 200, 200, 200, 200, 200, 200)),
    (
        "GET",
        "/api/tasks/main/board/?format=csv",
        None,
        (200, 200, 200, 200, 200, 200, 200, 200, 200),
    ),
    (
        "GET",
        "/api/tasks/main/board/?sort=f1&order=asc",
        None,
        (200, 200, 200, 200, 200, 200, 200, 200, 200),
    ),
    ("GET", "/api/tasks/main/snapshots/", None, (200, 200, 200, 200, 200, 200, 200, 200, 200)),
    ("GET", "/api/tasks/main/snapshots/1/", None, (200, 200, 200, 200, 200, 200, 200, 200, 200)),
    (
        "GET",
        "/api/tasks/main/snapshots/1/?format=csv",
        None,
        (200, 200, 200, 200, 200, 200, 200, 200, 200),
    ),
    ("GET", "/api/tasks/main/snapshots/2/", None, (404, 404, 404, 404, 200, 404, 404, 200, 404)),
    (
        "GET",
        "/api/tasks/main/snapshots/2/?format=csv",
        None,
        (404, 404, 404, 404, 200, 404, 404, 200, 404),
    ),
    ("GET", "/api/tasks/main/quota/", None, (401, 200, 200, 200, 200, 200, 200, 200, 200)),
    ("POST", "/api/tasks/main/hold/", None, (401, 403, 403, 403, 200, 403, 403, 200, 403)),
    (
        "POST",
        "/api/tasks/main/publish/",
        {"release_hold": True},
        (401, 403, 403, 403, 200, 403, 403, 200, 403),
    ),
    ("GET", "/api/tasks/main/teams/", None, (401, 403, 403, 403, 200, 403, 403, 200, 403)),
    (
        "POST",
        "/api/tasks/main/teams/{ta}/request/",
        None,
        (401, 200, 404, 404, 404, 404, 404, 404, 404),
    ),
    (
        "POST",
        "/api/tasks/main/teams/{ta}/approve/",
        None,
        (401, 403, 403, 403, 200, 403, 403, 200, 403),
    ),
    (
        "POST",
        "/api/tasks/main/teams/{tb}/approve/",
        None,
        (401, 403, 403, 403, 404, 403, 403, 404, 403),
    ),
    ("GET", "/api/tasks/main/spend/", None, (401, 403, 403, 403, 200, 403, 403, 200, 403)),
    # The readiness checklist (its organizers), and opening a draft that is not ready (409).
    ("GET", "/api/tasks/main/readiness/", None, (401, 403, 403, 403, 200, 403, 403, 200, 403)),
    (
        "GET",
        "/api/tasks/hidden-draft/readiness/",
        None,
        (401, 404, 404, 404, 200, 404, 404, 200, 404),
    ),
    ("POST", "/api/tasks/main/readiness/", None, (401, 405, 405, 405, 405, 405, 405, 405, 405)),
    (
        "PATCH",
        "/api/tasks/hidden-draft/",
        {"state": "open"},
        (404, 404, 404, 404, 409, 404, 404, 409, 404),
    ),
    ("GET", "/api/tasks/main/export/items/", None, (401, 403, 403, 403, 200, 403, 403, 200, 403)),
    (
        "GET",
        "/api/tasks/main/export/items/?format=csv",
        None,
        (401, 403, 403, 403, 200, 403, 403, 200, 403),
    ),
    ("GET", "/api/runs/{a}/", None, (404, 200, 404, 404, 200, 404, 404, 200, 404)),
    (
        "PATCH",
        "/api/runs/{a}/",
        {"name": "better name"},
        (401, 200, 404, 404, 403, 404, 404, 200, 404),
    ),
    ("GET", "/api/runs/{a}/history/", None, (404, 200, 404, 404, 200, 404, 404, 200, 404)),
    # A held run's release and rejection: its task's organizers (run A is not held: 409).
    ("POST", "/api/runs/{a}/release/", None, (401, 403, 404, 404, 409, 404, 404, 409, 404)),
    ("POST", "/api/runs/{a}/reject/", None, (401, 403, 404, 404, 409, 404, 404, 409, 404)),
    # Withdrawing: the run's team and the task's organizers; a baseline: organizers only.
    ("POST", "/api/runs/{a}/withdraw/", None, (401, 200, 404, 404, 200, 404, 404, 200, 404)),
    ("GET", "/api/runs/{a}/withdraw/", None, (401, 405, 405, 405, 405, 405, 405, 405, 405)),
    (
        "POST",
        "/api/runs/{a}/baseline/",
        {"baseline": True},
        (401, 403, 404, 404, 200, 404, 404, 200, 404),
    ),
    (
        "POST",
        "/api/runs/{a}/baseline/",
        {"baseline": "maybe"},
        (401, 400, 404, 404, 400, 404, 404, 400, 404),
    ),
    ("GET", "/api/token/", None, (401, 200, 200, 200, 200, 200, 200, 200, 200)),
    ("POST", "/api/token/", None, (401, 201, 201, 201, 201, 201, 201, 201, 201)),
    ("POST", "/api/token/rotate/", None, (401, 201, 201, 201, 201, 201, 201, 201, 201)),
    ("DELETE", "/api/token/", None, (401, 204, 204, 204, 204, 204, 204, 204, 204)),
    ("GET", "/api/me/", None, (401, 200, 200, 200, 200, 200, 200, 200, 200)),
    ("GET", "/api/me/notifications/", None, (401,) + (200,) * 8),
    ("PATCH", "/api/me/notifications/", {"run_finished": False}, (401,) + (200,) * 8),
    ("PATCH", "/api/me/notifications/", {"runs": False}, (401,) + (400,) * 8),
    # Teams: only members reach a team (404 for everyone else, as for no team at all).
    ("GET", "/api/teams/", None, (401, 200, 200, 200, 200, 200, 200, 200, 200)),
    ("POST", "/api/teams/", {"name": "team-new"}, (401, 201, 201, 201, 201, 201, 201, 201, 201)),
    ("POST", "/api/teams/", {"name": "team-B"}, (401, 409, 409, 409, 409, 409, 409, 409, 409)),
    ("POST", "/api/teams/", {}, (401, 400, 400, 400, 400, 400, 400, 400, 400)),
    ("GET", "/api/teams/{ta}/", None, (401, 200, 404, 404, 404, 404, 404, 404, 404)),
    ("GET", "/api/teams/888888/", None, (401, 404, 404, 404, 404, 404, 404, 404, 404)),
    ("POST", "/api/teams/{ta}/invitations/", None, (401, 201, 404, 404, 404, 404, 404, 404, 404)),
    (
        "POST",
        "/api/teams/{ta}/invitations/mail/",
        {"emails": ["newcomer@example.org"]},
        (401, 201, 404, 404, 404, 404, 404, 404, 404),
    ),
    (
        "POST",
        "/api/teams/{ta}/invitations/mail/",
        {"emails": ["newcomer@"]},
        (401, 400, 404, 404, 404, 404, 404, 404, 404),
    ),
    ("POST", "/api/teams/{ta}/leave/", None, (401, 204, 404, 404, 404, 404, 404, 404, 404)),
    # Team A's links, listed (never their keys) and revoked by any member; a member removed by
    # the team's creator (pa, who may not remove herself: she leaves).
    ("GET", "/api/teams/{ta}/invitations/", None, (401, 200, 404, 404, 404, 404, 404, 404, 404)),
    (
        "DELETE",
        "/api/teams/{ta}/invitations/{tainv}/",
        None,
        (401, 204, 404, 404, 404, 404, 404, 404, 404),
    ),
    (
        "DELETE",
        "/api/teams/{tb}/invitations/{tainv}/",
        None,
        (401, 404, 404, 404, 404, 404, 404, 404, 404),
    ),
    (
        "DELETE",
        "/api/teams/{ta}/members/{upa}/",
        None,
        (401, 409, 404, 404, 404, 404, 404, 404, 404),
    ),
    # Invitations to team A: pa is a member already; pb, a member of another team, may join; the
    # annotator of ``main`` may not (team A has runs on it).
    ("POST", "/api/teams/join/", {"key": "{valid}"}, (401, 409, 200, 409, 200, 200, 200, 200, 200)),
    ("POST", "/api/teams/join/", {"key": "{used}"}, (401, 410, 410, 410, 410, 410, 410, 410, 410)),
    (
        "POST",
        "/api/teams/join/",
        {"key": "{expired}"},
        (401, 410, 410, 410, 410, 410, 410, 410, 410),
    ),
    ("POST", "/api/teams/join/", {"key": "forged"}, (401, 404, 404, 404, 404, 404, 404, 404, 404)),
    ("GET", "/api/teams/join/", None, (401, 405, 405, 405, 405, 405, 405, 405, 405)),
    # A task's people and invitation links: its organizers only.
    ("GET", "/api/tasks/main/people/", None, (401, 403, 403, 403, 200, 403, 403, 200, 403)),
    ("GET", "/api/tasks/hidden-draft/people/", None, (401, 404, 404, 404, 200, 404, 404, 200, 404)),
    ("GET", "/api/tasks/main/invitations/", None, (401, 403, 403, 403, 200, 403, 403, 200, 403)),
    (
        "POST",
        "/api/tasks/main/invitations/",
        {"role": "annotator"},
        (401, 403, 403, 403, 201, 403, 403, 201, 403),
    ),
    (
        "POST",
        "/api/tasks/main/invitations/",
        {"role": "bogus"},
        (401, 403, 403, 403, 400, 403, 403, 400, 403),
    ),
    (
        "POST",
        "/api/tasks/main/invitations/mail/",
        {"role": "annotator", "emails": ["newcomer@example.org"]},
        (401, 403, 403, 403, 201, 403, 403, 201, 403),
    ),
    (
        "POST",
        "/api/tasks/main/invitations/mail/",
        {"role": "annotator", "emails": ["newcomer@", "other@example.org"]},
        (401, 403, 403, 403, 400, 403, 403, 400, 403),
    ),
    (
        "POST",
        "/api/tasks/hidden-draft/invitations/mail/",
        {"role": "organizer", "emails": ["newcomer@example.org"]},
        (401, 404, 404, 404, 201, 404, 404, 201, 404),
    ),
    (
        "DELETE",
        "/api/tasks/main/invitations/{tinv}/",
        None,
        (401, 403, 403, 403, 204, 403, 403, 204, 403),
    ),
    # Another task's organizers reach no invitation of ``main`` through their own task.
    (
        "DELETE",
        "/api/tasks/other/invitations/{tinv}/",
        None,
        (401, 403, 403, 403, 403, 404, 404, 404, 403),
    ),
    (
        "DELETE",
        "/api/tasks/main/annotators/{uann}/",
        None,
        (401, 403, 403, 403, 204, 403, 403, 204, 403),
    ),
    (
        "DELETE",
        "/api/tasks/main/annotators/{uorg}/",
        None,
        (401, 403, 403, 403, 404, 403, 403, 404, 403),
    ),
    (
        "DELETE",
        "/api/tasks/main/organizers/{uorg}/",
        None,
        (401, 403, 403, 403, 409, 403, 403, 409, 403),
    ),
    # Accepting a role: pa and pb are in teams with runs on ``main`` (may not annotate it), the
    # annotator annotates it already, org organizes it already.
    (
        "POST",
        "/api/invitations/accept/",
        {"key": "{tann}"},
        (401, 409, 409, 409, 200, 200, 200, 200, 200),
    ),
    (
        "POST",
        "/api/invitations/accept/",
        {"key": "{torg}"},
        (401, 200, 200, 200, 409, 200, 200, 200, 200),
    ),
    ("POST", "/api/invitations/accept/", {"key": "{tused}"}, (401,) + (410,) * 8),
    ("POST", "/api/invitations/accept/", {"key": "{texpired}"}, (401,) + (410,) * 8),
    ("POST", "/api/invitations/accept/", {"key": "{trevoked}"}, (401,) + (410,) * 8),
    ("POST", "/api/invitations/accept/", {"key": "forged"}, (401,) + (404,) * 8),
    ("GET", "/api/invitations/accept/", None, (401,) + (405,) * 8),
    ("GET", "/api/schema/", None, (200, 200, 200, 200, 200, 200, 200, 200, 200)),
    ("GET", "/api/docs/", None, (200, 200, 200, 200, 200, 200, 200, 200, 200)),
    ("GET", "/api/redoc/", None, (404, 404, 404, 404, 404, 404, 404, 404, 404)),
    ("GET", "/api/runs/x1/", None, (404, 404, 404, 404, 404, 404, 404, 404, 404)),
    ("POST", "/api/nothing/here/", None, (404, 404, 404, 404, 404, 404, 404, 404, 404)),
]
CELLS = matrix_cells(MATRIX, ROLES)


def forbidden_for(world, role: str) -> list[str]:
    """Text that must not appear in any response ``role`` gets."""
    if role in ("org", "admin"):
        return []
    never = [world.gold_key, world.reference_key, repr(world.held_value), *world.annotator_secrets]
    others = {"pa": ["B"], "pb": ["A"]}.get(role, ["A", "B"])
    for team in others:
        never += [world.secret_file[team], world.secret_description[team]]
    return never


def request(client, method: str, path: str, body):
    data = body() if callable(body) else body
    multipart = isinstance(data, dict) and any(hasattr(v, "read") for v in data.values())
    return getattr(client, method.lower())(path, data, format="multipart" if multipart else "json")


def text_of(response) -> str:
    """The response's text, its times of day without fractional seconds (a timestamp whose
    seconds spell a held score is no leak)."""
    if hasattr(response, "streaming_content"):
        return without_clock_times(b"".join(response.streaming_content).decode())
    return without_clock_times(response.content.decode())


@pytest.mark.parametrize(("method", "path", "body", "role", "expected"), CELLS)
def test_permission_matrix(api, lb_world, sent_jobs, method, path, body, role, expected):
    path = path.format(
        a=lb_world.runs["A"].pk,
        ta=lb_world.teams["A"].pk,
        tb=lb_world.teams["B"].pk,
        **lb_world.task_invitations,
        **lb_world.team_refs,
        **lb_world.files,
    )
    if isinstance(body, dict) and "key" in body:  # an invitation of the world, by its state
        body = {"key": body["key"].format(**lb_world.invitations, **lb_world.task_invitations)}
    client = api(None if role == "anonymous" else lb_world.users[role])
    response = request(client, method, path, body)
    text = text_of(response)
    assert response.status_code == expected, text[:500]
    if expected >= 400:
        assert set(response.json()["error"]) >= ERROR_KEYS
    for secret in forbidden_for(lb_world, role):
        assert secret not in text, f"{secret!r} leaked to {role}"


def test_matrix_covers_every_api_route():
    from django.urls import get_resolver

    resolver = get_resolver()
    api_patterns = {str(p.pattern) for p in resolver.url_patterns if str(p.pattern) == "api/"}
    assert api_patterns == {"api/"}
    routes = {
        str(p.pattern)
        for p in next(p for p in resolver.url_patterns if str(p.pattern) == "api/").url_patterns
    }
    covered = {
        path.split("?")[0]
        .removeprefix("/api/")
        .replace("hidden-draft", "main")
        .replace("other", "main")
        .replace("main", "<slug:slug>")
        .replace("{a}", "<int:run_id>")
        .replace("{ta}", "<int:team_id>")
        .replace("{tb}", "<int:team_id>")
        .replace("888888", "<int:team_id>")
        .replace("{tinv}", "<int:invitation_id>")
        .replace("{tainv}", "<int:invitation_id>")
        .replace("{upa}", "<int:user_id>")
        .replace("{uann}", "<int:user_id>")
        .replace("{uorg}", "<int:user_id>")
        .replace("{f}", "<int:file_id>")
        .replace("{up}", "<int:upload_id>")
        .replace("snapshots/1/", "snapshots/<int:version>/")
        .replace("snapshots/2/", "snapshots/<int:version>/")
        for _, path, _, _ in MATRIX
    }
    assert routes - {r"^[\s\S]*$"} <= covered, routes - covered


# -- what the cells show ----------------------------------------------------------------------
def test_everyone_sees_the_published_board_not_the_held_snapshot(api, lb_world):
    for role in ROLES:
        client = api(None if role == "anonymous" else lb_world.users[role])
        board = client.get("/api/tasks/main/board/").json()
        assert board["version"] == 1 and board["published"] is True
        assert {row["precision"]["value"] for row in board["rows"]} == {lb_world.published_value}
        listed = client.get("/api/tasks/main/snapshots/").json()["results"]
        expected = [(2, False), (1, True)] if role in ("org", "admin") else [(1, True)]
        assert [(s["version"], s["published"]) for s in listed] == expected


def test_participants_see_only_published_scores_in_run_history(api, lb_world):
    run = lb_world.runs["A"]
    mine = api(lb_world.users["pa"]).get(f"/api/runs/{run.pk}/history/").json()
    assert [e["value"] for e in mine["metrics"]["precision"]] == [lb_world.published_value]
    organizer = api(lb_world.users["org"]).get(f"/api/runs/{run.pk}/history/").json()
    assert [(e["snapshot"], e["published"], e["value"]) for e in organizer["metrics"]["f1"]] == [
        (1, True, lb_world.published_value),
        (2, False, lb_world.held_value),
    ]


def test_runs_list_shows_each_participant_only_their_teams_runs(api, lb_world):
    def names(role):
        rows = api(lb_world.users[role]).get("/api/tasks/main/runs/").json()["results"]
        return {row["name"] for row in rows}

    assert names("pa") == {"run-A"}
    assert names("pb") == {"run-B"}
    assert names("annotator") == names("other_org") == names("staff_org") == set()
    assert names("creator") == set()
    assert names("org") == names("admin") == {"run-A", "run-B"}


def test_a_staff_user_organizes_the_tasks_they_create_and_no_other(api, lb_world):
    staff = api(lb_world.users["staff_org"])
    created = staff.post("/api/tasks/", {"slug": "staff-made", "title": "S"}, format="json")
    assert created.status_code == 201 and "design_options" in created.json()
    assert [u.username for u in Task.objects.get(slug="staff-made").organizers.all()] == [
        "staff_org"
    ]
    assert (
        staff.patch("/api/tasks/staff-made/", {"title": "Mine"}, format="json").status_code == 200
    )
    assert "design_options" not in staff.get("/api/tasks/main/").json()
    assert staff.post("/api/tasks/main/publish/", {}, format="json").status_code == 403
    lb_world.task.refresh_from_db()
    assert lb_world.task.board_held is True


def test_a_task_creator_organizes_the_tasks_they_create_and_no_other(api, lb_world):
    creator = lb_world.users["creator"]
    assert not creator.is_staff and creator.has_perm("leaderboard.add_task")
    client = api(creator)
    assert "design_options" not in client.get("/api/tasks/main/").json()
    created = client.post("/api/tasks/", {"slug": "creator-made", "title": "C"}, format="json")
    assert created.status_code == 201 and "design_options" in created.json()
    made = Task.objects.get(slug="creator-made")
    assert list(made.organizers.all()) == [creator]
    assert (
        client.patch("/api/tasks/creator-made/", {"title": "Mine"}, format="json").status_code
        == 200
    )
    assert client.get("/api/tasks/creator-made/spend/").status_code == 200
    assert client.get("/api/tasks/main/spend/").status_code == 403
    assert client.get("/api/tasks/other/people/").status_code == 403
    assert client.post("/api/tasks/main/publish/", {}, format="json").status_code == 403
    lb_world.task.refresh_from_db()
    assert lb_world.task.board_held is True
    # The new task (a draft) is the creator's alone: another task's organizer does not see it.
    assert made.state == Task.State.DRAFT and "readiness" in created.json()
    other_org = api(lb_world.users["other_org"])
    assert other_org.get("/api/tasks/creator-made/spend/").status_code == 404


def test_exports_give_organizers_the_items_posteriors(api, lb_world):
    client = api(lb_world.users["org"])
    data = b"".join(client.get("/api/tasks/main/export/items/").streaming_content)
    import json

    items = json.loads(data)["items"]
    assert [(i["key"], i["posterior"], i["judgments"]) for i in items] == [
        (f"{lb_world.gold_key}-{i}", lb_world.posteriors[i], 1) for i in range(6)
    ]
    csv_text = b"".join(
        client.get("/api/tasks/main/export/items/?format=csv").streaming_content
    ).decode()
    lines = csv_text.splitlines()
    assert lines[0] == "key,posterior,judgments,says_correct,verified_at"
    assert lines[1].startswith(f"{lb_world.gold_key}-0,0.987654,1,1,")
    assert len(lines) == 7


def test_held_scores_reach_participants_once_published(api, lb_world):
    pa = api(lb_world.users["pa"])
    assert pa.get("/api/tasks/main/snapshots/2/").status_code == 404
    assert (
        api(lb_world.users["org"]).post("/api/tasks/main/publish/", {}, format="json").status_code
        == 200
    )
    board = pa.get("/api/tasks/main/board/").json()
    assert board["version"] == 2
    assert {row["f1"]["value"] for row in board["rows"]} == {lb_world.held_value}
    history = pa.get(f"/api/runs/{lb_world.runs['A'].pk}/history/").json()
    assert [e["value"] for e in history["metrics"]["recall"]] == [
        lb_world.published_value,
        lb_world.held_value,
    ]


def test_token_key_is_shown_once_and_works(api, lb_world):
    user = lb_world.users["pa"]
    created = api(user).post("/api/token/").json()
    assert ApiToken.objects.get(user=user).digest == ApiToken.digest_of(created["key"])
    status = api(user).get("/api/token/").json()
    assert status["exists"] is True and "key" not in status
    assert created["key"] not in api(user).get("/api/token/").content.decode()
    assert Run.objects.filter(team=lb_world.teams["A"]).count() == 1


QUALITY_CONTROL = ("annotator_daily_cap", "gold_rate", "gold_min_accuracy", "gold_min_answers")


def test_the_annotators_quality_control_is_read_and_set_by_organizers_only(api, lb_world):
    """How often gold items are served and when an annotator is paused: the organizers' to read
    and change through the API (as on the Settings section), nobody else's to see."""
    organizer = api(lb_world.users["org"])
    assert set(QUALITY_CONTROL) <= set(organizer.get("/api/tasks/main/").json())
    for role in ("pa", "pb", "annotator", "other_org", "staff_org", "creator"):
        seen = api(lb_world.users[role]).get("/api/tasks/main/").json()
        assert not set(QUALITY_CONTROL) & set(seen), role
    changed = organizer.patch(
        "/api/tasks/main/", {"gold_rate": 0.2, "gold_min_answers": 5}, format="json"
    )
    assert changed.status_code == 200, changed.content[:300]
    assert (changed.json()["gold_rate"], changed.json()["gold_min_answers"]) == (0.2, 5)
    refused = organizer.patch("/api/tasks/main/", {"gold_rate": 1.5}, format="json")
    assert refused.status_code == 400 and "gold_rate" in refused.json()["error"]["message"]
    lb_world.task.refresh_from_db()
    assert lb_world.task.gold_rate == 0.2
    for role in ("pa", "annotator", "staff_org"):
        refused = api(lb_world.users[role]).patch(
            "/api/tasks/main/", {"gold_rate": 0}, format="json"
        )
        assert refused.status_code in (403, 404), role
    lb_world.task.refresh_from_db()
    assert lb_world.task.gold_rate == 0.2
