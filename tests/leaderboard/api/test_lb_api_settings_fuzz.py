"""Hostile task settings: generated bodies for ``POST /api/tasks/``, ``PATCH /api/tasks/<slug>/``
and the organizer page's settings form.

Bodies mix valid values, values out of range, wrong types, huge integers and floats
(``1e400`` parses to infinity), unicode slugs, unknown fields, malicious display templates
(deep nesting, wrong shapes, huge) and design options. Every response is 2xx (the page: a
redirect) or a 400 naming the fields; never a 5xx. After every request the stored task still
satisfies what ``leaderboard.services.tasks`` promises (it passes the service's own validation,
its design can be built, its display template is valid, it renders as JSON), and a refused
request changed nothing.

Reproducible: ``derandomize=True``. Case counts:
``pytest --hypothesis-show-statistics tests/leaderboard/api/test_lb_api_settings_fuzz.py``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import caches
from django.forms.models import model_to_dict
from django.test import Client
from hypothesis import given
from hypothesis import strategies as st
from rest_framework.renderers import JSONRenderer

from leaderboard.api.task_serializers import TaskSerializer
from leaderboard.display_templates import validate_display_template
from leaderboard.forms import TASK_SETTING_FIELDS
from leaderboard.models import Task
from leaderboard.services.task_validation import check_task_settings
from leaderboard.services.tasks import create_task

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

# -- values ---------------------------------------------------------------------------------------
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.text(max_size=12),
    st.integers(-(2**70), 2**70),
    st.sampled_from([2**31, 2**63 - 1, 2**63, 10**40, -1, 0]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
UNIT = st.floats(-1, 2, allow_nan=False)
HOSTILE_TEMPLATES = [
    '{"layout": "table"}',
    '{"layout": "pair", "left": "a", "right": "b"}',
    '{"layout": "text", "field": "t", "highlight": "h"}',
    '{"layout": "pair"}',
    '{"layout": "text"}',
    '{"layout": "nope"}',
    "[1, 2]",
    "null",
    '"table"',
    '{"layout": "table", "fields": []}',
    '{"layout": "table", "labels": {"a": ""}}',
    '{"layout": "table", "fields": ["a", "a"]}',
    '{"layout": "pair", "titles": [1, 2]}',
    '{"layout": "table", "fields": "' + "x" * 20_000 + '"}',
    "[" * 3000 + "]" * 3000,
    '{"a": ' * 2000 + "1" + "}" * 2000,
    '{"layout": "table", "fields": [' + ", ".join(['"f"'] * 250) + "]}",
    '{"layout": "table", "labels": {"<script>": "</textarea><script>alert(1)</script>"}}',
    '{"layout": "table", "__proto__": {"x": 1}}',
    '{"layout": "table"} trailing',
    '{"layout": "text", "field": "\\u0000"}',
    '{"layout": "text", "field": "\\ud800"}',
]
TEMPLATES = st.one_of(
    st.just(""),
    st.text(max_size=40),
    st.sampled_from(HOSTILE_TEMPLATES),
    st.builds(
        lambda layout, extra: json.dumps({"layout": layout, **extra}),
        st.sampled_from(["pair", "table", "text"]),
        st.dictionaries(
            st.sampled_from(
                [
                    "left",
                    "right",
                    "field",
                    "fields",
                    "labels",
                    "titles",
                    "highlight",
                    "label",
                    "other",
                ]
            ),
            st.one_of(
                st.text(max_size=5),
                st.lists(st.text(max_size=4), max_size=3),
                st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2),
                st.integers(),
            ),
            max_size=4,
        ),
    ),
)
DESIGN_OPTIONS = st.one_of(
    st.just({}),
    st.dictionaries(
        st.sampled_from(
            [
                "max_strata",
                "min_stratum_size",
                "min_batch",
                "growth",
                "take_all",
                "interval",
                "max_draws",
                "budget",
                "seed",
                "target_half_width",
                "x",
            ]
        ),
        st.one_of(
            st.integers(-5, 100),
            st.floats(-2, 10, allow_nan=False),
            st.sampled_from([10**31, "wald", "wilson", "clopper-pearson", None, [], {}, True]),
        ),
        max_size=3,
    ),
    JUNK,
)
# In order, out of order, without an offset, out of range, not dates.
DATES = st.one_of(
    st.none(),
    st.datetimes(
        min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
    ).map(lambda moment: moment.isoformat()),
    st.sampled_from(
        [
            "2026-12-01T12:00:00Z",
            "2026-12-01T12:00:00+14:00",
            "2026-12-01 12:00",
            "0001-01-01T00:00:00-01:00",
            "9999-12-31T23:59:59-12:00",
            "2026-02-30T00:00:00Z",
            "tomorrow",
            "",
        ]
    ),
)
FIELDS = {
    "slug": st.one_of(
        st.from_regex(r"[a-z0-9][a-z0-9_-]{0,20}", fullmatch=True),
        st.text(max_size=90),
        st.just("x" * 81),
    ),
    "title": st.one_of(st.text(max_size=30), st.just("t" * 201)),
    "description": st.text(max_size=30),
    "question": st.one_of(st.text(max_size=30), st.just("")),
    "display_template": TEMPLATES,
    "state": st.sampled_from(["draft", "open", "closed", "archived", ""]),
    "target_half_width": st.one_of(UNIT, st.sampled_from([0.0005, 0.001, 0.5, 0.05])),
    "confidence": st.one_of(UNIT, st.sampled_from([0.5, 0.999, 0.9999, 0.95])),
    "label_budget": st.one_of(
        st.none(), st.integers(-3, 10**6), st.sampled_from([2**31, 2**63 - 1, 2**63, 10**30])
    ),
    "judgments_per_item": st.integers(-1, 12),
    "design": st.sampled_from(["default", "published", "nope", ""]),
    "design_options": DESIGN_OPTIONS,
    "max_runs_per_team": st.one_of(st.integers(-2, 10**4), st.just(2**40)),
    "max_runs_per_team_per_day": st.integers(-2, 100),
    "max_upload_bytes": st.one_of(st.integers(-1, 2**64), st.just(2**63 - 1)),
    "max_predictions_per_run": st.integers(-1, 2**33),
    **dict.fromkeys(("submissions_open_at", "submissions_close_at", "reveal_at"), DATES),
    "accept_late_runs": st.booleans(),
}
BODIES = st.fixed_dictionaries(
    {},
    optional={
        name: st.one_of(values, JUNK) if name != "slug" else values
        for name, values in FIELDS.items()
    },
).flatmap(
    lambda body: st.fixed_dictionaries(
        {**{k: st.just(v) for k, v in body.items()}},
        optional={
            "n_items": st.integers(),
            "seed": st.integers(),
            "bogus": JUNK,
            "engine_lock_token": st.text(max_size=5),
        },
    )
)
# Huge and non-finite floats cannot be generated as JSON numbers by json.dumps: raw bodies.
RAW = [
    b'{"target_half_width": 1e400}',
    b'{"confidence": -1e400}',
    b'{"design_options": {"growth": 1e400}}',
    b'{"design_options": {"max_strata": 1e400}}',
    b'{"design": "published", "design_options": {"max_draws": 1e400}}',
    b'{"design_options": {"take_all": NaN}}',
    b'{"label_budget": 1e400}',
    b'{"label_budget": 99999999999999999999999999999}',
    b'{"reveal_at": "9999-12-31T23:59:59-12:00"}',
    b'{"submissions_open_at": "0001-01-01T00:00:00+01:00"}',
    b'{"submissions_close_at": "2026-12-01T12:00:00+99:00"}',
    b'{"title": "\\ud800"}',
    b'{"question": "a\\u0000b"}',
    b'{"display_template": "\\udfff"}',
    b"[]",
    b"null",
    b'"text"',
    b"{",
    b"\xff\xfe",
]


def assert_invariants(task: Task) -> None:
    """What the service promises of every stored task."""
    task.refresh_from_db()
    check_task_settings(task, validate_unique=False)  # raises TaskSettingsError if not
    assert validate_display_template(task.display_template) == []
    assert isinstance(task.design_options, dict)
    JSONRenderer().render(TaskSerializer(task, context={"organizer": True}).data)


def snapshot(task: Task) -> dict:
    task.refresh_from_db()
    return model_to_dict(task, exclude=["organizers", "annotators"])


@pytest.fixture
def organizer(db):
    return get_user_model().objects.create_user("fuzz-org", is_staff=True, is_superuser=True)


@pytest.fixture
def task(organizer):
    return create_task(slug="fuzz", title="Fuzz", organizers=[organizer])


def check_response(response) -> dict | None:
    assert response.status_code < 500, response.content[:500]
    assert response.status_code in (200, 201, 400), (response.status_code, response.content)
    body = response.json()
    if response.status_code == 400:
        error = body["error"]
        assert error["code"] == "invalid" and error["message"]
        assert error["problems"], error
        return None
    return body


@given(body=st.one_of(BODIES, BODIES.map(lambda b: {"slug": "fuzz-new", "title": "N", **b})))
def test_task_create_is_201_or_400_and_stores_a_valid_task(api, organizer, body):
    caches["throttle"].clear()
    slugs = set(Task.objects.values_list("slug", flat=True))
    response = api(organizer).post("/api/tasks/", body, format="json")
    created = check_response(response)
    if created is None:
        assert set(Task.objects.values_list("slug", flat=True)) == slugs
        return
    task = Task.objects.get(slug=created["slug"])
    assert_invariants(task)
    # What was stored, in the API's own representation (dates as ISO 8601 text).
    stored = json.loads(
        JSONRenderer().render(TaskSerializer(task, context={"organizer": True}).data)
    )
    for name in set(body) & set(created) - {"slug"}:
        assert created[name] == stored[name]
    Task.objects.filter(pk=task.pk).delete()  # the next example may reuse the slug


@given(body=BODIES)
def test_task_patch_is_200_or_400_and_keeps_the_task_valid(api, organizer, task, body):
    caches["throttle"].clear()
    body.pop("slug", None)
    before = snapshot(task)
    response = api(organizer).patch(f"/api/tasks/{task.slug}/", body, format="json")
    if check_response(response) is None:
        assert snapshot(task) == before
    assert_invariants(task)


@pytest.mark.parametrize("method", ["post", "patch", "post-new"])
@pytest.mark.parametrize("raw", RAW)
def test_raw_json_bodies_are_refused_cleanly(api, organizer, task, raw, method):
    caches["throttle"].clear()
    before = snapshot(task)
    client = api(organizer)
    if method == "patch":
        response = client.patch(f"/api/tasks/{task.slug}/", raw, content_type="application/json")
    else:
        if method == "post-new" and raw.startswith(b"{") and raw.endswith(b"}") and len(raw) > 2:
            raw = b'{"slug": "fuzz-raw", "title": "R", ' + raw[1:]
        response = client.post("/api/tasks/", raw, content_type="application/json")
    assert response.status_code == 400, (raw, response.status_code, response.content[:300])
    assert response.json()["error"]["message"]
    assert snapshot(task) == before
    assert not Task.objects.filter(slug="fuzz-raw").exists()


@pytest.mark.parametrize("template", HOSTILE_TEMPLATES)
def test_hostile_display_templates_are_refused_or_stored_valid(api, organizer, task, template):
    before = snapshot(task)
    response = api(organizer).patch(
        f"/api/tasks/{task.slug}/", {"display_template": template}, format="json"
    )
    if check_response(response) is None:
        assert snapshot(task) == before
        assert "display_template" in response.json()["error"]["fields"]
    assert_invariants(task)
    client = Client()
    client.force_login(organizer)
    data = {
        k: "" if v is None else v
        for k, v in model_to_dict(task, fields=TASK_SETTING_FIELDS).items()
    }
    response = client.post(f"/tasks/{task.slug}/organize/", {**data, "display_template": template})
    assert response.status_code in (302, 400)
    assert_invariants(task)


# -- the organizer page's form --------------------------------------------------------------------
FORM_VALUES = st.one_of(
    st.text(max_size=15),
    st.sampled_from(
        [
            "",
            "1e400",
            "nan",
            "inf",
            "-0",
            "0.5",
            "0.999",
            "9" * 40,
            "2147483648",
            "9223372036854775808",
            "draft",
            "open",
            "closed",
            '{"layout": "table"}',
            "[" * 3000 + "]" * 3000,
            "1_000",
            "١٢",
            " 3 ",
            "2026-12-01 12:00",
            "2026-12-01T12:00:00+02:00",
            "0001-01-01 00:00",
            "9999-12-31 23:59",
            "2026-02-30 00:00",
        ]
    ),
)


@given(
    form=st.dictionaries(
        st.sampled_from((*TASK_SETTING_FIELDS, "design", "bogus")), FORM_VALUES, max_size=6
    )
)
def test_organizer_form_redirects_or_shows_field_errors(organizer, task, form):
    client = Client()
    client.force_login(organizer)
    data = {
        **{
            k: "" if v is None else v
            for k, v in model_to_dict(task, fields=TASK_SETTING_FIELDS).items()
        },
        **form,
    }
    before = snapshot(task)
    response = client.post(f"/tasks/{task.slug}/organize/", data)
    assert response.status_code in (302, 400), (response.status_code, form)
    if response.status_code == 400:
        page = response.content.decode()
        assert "field-error" in page or "error-box" in page, form
        assert snapshot(task) == before
    assert_invariants(task)
