"""The world of the permission matrices (REST API, pages, annotation API): task ``main`` with
two teams, an annotator, organizers of it and of another task, an admin, gold items, a reference
sample, snapshot 1 published and snapshot 2 held; ``build_page_world`` adds what the pages and
the annotation API need (item payloads, open verification requests)."""

from __future__ import annotations

import io
from datetime import timedelta

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from annotation.services import request_verification
from evaluation.core.measures import OPEN_MEASURES
from evaluation.management.commands.demo import ORGANIZER_PERMISSIONS, VIEWABLE_APPS
from leaderboard.models import Item, OrganizerUpload, key_digest

from worlds import stored_snapshot

# -- the matrices' cells -----------------------------------------------------------------------
# Asked in every row by ``make test-fast`` too: a participant of the other team, an organizer of
# another task and a staff user organizing another task (staff status grants no organizer rights),
# the roles a leak or a missing check reaches first.
ALWAYS_ASKED = ("pb", "other_org", "staff_org")


def matrix_cells(matrix, roles) -> list:
    """A permission matrix's cells as pytest parameters ``(method, path, body, role, expected)``,
    one per row and role, with ids ``"METHOD path role"``.

    ``make test`` asks every cell. ``make test-fast`` asks a representative part, about half of the
    cells (the others are marked ``slow``): in every row, the first role (in ``roles`` order) with
    each outcome the row expects, and the roles of ``ALWAYS_ASKED``. So every row and every
    outcome is asked on every run, and each cell fails alone when its rule breaks.
    """
    cells = []
    for method, path, body, expected in matrix:
        outcomes = set()
        for role, outcome in zip(roles, expected, strict=True):
            representative = outcome not in outcomes or role in ALWAYS_ASKED
            outcomes.add(outcome)
            cells.append(
                pytest.param(
                    method,
                    path,
                    body,
                    role,
                    outcome,
                    id=f"{method} {path} {role}",
                    marks=() if representative else pytest.mark.slow,
                )
            )
    return cells


# -- a task with two teams, an annotator, two organizers, published and held snapshots ----------
# Markers that must never reach a participant or the public (checked in the responses' text).
HELD_VALUE = 0.31415926
GOLD_KEY = "GOLDKEY"
REFERENCE_KEY = "REFSECRET"
SECRET_FILE = {"A": "SECRETFILE-A.tsv", "B": "SECRETFILE-B.tsv"}
SECRET_DESCRIPTION = {"A": "A-description-secret", "B": "B-description-secret"}
PUBLISHED_VALUE = 0.6180339
# The content of ``main``'s data file.
DATA_FILE_BODY = b"key\tpayload\nk1\tsomething\n"
# The items' posteriors as the latest estimation stored them (organizers' export only).
POSTERIORS = (0.987654, 0.012345, 0.991, 0.004, 0.975, 0.5)
# Their judgments, by an annotator who is none of the roles, with a note; and that annotator's
# estimated error rates: none of it may reach a participant, an annotator or the public.
ANSWERS = ("correct", "incorrect", "correct", "incorrect", "correct", "correct")
JUDGE = "annotator-two"
JUDGE_NOTE = "JUDGE-NOTE-secret"
JUDGE_RATES = {
    "sensitivity": [0.913579, 0.824681, 0.957913],
    "specificity": [0.864213, 0.753197, 0.931975],
}


def _estimates(run, value):
    return {
        m: {
            "value": value,
            "low": max(0.0, value - 0.05),
            "high": min(1.0, value + 0.05),
            "labels_used": 40,
            "method": "wilson",
        }
        for m in OPEN_MEASURES
    }


def build_world(password: str = "pw-secret-123"):
    """Task ``main`` (open) with teams A and B (one run each), an annotator, the task's
    organizer, two organizers of task ``other`` (one of them staff, with the demo organizer's
    admin permissions), a task creator (``leaderboard.add_task``, not staff, in no other role), a
    draft task of ``main``'s organizer, an admin; verified (gold) items,
    a reference sample, snapshot 1 published and snapshot 2 held (with the distinctive
    ``HELD_VALUE``); invitations to team A (``invitations``: the keys of a valid, a used and an
    expired one); invitations to roles on ``main`` (``task_invitations``: the keys of a valid
    annotator and a valid organizer one, a used, an expired and a revoked one; ``tinv`` the id
    of the valid annotator one; ``uann``, ``uorg`` the ids of its annotator and organizer);
    team A's request to take part in ``main`` (not approved)."""
    from types import SimpleNamespace

    from django.utils import timezone

    from annotation.models import Judgment, VerificationRequest
    from leaderboard.models import (
        Estimate,
        Item,
        LabelModelFit,
        ReferenceItem,
        Run,
        Task,
        TeamInvitation,
    )
    from leaderboard.services.board import hold_board
    from leaderboard.services.task_files import add_task_file
    from leaderboard.services.tasks import create_task
    from leaderboard.services.teams import create_team, request_approval

    from pipeline_support import open_unchecked

    users = {}
    for name, staff, superuser in (
        ("pa", False, False),
        ("pb", False, False),
        ("annotator", False, False),
        ("org", False, False),
        ("other_org", False, False),
        ("staff_org", True, False),
        ("admin", True, True),
        ("creator", False, False),
    ):
        users[name] = get_user_model().objects.create_user(
            name, password=password, is_staff=staff, is_superuser=superuser
        )
    # The demo's organizer: staff with the admin permissions an organizer needs.
    users["staff_org"].user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label__in=VIEWABLE_APPS, codename__startswith="view_"
        ),
        *[
            Permission.objects.get(content_type__app_label=app, codename=code)
            for app, code in ORGANIZER_PERMISSIONS
        ],
    )
    # The task creator: the site role an admin grants once (``selectors.can_create_tasks``), not
    # staff, organizing, annotating nothing and on no team.
    users["creator"].user_permissions.add(
        Permission.objects.get(content_type__app_label="leaderboard", codename="add_task")
    )
    task = open_unchecked(
        create_task(
            slug="main",
            title="Main task",
            organizers=[users["org"]],
            label_budget=500,
            max_runs_per_team=5,
            max_runs_per_team_per_day=3,
        )
    )
    judge = get_user_model().objects.create_user(JUDGE)
    task.annotators.add(users["annotator"], judge)
    open_unchecked(
        create_task(
            slug="other", title="Other task", organizers=[users["other_org"], users["staff_org"]]
        )
    )
    Task.objects.create(
        slug="hidden-draft", title="Draft task DRAFTTITLE", state=Task.State.DRAFT
    ).organizers.add(users["org"])
    teams = {
        "A": create_team(name="team-A", members=[users["pa"]]),
        "B": create_team(name="team-B", members=[users["pb"]]),
    }
    now = timezone.now()
    judged_at = now - timedelta(days=2)
    items = Item.objects.bulk_create(
        [
            Item(
                task=task,
                key=f"{GOLD_KEY}-{i}",
                index=i,
                verified_at=judged_at + timedelta(seconds=i),
            )
            for i in range(6)
        ]
        + [Item(task=task, key=f"{REFERENCE_KEY}-{i}", index=6 + i) for i in range(3)]
    )
    ReferenceItem.objects.bulk_create(
        [ReferenceItem(task=task, item=item, group="doc") for item in items[6:]]
    )
    task.n_items, task.labels_version, task.reference_version = 9, 6, 1
    task.save(update_fields=["n_items", "labels_version", "reference_version"])
    # The verified items were drawn and judged once each by the annotator (judgment set v6).
    requests = VerificationRequest.objects.bulk_create(
        [
            VerificationRequest(
                task=task,
                item=item,
                state=VerificationRequest.State.RESOLVED,
                judgments_required=1,
                judgments_counted=1,
                resolved_at=judged_at,
            )
            for item in items[:6]
        ]
    )
    Judgment.objects.bulk_create(
        [
            Judgment(
                request=request,
                annotator=judge,
                answer=answer,
                justification=JUDGE_NOTE,
                counted=True,
                seq=i + 1,
                created_at=judged_at + timedelta(seconds=i),
            )
            for i, (request, answer) in enumerate(zip(requests, ANSWERS, strict=True))
        ]
    )
    runs = {}
    for name, team in teams.items():
        runs[name] = Run.objects.create(
            task=task,
            team=team,
            submitted_by=users[f"p{name.lower()}"],
            name=f"run-{name}",
            description=SECRET_DESCRIPTION[name],
            file_name=SECRET_FILE[name],
            state=Run.State.SCORED,
            n_predictions=5,
            n_requested=4,
            n_verified=4,
        )
    snapshots = []
    for version, value, published in ((1, PUBLISHED_VALUE, True), (2, HELD_VALUE, False)):
        snapshot = stored_snapshot(
            task,
            [
                {
                    "run": run.pk,
                    "name": run.name,
                    "team": run.team.name,
                    "state": run.state,
                    "provisional": False,
                    "n_predictions": 5,
                    "n_requested": 4,
                    "n_verified": 4,
                    **_estimates(run, value),
                }
                for run in runs.values()
            ],
            version=version,
            published=published,
            engine_version="test-1",
            labels_version=6,
            reference_version=1,
            n_labels=6,
            n_reference=3,
            published_at=now if published else None,
            details={
                "label_model": {
                    "method": "dawid-skene-2class/em-map/louis",
                    "judgments": 6,
                    "items": 6,
                    "annotators": 1,
                    "converged": True,
                }
            },
        )
        Estimate.objects.bulk_create(
            [
                Estimate(
                    snapshot=snapshot,
                    run=run,
                    metric=m,
                    value=value,
                    low=value - 0.05,
                    high=value + 0.05,
                    level=0.95,
                    labels_used=40,
                    method="wilson",
                )
                for run in runs.values()
                for m in OPEN_MEASURES
            ]
        )
        snapshots.append(snapshot)
    LabelModelFit.objects.create(
        task=task,
        snapshot=snapshots[-1],
        indices=np.arange(6, dtype="<i8").tobytes(),
        values=np.array(POSTERIORS, dtype="<f8").tobytes(),
        judgments=np.ones(6, dtype="<i4").tobytes(),
        says_correct=np.array([a == "correct" for a in ANSWERS], dtype="<i4").tobytes(),
        annotators=[
            {
                "annotator": judge.pk,
                **JUDGE_RATES,
                "judgments": 6,
                "gold_judgments": 0,
                "weight": 1.2345,
            }
        ],
    )
    hold_board(task=task)
    request_approval(task=task, team=teams["A"], by=users["pa"])  # team B asked nothing
    # A data file of ``main`` (no terms: any signed-in person may download it).
    data_file = add_task_file(
        task=task, user=users["org"], upload=io.BytesIO(DATA_FILE_BODY), file_name="data.tsv"
    )
    # A gold file of ``main`` an organizer uploaded, loaded by the worker ({up}).
    gold_upload = OrganizerUpload.objects.create(
        task=task,
        kind=OrganizerUpload.Kind.GOLD,
        state=OrganizerUpload.State.LOADED,
        uploaded_by=users["org"],
        file_name="gold.tsv",
        counts={"created": 1, "updated": 0, "unchanged": 0},
        message="loaded: 1 created, 0 updated, 0 unchanged",
    )
    invitations = _invitations(teams["A"], users["pa"], now)
    return SimpleNamespace(
        files={"f": data_file.pk, "up": gold_upload.pk},
        invitations=invitations,
        # Team A's valid invitation link and its creator, pa: the ids its pages and API take.
        team_refs={
            "tainv": TeamInvitation.objects.get(digest=key_digest(invitations["valid"])).pk,
            "upa": users["pa"].pk,
        },
        task_invitations=_task_invitations(task, users, now),
        users=users,
        task=task,
        teams=teams,
        runs=runs,
        snapshots=snapshots,
        password=password,
        held_value=HELD_VALUE,
        published_value=PUBLISHED_VALUE,
        gold_key=GOLD_KEY,
        reference_key=REFERENCE_KEY,
        secret_file=SECRET_FILE,
        posteriors=POSTERIORS,
        judge=judge,
        annotator_secrets=[JUDGE, JUDGE_NOTE, "0.987654", "0.913579", "0.864213"],
        secret_description=SECRET_DESCRIPTION,
    )


def _invitations(team, member, now) -> dict[str, str]:
    """Keys of invitations to ``team``: one that works, one used, one expired."""
    from leaderboard.models import TeamInvitation
    from leaderboard.services.teams import invite_to_team

    keys = {
        "valid": invite_to_team(team=team, by=member).key,
        "used": invite_to_team(team=team, by=member).key,
        "expired": invite_to_team(team=team, by=member, now=now - timedelta(days=30)).key,
    }
    TeamInvitation.objects.filter(digest=key_digest(keys["used"])).update(used_at=now)
    return keys


def _task_invitations(task, users, now) -> dict[str, object]:
    """Keys of invitations to roles on ``task`` (see ``build_world``), ids of one and of
    people."""
    from leaderboard.models import TaskInvitation
    from leaderboard.services.task_roles import invite_to_task

    by = users["org"]
    annotator = invite_to_task(task=task, role="annotator", by=by)
    keys: dict[str, object] = {
        "tann": annotator.key,
        "torg": invite_to_task(task=task, role="organizer", by=by).key,
        "tused": invite_to_task(task=task, role="annotator", by=by).key,
        "texpired": invite_to_task(
            task=task, role="annotator", by=by, now=now - timedelta(days=30)
        ).key,
        "trevoked": invite_to_task(task=task, role="annotator", by=by).key,
    }
    TaskInvitation.objects.filter(digest=key_digest(str(keys["tused"]))).update(used_at=now)
    TaskInvitation.objects.filter(digest=key_digest(str(keys["trevoked"]))).update(revoked_at=now)
    keys |= {"tinv": annotator.invitation.pk, "uann": users["annotator"].pk, "uorg": by.pk}
    return keys


def build_page_world():
    world = build_world()
    task = world.task
    # Items for annotation: a payload an annotator sees, open verification requests.
    items = list(Item.objects.filter(task=task, verified_at__isnull=True))
    for item in items:
        item.payload = {
            "left": {"title": f"Left {item.index}"},
            "right": {"title": f"Right {item.index}"},
        }
        item.save(update_fields=["payload"])
    request_verification(task=task, item_ids=[item.pk for item in items])
    return world
