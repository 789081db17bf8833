"""The one visibility rule: ``task_for`` for every role and kind of task, and the one board order.

``task_for(slug, user, role=...)`` is every task-by-slug lookup of the pages, both APIs and the
annotation app; each cell below is what it returns (the task), or raises: 404
(``TaskNotFound``: unknown and invisible alike) or 403 (``TaskForbidden``).
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import Http404

from leaderboard.models import Task
from leaderboard.selectors import TaskForbidden, TaskNotFound, board_order, task_for

from pipeline_support import make_task, make_team

pytestmark = pytest.mark.django_db

USERS = ("anonymous", "stranger", "participant", "annotator", "organizer", "admin")
# Tasks: open with a published board, open with a held board, closed, a draft, no such task.
TASKS = ("published", "held", "closed", "draft", "nope")
OK, NOT_FOUND, FORBIDDEN = "task", 404, 403

# role -> task -> outcome per user, in USERS order.
#              anon       stranger   particip.  annotator  organizer  admin
EXPECTED = {
    "viewer": {
        "published": (OK, OK, OK, OK, OK, OK),
        "held": (OK, OK, OK, OK, OK, OK),
        "closed": (OK, OK, OK, OK, OK, OK),
        "draft": (NOT_FOUND, NOT_FOUND, NOT_FOUND, NOT_FOUND, OK, OK),
        "nope": (NOT_FOUND,) * 6,
    },
    "organizer": {
        "published": (FORBIDDEN, FORBIDDEN, FORBIDDEN, FORBIDDEN, OK, OK),
        "held": (FORBIDDEN, FORBIDDEN, FORBIDDEN, FORBIDDEN, OK, OK),
        "closed": (FORBIDDEN, FORBIDDEN, FORBIDDEN, FORBIDDEN, OK, OK),
        "draft": (NOT_FOUND, NOT_FOUND, NOT_FOUND, NOT_FOUND, OK, OK),
        "nope": (NOT_FOUND,) * 6,
    },
    "annotator": {
        "published": (FORBIDDEN, FORBIDDEN, FORBIDDEN, OK, FORBIDDEN, FORBIDDEN),
        "held": (FORBIDDEN, FORBIDDEN, FORBIDDEN, OK, FORBIDDEN, FORBIDDEN),
        "closed": (FORBIDDEN, FORBIDDEN, FORBIDDEN, OK, FORBIDDEN, FORBIDDEN),
        "draft": (NOT_FOUND, NOT_FOUND, NOT_FOUND, OK, FORBIDDEN, FORBIDDEN),
        "nope": (NOT_FOUND,) * 6,
    },
}
CELLS = [
    pytest.param(role, task, user, outcomes[USERS.index(user)], id=f"{role}-{task}-{user}")
    for role, by_task in EXPECTED.items()
    for task, outcomes in by_task.items()
    for user in USERS
]


@pytest.fixture
def world(db):
    User = get_user_model()
    users = {
        name: User.objects.create_user(name, is_staff=name == "admin", is_superuser=name == "admin")
        for name in USERS
        if name != "anonymous"
    }
    users["anonymous"] = AnonymousUser()
    make_team("team", users["participant"])
    states = {
        "published": Task.State.OPEN,
        "held": Task.State.OPEN,
        "closed": Task.State.CLOSED,
        "draft": Task.State.DRAFT,
    }
    for slug, state in states.items():
        task = make_task(slug=slug, title=slug, state=state, board_held=slug == "held")
        task.organizers.add(users["organizer"])
        task.annotators.add(users["annotator"])
    return users


@pytest.mark.parametrize(("role", "slug", "user", "expected"), CELLS)
def test_task_for(world, role, slug, user, expected):
    if expected == OK:
        assert task_for(slug, world[user], role=role).slug == slug
        return
    raised = TaskNotFound if expected == NOT_FOUND else TaskForbidden
    with pytest.raises(raised) as refused:
        task_for(slug, world[user], role=role)
    if expected == NOT_FOUND:
        assert str(refused.value) == f"there is no task {slug!r}"
    else:
        assert refused.value.task.slug == slug and refused.value.role == role


def test_role_defaults_to_viewer_and_outcomes_are_django_404_and_403(world):
    assert task_for("published", world["stranger"]).slug == "published"
    assert issubclass(TaskNotFound, Http404) and issubclass(TaskForbidden, PermissionDenied)
    with pytest.raises(TaskForbidden, match="only the organizers of task 'held' may do this"):
        task_for("held", world["stranger"], role="organizer")
    with pytest.raises(TaskForbidden, match="you are not an annotator of this task"):
        task_for("held", world["organizer"], role="annotator")
    with pytest.raises(KeyError):
        task_for("published", world["stranger"], role="owner")


# -- the board order -----------------------------------------------------------------------
def row(run, name, value):
    return {"run": run, "name": name, "f1": {"value": value}}


def test_board_order_breaks_ties_by_name_then_run_id_and_puts_missing_values_last():
    rows = [
        row(7, "zeta", 0.5),
        row(3, "alpha", None),
        row(5, "beta", 0.5),
        row(2, "beta", 0.5),
        row(9, "omega", 0.9),
        row(1, "alpha", 0.1),
        {"run": 4, "name": "odd", "f1": "x"},
    ]
    names = [(r["name"], r["run"]) for r in board_order(rows, "f1")]
    assert names == [
        ("omega", 9),
        ("beta", 2),
        ("beta", 5),
        ("zeta", 7),
        ("alpha", 1),
        ("alpha", 3),
        ("odd", 4),
    ]
    ascending = [(r["name"], r["run"]) for r in board_order(rows, "f1", descending=False)]
    assert ascending == [
        ("alpha", 1),
        ("beta", 2),
        ("beta", 5),
        ("zeta", 7),
        ("omega", 9),
        ("alpha", 3),
        ("odd", 4),
    ]
    assert board_order(list(reversed(rows)), "f1") == board_order(rows, "f1")


# -- who may create tasks: one rule, a site role or (by setting) anyone signed in ----------------
@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        # anonymous, plain user, holder of leaderboard.add_task, staff, superuser
        ("role", (False, False, True, True, True)),
        ("anyone", (False, True, True, True, True)),
    ],
)
def test_who_may_create_tasks(settings, mode, expected):
    from django.contrib.auth.models import Permission

    from leaderboard.selectors import can_create_tasks

    settings.TASK_CREATION = mode
    User = get_user_model()
    granted = User.objects.create_user("granted")
    granted.user_permissions.add(Permission.objects.get(codename="add_task"))
    users = (
        AnonymousUser(),
        User.objects.create_user("plain"),
        User.objects.get(pk=granted.pk),  # a fresh object: permissions are cached per instance
        User.objects.create_user("staff", is_staff=True),
        User.objects.create_superuser("root"),
    )
    assert tuple(can_create_tasks(user) for user in users) == expected


def test_task_creation_setting_is_read_from_the_environment():
    from config.settings import task_creation_from_env

    assert task_creation_from_env(None) == "role"
    assert task_creation_from_env(" Anyone ") == "anyone"
    with pytest.raises(ValueError, match="TASK_CREATION must be one of role, anyone"):
        task_creation_from_env("everybody")


# -- the reference sample's size: items, and documents (an ungrouped item is one of its own) ----
def test_reference_size_counts_items_and_documents_and_says_when_it_is_enough():
    from leaderboard.models import ReferenceItem
    from leaderboard.selectors import REFERENCE_MIN_DOCUMENTS, REFERENCE_MIN_ITEMS, reference_size

    from pipeline_support import add_items

    task = make_task()
    empty = reference_size(task)
    assert (empty.items, empty.documents, empty.empty, empty.enough) == (0, 0, True, False)

    items = add_items(task, REFERENCE_MIN_ITEMS + 2)
    grouped = [f"doc{i % 4}" for i in range(REFERENCE_MIN_ITEMS)]
    ReferenceItem.objects.bulk_create(
        [
            ReferenceItem(task=task, item=it, group=g)
            for it, g in zip(items[:REFERENCE_MIN_ITEMS], grouped, strict=True)
        ]
        + [ReferenceItem(task=task, item=it, group="") for it in items[REFERENCE_MIN_ITEMS:]]
    )
    size = reference_size(task)
    # Four named documents and two items of their own.
    assert (size.items, size.documents) == (REFERENCE_MIN_ITEMS + 2, 6)
    assert not size.enough and not size.empty  # enough items, too few documents

    ReferenceItem.objects.filter(task=task).update(group="")
    size = reference_size(task)
    assert size.documents == REFERENCE_MIN_ITEMS + 2 >= REFERENCE_MIN_DOCUMENTS
    assert size.enough
