"""Every way of setting a task's settings accepts and refuses the same ones, by the same field
and with the same message: the service (``create_task`` / ``update_task``), the organizer pages
(new task, Settings and Phases sections), the API (``POST /api/tasks/``, ``PATCH``), the
admin's task form and ``manage.py create_task``. One table of cases; each case goes through
every path that offers all of its settings (the new-task page offers no state, say), when
creating a task and when changing a draft."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command
from django.forms.models import model_to_dict
from django.test import RequestFactory
from rest_framework.test import APIClient

from leaderboard import page_text
from leaderboard.admin.tasks import TaskAdmin
from leaderboard.api.task_serializers import TaskWriteSerializer
from leaderboard.forms import PHASE_FIELDS, SETTINGS_PAGE_FIELDS, TaskCreateForm
from leaderboard.models import Task
from leaderboard.services.tasks import TaskSettingsError, create_task, update_task

pytestmark = pytest.mark.django_db

OPEN, POOL = Task.Kind.OPEN, Task.Kind.CLOSED_POOL
LATER = "2026-12-08 10:00"
EARLIER = "2026-12-07 10:00"


@dataclass(frozen=True)
class Case:
    """Settings sent on top of a valid task of ``kind``; ``refused``: the fields refused (none:
    accepted). ``creating``/``changing``: whether the case is sent when creating a task, when
    changing a draft, or both. ``own_words``: a value outside a list of choices, which each
    framework (model, form, serializer) refuses in its own words before any validator runs:
    the same field is refused, the message differs."""

    name: str
    kind: str
    settings: dict[str, Any]
    refused: frozenset[str] = field(default_factory=frozenset)
    creating: bool = True
    changing: bool = True
    own_words: bool = False


def case(
    name, task_kind, refused=(), *, creating=True, changing=True, own_words=False, **settings
) -> Case:
    return Case(name, task_kind, settings, frozenset(refused), creating, changing, own_words)


CASES = [
    # The four the reviewer reproduced.
    case("a closed pool with the adaptive design", POOL, design="adaptive"),
    case(
        "a closed pool with design options",
        POOL,
        design="adaptive",
        design_options={"round_size": 20, "defensive_share": 0.2},
    ),
    case("mcc on an open task", OPEN, ["measures"], measures=["mcc"]),
    case(
        "an invalid email domain",
        OPEN,
        ["allowed_email_domains"],
        allowed_email_domains="bad!domain",
    ),
    case("the reserved slug new", OPEN, ["slug"], slug="new"),
    # Every setting's boundary.
    case("a wide target", OPEN, target_half_width=0.4),
    # The model allows 0.5, the engine only less.
    case("a target of one half", OPEN, ["design"], target_half_width=0.5),
    case("a target too wide", OPEN, ["target_half_width"], target_half_width=0.6),
    case("the narrowest target", OPEN, target_half_width=0.001),
    case("a target too narrow", OPEN, ["target_half_width"], target_half_width=0.0005),
    case("the lowest confidence", OPEN, confidence=0.5),
    case("a confidence too high", OPEN, ["confidence"], confidence=0.9999),
    case("nine judgments per item", OPEN, judgments_per_item=9),
    case("ten judgments per item", OPEN, ["judgments_per_item"], judgments_per_item=10),
    case("no judgments per item", OPEN, ["judgments_per_item"], judgments_per_item=0),
    case("a label budget", OPEN, label_budget=500),
    case("the highest gold rate", OPEN, gold_rate=0.5),
    case("a gold rate too high", OPEN, ["gold_rate"], gold_rate=0.51),
    case("a gold accuracy above one", OPEN, ["gold_min_accuracy"], gold_min_accuracy=1.5),
    case("a daily cap", OPEN, annotator_daily_cap=40),
    case("runs per team", OPEN, max_runs_per_team=3, max_runs_per_team_per_day=1),
    case("an f-beta of ten", POOL, measures=["fbeta"], f_beta=10.0),
    case("an f-beta too large", POOL, ["f_beta"], measures=["fbeta"], f_beta=11.0),
    case("a display template that is not JSON", OPEN, ["display_template"], display_template="{"),
    case(
        "an overview too long",
        OPEN,
        ["description"],
        description="x" * (page_text.MAX_CHARS + 1),
    ),
    # Each kind's designs and their options.
    case("an open task's default design", OPEN, design="default"),
    case(
        "an open task's design options",
        OPEN,
        design="default",
        design_options={"max_strata": 2, "min_batch": 8},
    ),
    case("an unknown design", OPEN, ["design"], design="nonsense"),
    case("a simulation baseline", OPEN, ["design"], design="published"),
    case("a pool design on an open task", OPEN, ["design"], design="adaptive"),
    case("an unknown design option", OPEN, ["design_options"], design_options={"bogus": 1}),
    case("a design option out of range", OPEN, ["design_options"], design_options={"growth": 1}),
    case("design options that are not an object", OPEN, ["design_options"], design_options=[1]),
    case("a closed pool's default design", POOL, design="default"),
    case("an open design on a closed pool", POOL, ["design"], design="published"),
    case("a passive closed pool", POOL, ["design"], design="passive"),
    case("an unknown pool option", POOL, ["design_options"], design_options={"bogus": 1}),
    case(
        "a pool option out of range",
        POOL,
        ["design_options"],
        design_options={"defensive_share": 1.5},
    ),
    # Measures per kind.
    case("an open task's measures", OPEN, measures=["precision", "f1"]),
    case("a closed pool's measures", POOL, measures=["mcc", "accuracy", "balanced_accuracy"]),
    case("an unknown measure", POOL, ["measures"], own_words=True, measures=["speed"]),
    # Phases.
    case("a submission window", OPEN, submissions_open_at=EARLIER, submissions_close_at=LATER),
    case(
        "a window that closes before it opens",
        OPEN,
        ["submissions_close_at"],
        submissions_open_at=LATER,
        submissions_close_at=EARLIER,
    ),
    case(
        "a reveal before the close",
        OPEN,
        ["reveal_at"],
        submissions_close_at=LATER,
        reveal_at=EARLIER,
    ),
    case("late runs refused", OPEN, submissions_close_at=LATER, accept_late_runs=False),
    # Email domains.
    case("allowed domains", OPEN, allowed_email_domains="example.org, uni.example.edu"),
    case("a blocked domain", OPEN, blocked_email_domains="mail.example"),
    case("a blocked address", OPEN, ["blocked_email_domains"], blocked_email_domains="a@b.org"),
    # Slugs.
    case("a slug with spaces", OPEN, ["slug"], slug="two words"),
    case("a hyphenated slug", OPEN, slug="new-task-{path}"),
    # Kinds.
    case("an unknown kind", OPEN, ["kind"], own_words=True, kind="sometimes"),
]

PATHS = ("service", "page", "api", "admin", "command")
# The settings ``manage.py create_task`` takes, by its options' names.
COMMAND_OPTIONS = {
    "description": "--description",
    "question": "--question",
    "target_half_width": "--target-half-width",
    "confidence": "--confidence",
    "label_budget": "--budget",
    "judgments_per_item": "--judgments-per-item",
    "kind": "--kind",
    "measures": "--measures",
    "f_beta": "--f-beta",
    "max_runs_per_team": "--max-runs-per-team",
    "max_runs_per_team_per_day": "--max-runs-per-team-per-day",
}


def organizer():
    user = get_user_model().objects.create_user("org", is_staff=True, is_superuser=True)
    user.user_permissions.add(Permission.objects.get(codename="add_task"))
    return user


def _when(text: str) -> datetime:
    return datetime.fromisoformat(f"{text}+00:00")


def _service_value(name: str, value: Any) -> Any:
    return _when(value) if name.endswith("_at") and isinstance(value, str) else value


def _slugged(path: str, settings: dict) -> dict:
    return {"slug": f"made-by-{path}", **_for(path, settings)}


def _for(path: str, settings: dict) -> dict:
    """The settings as ``path`` sends them (a slug accepted is the path's own)."""
    if isinstance(settings.get("slug"), str):
        return {**settings, "slug": settings["slug"].format(path=path)}
    return settings


def _said(messages) -> str:
    """Messages with Django's curly quotes as DRF's straight ones."""
    return " ".join(messages).replace("\u201c", '"').replace("\u201d", '"')


# --- how each path is driven: each returns {field: [messages]} (empty: accepted) ---------------


def _service(user, case: Case, task: Task | None) -> dict[str, list[str]]:
    settings = {name: _service_value(name, v) for name, v in _for("service", case.settings).items()}
    try:
        if task is None:
            settings = _slugged("service", {"kind": case.kind, **settings})
            create_task(title="Made", organizers=[user], **settings)
        else:
            update_task(task=task, **settings)
    except TaskSettingsError as exc:
        return exc.field_errors
    return {}


def _api(user, case: Case, task: Task | None) -> dict[str, list[str]] | None:
    """The API (None: it does not offer all of the case's settings)."""
    client = APIClient()
    client.force_authenticate(user)
    if not set(case.settings) <= set(TaskWriteSerializer().fields):
        return None
    settings = {name: _api_value(v) for name, v in _for("api", case.settings).items()}
    if task is None:
        body = _slugged("api", {"title": "Made", "kind": case.kind, **settings})
        response = client.post("/api/tasks/", body, format="json")
    else:
        response = client.patch(f"/api/tasks/{task.slug}/", settings, format="json")
    if response.status_code in (200, 201):
        return {}
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    if error.get("fields"):
        return error["fields"]
    refused: dict[str, list[str]] = {}
    for problem in error["problems"]:  # DRF's own checks: "name: message"
        name, _, message = problem["message"].partition(": ")
        refused.setdefault(name, []).append(message)
    return refused


def _api_value(value: Any) -> Any:
    if isinstance(value, str) and len(value) == 16 and value[4] == "-" and value[10] == " ":
        return f"{value.replace(' ', 'T')}:00Z"
    return value


def _form_value(value: Any) -> Any:
    if isinstance(value, bool):
        return "on" if value else ""
    if isinstance(value, dict | list):
        return json.dumps(value)
    if value is None:
        return ""
    if isinstance(value, datetime):
        return f"{value:%Y-%m-%d %H:%M}"
    return value


def _form_data(values: dict[str, Any]) -> dict[str, Any]:
    data = {name: _form_value(value) for name, value in values.items()}
    return {name: value for name, value in data.items() if value != "" or name.endswith("_at")}


def _page(client, user, case: Case, task: Task | None) -> dict[str, list[str]] | None:
    """The organizer pages (None: no page offers all of the case's settings); a refusal of a
    setting the form does not show is above the form, as ``*``."""
    client.force_login(user)
    if task is None:
        offered = set(TaskCreateForm().fields)
        if not set(case.settings) <= offered:
            return None
        values = {
            **model_to_dict(Task(kind=case.kind), fields=offered),
            **_slugged("page", {"title": "Made", **case.settings}),
        }
        data = _form_data(values)
        if "measures" in case.settings:
            data["measures"] = case.settings["measures"]
        else:
            data.pop("measures", None)
        response = client.post("/tasks/new/", data)
        return _page_errors(response, 302)
    for section, names in (("settings", SETTINGS_PAGE_FIELDS), ("phases", PHASE_FIELDS)):
        if set(case.settings) <= set(names):
            data = _form_data({**model_to_dict(task, fields=names), **_for("page", case.settings)})
            response = client.post(f"/tasks/{task.slug}/organize/{section}/", data)
            return _page_errors(response, 302)
    return None


def _page_errors(response, ok: int) -> dict[str, list[str]]:
    if response.status_code == ok:
        return {}
    assert response.status_code == 400, response.status_code
    form = next(
        value
        for context in response.context
        for value in context.flatten().values()
        if hasattr(value, "errors") and hasattr(value, "cleaned_data") and value.errors
    )
    return {
        (name if name in form.fields else "*"): list(messages)
        for name, messages in form.errors.items()
    }


def _admin(user, case: Case, task: Task | None) -> dict[str, list[str]]:
    request = RequestFactory().post("/admin/")
    request.user = user
    model_admin = TaskAdmin(Task, admin.site)
    form_class = model_admin.get_form(request, task, change=task is not None)
    base = task if task is not None else Task(kind=case.kind, state=Task.State.DRAFT)
    values = {**model_to_dict(base), **({} if task else _slugged("admin", {"title": "Made"}))}
    values = {**values, **_for("admin", case.settings)}
    data = _form_data({k: v for k, v in values.items() if k not in ("organizers", "annotators")})
    for name in ("submissions_open_at", "submissions_close_at", "reveal_at"):
        day, _, time = (data.pop(name, "") or " ").partition(" ")
        data[f"{name}_0"], data[f"{name}_1"] = day, time
    form = form_class(data, instance=task)
    if form.is_valid():
        return {}
    return {name: list(messages) for name, messages in form.errors.items()}


def _command(user, case: Case, task: Task | None) -> dict[str, list[str]] | None:
    """``manage.py create_task`` (None: changing a task, or a setting it does not take)."""
    settings = {"kind": case.kind, **case.settings}
    if task is not None or not set(settings) <= {"slug", *COMMAND_OPTIONS}:
        return None
    slug = _for("command", settings).pop("slug", "made-by-command")
    argv = [slug, "--title", "Made", "--organizer", user.get_username()]
    for name, value in settings.items():
        if name in COMMAND_OPTIONS:
            text = ",".join(value) if isinstance(value, list) else str(value)
            argv += [COMMAND_OPTIONS[name], text]
    try:
        call_command("create_task", *argv, stdout=io.StringIO())
    except CommandError as exc:
        refused = exc.__context__  # the service's error, which the command words for people
        if isinstance(refused, TaskSettingsError):
            return refused.field_errors
        option = next(n for n, o in COMMAND_OPTIONS.items() if f"argument {o}:" in str(exc))
        return {option: [str(exc)]}  # argparse's own check of a choice
    return {}


def _draft(kind: str, path: str) -> Task:
    return create_task(slug=f"draft-{path}", title="Draft", kind=kind)


@pytest.mark.parametrize("creating", [True, False], ids=["create", "change"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_path_accepts_and_refuses_the_same_settings(client, case, creating):
    if not (case.creating if creating else case.changing):
        pytest.skip("not sent this way")
    if not creating and "kind" in case.settings:
        pytest.skip("the kind is chosen when creating")
    user = organizer()
    outcomes: dict[str, dict[str, list[str]]] = {}
    for path in PATHS:
        task = None if creating else _draft(case.kind, path)
        if path == "page":
            result = _page(client, user, case, task)
        else:
            drive = {"service": _service, "api": _api, "admin": _admin, "command": _command}
            result = drive[path](user, case, task)
        if result is not None:
            outcomes[path] = result
    refused = {path: set(errors) for path, errors in outcomes.items()}
    expected = {path: set(case.refused) for path in outcomes}
    if "page" in outcomes:
        offered = _page_fields(creating)
        expected["page"] = {name if name in offered else "*" for name in case.refused}
    assert refused == expected, outcomes
    if case.own_words:
        return
    for path, errors in outcomes.items():
        for name, messages in outcomes["service"].items():
            shown = name if path != "page" or name in _page_fields(creating) else "*"
            for message in messages:
                assert _said([message]) in _said(errors[shown]), (path, name, errors, message)


def _page_fields(creating: bool) -> set[str]:
    if creating:
        return set(TaskCreateForm().fields)
    return {*SETTINGS_PAGE_FIELDS, *PHASE_FIELDS}
